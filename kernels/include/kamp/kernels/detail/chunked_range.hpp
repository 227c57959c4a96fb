#ifndef KAMP_KERNELS_DETAIL_CHUNKED_RANGE_HPP
#define KAMP_KERNELS_DETAIL_CHUNKED_RANGE_HPP

#include <kamp/kernels/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

// Restrict-qualified local pointers let host compilers vectorize the inner loops of the
// bandwidth-bound kernels; every supported compiler (gcc, clang, nvcc, hipcc) spells it so.
#define KAMP_RESTRICT __restrict__

// Lets a host compiler vectorize an fp32 reduction loop (which reorders the additions into a
// few partial sums, as a GPU's tree reduction does too). Only where OpenMP is compiled in, and
// never in device code, where each work item handles one element anyway.
#define KAMP_DETAIL_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define KAMP_SIMD(...) KAMP_DETAIL_PRAGMA(omp simd __VA_ARGS__)
#else
#define KAMP_SIMD(...)
#endif

// Full unrolling of short fixed-trip loops (GEMM register blocks), so their accumulators
// live in registers.
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__clang__)
#define KAMP_UNROLL KAMP_DETAIL_PRAGMA(unroll)
#elif defined(__GNUC__)
#define KAMP_UNROLL KAMP_DETAIL_PRAGMA(GCC unroll 16)
#else
#define KAMP_UNROLL
#endif

namespace kamp::detail {

/// Elements one work item processes. GPUs want one element per thread (coalesced loads); CPU
/// threads get a contiguous chunk, which becomes a vectorizable inner loop.
template <class ExecutionSpace>
struct elements_per_work_item {
  static constexpr std::size_t value = 2048;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct elements_per_work_item<Kokkos::Cuda> {
  static constexpr std::size_t value = 1;
};
#endif
#ifdef KOKKOS_ENABLE_HIP
template <>
struct elements_per_work_item<hip_space> {
  static constexpr std::size_t value = 1;
};
#endif

template <class ExecutionSpace>
using work_item_policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;

template <class ExecutionSpace>
std::int64_t work_items(std::size_t n) {
  constexpr std::size_t c = elements_per_work_item<ExecutionSpace>::value;
  return static_cast<std::int64_t>((n + c - 1) / c);
}

/// One work item on the device: for the tiny state updates (loss scaler, step coefficients)
/// that must stay on the device so the host never waits.
template <class ExecutionSpace, class Body>
void single_task(const char* label, const ExecutionSpace& space, const Body& body) {
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ExecutionSpace>(space, 0, 1), KOKKOS_LAMBDA(int) { body(); });
}

}  // namespace kamp::detail

#endif
