#ifndef KAMP_KERNELS_NN_DETAIL_NN_COMMON_HPP
#define KAMP_KERNELS_NN_DETAIL_NN_COMMON_HPP

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/kernels/detail/kokkos_compat.hpp>
#include <kamp/kernels/detail/view_access.hpp>
#include <kamp/numeric/accum_type.hpp>
#include <kamp/numeric/detail/bit_cast.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>

namespace kamp::detail {

/// Work items of the column reductions (bias and LayerNorm parameter gradients): blocks of
/// columns, each summing all rows in order. The row-wise kernels use rows.hpp instead.
template <class ExecutionSpace>
auto row_policy(const ExecutionSpace& space, std::size_t rows) {
  return Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, std::int64_t(rows));
}

/// Column sums accumulate rows in ascending order (deterministic for any thread count); CPU
/// work items take a block of columns so the inner loop is contiguous, GPU threads one column.
/// `wide`: the block a CPU walks rows with when the columns still give every thread one (a row
/// segment of 64 fp32 fills a cache line per row four times over instead of once: the column
/// sums of a 4096 x 3072 fp32 matrix took 2.4 ms instead of 6.1 on one Zen 4 core).
template <class ExecutionSpace>
struct column_block {
  static constexpr int value = 16;
  static constexpr int wide = 64;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct column_block<Kokkos::Cuda> {
  static constexpr int value = 1;
  static constexpr int wide = 1;
};
#endif
#ifdef KOKKOS_ENABLE_HIP
template <>
struct column_block<hip_space> {
  static constexpr int value = 1;
  static constexpr int wide = 1;
};
#endif

// Math in the compute type: the C names with an f suffix exist on every backend for fp32, and
// the plain names for fp64, so overloads pick them without relying on <cmath>'s overload set.
KOKKOS_INLINE_FUNCTION float sqrt_of(float x) { return sqrtf(x); }
KOKKOS_INLINE_FUNCTION double sqrt_of(double x) { return sqrt(x); }
KOKKOS_INLINE_FUNCTION float log_of(float x) { return logf(x); }
KOKKOS_INLINE_FUNCTION double log_of(double x) { return log(x); }
KOKKOS_INLINE_FUNCTION double tanh_of(double x) { return tanh(x); }

/// e^x for fp32 without a library call, so loops that use it vectorize on CPUs (libm's expf and
/// tanhf are scalar calls there and dominated the GELU kernels): x = n ln2 + r with |r| <= ln2/2,
/// e^r by its degree-6 Taylor polynomial (relative error < 2e-7 on that interval), 2^n built in
/// the exponent bits. Inputs are clamped to [-87, 88], where e^x is a normal float.
KOKKOS_INLINE_FUNCTION float exp_polynomial(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  // n = round(x / ln2) by adding 1.5·2^23, which leaves n in the low mantissa bits (no floorf
  // or float-to-int conversion, which keep gcc from vectorizing).
  constexpr float shifter = 12582912.0f;
  const float t = x * 1.44269504f + shifter;
  const float n = t - shifter;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln2 split in two for an exact r
  const float p =
      1.0f +
      r * (1.0f + r * (0.5f + r * (1.66666672e-1f + r * (4.16666679e-2f + r * (8.33333377e-3f + r * 1.38888892e-3f)))));
  return p * bits_to_float((float_to_bits(t) - 0x4b400000u + 127u) << 23);
}

/// e^x in the compute type: the polynomial above for fp32 (softmax and cross-entropy loops
/// vectorize with it), libm's exp for fp64.
KOKKOS_INLINE_FUNCTION float exp_of(float x) { return exp_polynomial(x); }
KOKKOS_INLINE_FUNCTION double exp_of(double x) { return exp(x); }

/// tanh for fp32 as 1 − 2/(e^{2x} + 1): absolute error below 5e-7 (what GELU's 0.5·x·(1 + tanh)
/// and its derivative need; relative accuracy near 0 is not), and it vectorizes.
KOKKOS_INLINE_FUNCTION float tanh_of(float x) { return 1.0f - 2.0f / (exp_polynomial(2.0f * x) + 1.0f); }

inline void check_extent(const char* api, const char* what, std::size_t got, std::size_t want) {
  if (got != want)
    throw std::invalid_argument(std::string(api) + ": " + what + " has extent " + std::to_string(got) + ", expected " +
                                std::to_string(want));
}

}  // namespace kamp::detail

#endif
