#ifndef KAMP_KERNELS_NN_DETAIL_HPP
#define KAMP_KERNELS_NN_DETAIL_HPP

#include <kamp/kernels/detail/chunked_range.hpp>
#include <kamp/numeric/accum_type.hpp>
#include <kamp/numeric/element_access.hpp>

#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>

namespace kamp::detail {

/// Rows of an (N, C) activation are the unit of work of the row-wise nn kernels: one work item
/// walks a row with plain loops, which vectorize on CPUs. On GPUs this is one thread per row;
/// the transformer has thousands of rows per step.
template <class ExecutionSpace>
auto row_policy(const ExecutionSpace& space, std::size_t rows) {
  return Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, std::int64_t(rows));
}

/// Column sums accumulate rows in ascending order (deterministic for any thread count); CPU
/// work items take a block of columns so the inner loop is contiguous, GPU threads one column.
template <class ExecutionSpace>
struct column_block {
  static constexpr int value = 16;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct column_block<Kokkos::Cuda> {
  static constexpr int value = 1;
};
#endif
#ifdef KOKKOS_ENABLE_HIP
template <>
struct column_block<Kokkos::Experimental::HIP> {
  static constexpr int value = 1;
};
#endif

// Math in the compute type: the C names with an f suffix exist on every backend for fp32, and
// the plain names for fp64, so overloads pick them without relying on <cmath>'s overload set.
KOKKOS_INLINE_FUNCTION float sqrt_of(float x) { return sqrtf(x); }
KOKKOS_INLINE_FUNCTION double sqrt_of(double x) { return sqrt(x); }
KOKKOS_INLINE_FUNCTION float exp_of(float x) { return expf(x); }
KOKKOS_INLINE_FUNCTION double exp_of(double x) { return exp(x); }
KOKKOS_INLINE_FUNCTION float log_of(float x) { return logf(x); }
KOKKOS_INLINE_FUNCTION double log_of(double x) { return log(x); }
KOKKOS_INLINE_FUNCTION float tanh_of(float x) { return tanhf(x); }
KOKKOS_INLINE_FUNCTION double tanh_of(double x) { return tanh(x); }

inline void check_extent(const char* api, const char* what, std::size_t got, std::size_t want) {
  if (got != want)
    throw std::invalid_argument(std::string(api) + ": " + what + " has extent " + std::to_string(got) + ", expected " +
                                std::to_string(want));
}

}  // namespace kamp::detail

#endif
