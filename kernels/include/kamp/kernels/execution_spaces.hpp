#ifndef KAMP_KERNELS_EXECUTION_SPACES_HPP
#define KAMP_KERNELS_EXECUTION_SPACES_HPP

#include <kamp/kernels/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

// The execution spaces this Kokkos was built with: the one list that the compiled model
// instantiates for and the tests run on. KAMP_DETAIL_IF_<SPACE>(x) expands to x when Kokkos has the
// space, so both forms below are built from the same five facts.
#ifdef KOKKOS_ENABLE_CUDA
#define KAMP_DETAIL_IF_CUDA(x) x
#else
#define KAMP_DETAIL_IF_CUDA(x)
#endif
#ifdef KOKKOS_ENABLE_HIP
#define KAMP_DETAIL_IF_HIP(x) x
#else
#define KAMP_DETAIL_IF_HIP(x)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#define KAMP_DETAIL_IF_OPENMP(x) x
#else
#define KAMP_DETAIL_IF_OPENMP(x)
#endif
#ifdef KOKKOS_ENABLE_THREADS
#define KAMP_DETAIL_IF_THREADS(x) x
#else
#define KAMP_DETAIL_IF_THREADS(x)
#endif
#ifdef KOKKOS_ENABLE_SERIAL
#define KAMP_DETAIL_IF_SERIAL(x) x
#else
#define KAMP_DETAIL_IF_SERIAL(x)
#endif

/// F(Space) for every enabled execution space (explicit instantiations).
#define KAMP_FOR_EACH_EXECUTION_SPACE(F)         \
  KAMP_DETAIL_IF_CUDA(F(Kokkos::Cuda))           \
  KAMP_DETAIL_IF_HIP(F(kamp::detail::hip_space)) \
  KAMP_DETAIL_IF_OPENMP(F(Kokkos::OpenMP))       \
  KAMP_DETAIL_IF_THREADS(F(Kokkos::Threads)) KAMP_DETAIL_IF_SERIAL(F(Kokkos::Serial))

/// The same spaces as a comma-separated type list (Catch2's TEMPLATE_TEST_CASE, whose test names
/// then show the space). A host space always exists and ends the list without a comma: Serial,
/// or OpenMP, or Threads (Debian's Kokkos 5 has no Serial); each other space comes before it.
#define KAMP_DETAIL_SPACE_THEN_COMMA(Space) Space,
#if defined(KOKKOS_ENABLE_SERIAL)
#define KAMP_DETAIL_LAST_HOST_SPACE Kokkos::Serial
#define KAMP_DETAIL_OTHER_HOST_SPACES(F) \
  KAMP_DETAIL_IF_OPENMP(F(Kokkos::OpenMP)) KAMP_DETAIL_IF_THREADS(F(Kokkos::Threads))
#elif defined(KOKKOS_ENABLE_OPENMP)
#define KAMP_DETAIL_LAST_HOST_SPACE Kokkos::OpenMP
#define KAMP_DETAIL_OTHER_HOST_SPACES(F) KAMP_DETAIL_IF_THREADS(F(Kokkos::Threads))
#else
#define KAMP_DETAIL_LAST_HOST_SPACE Kokkos::Threads
#define KAMP_DETAIL_OTHER_HOST_SPACES(F)
#endif
#define KAMP_EXECUTION_SPACES                                               \
  KAMP_DETAIL_IF_CUDA(KAMP_DETAIL_SPACE_THEN_COMMA(Kokkos::Cuda))           \
  KAMP_DETAIL_IF_HIP(KAMP_DETAIL_SPACE_THEN_COMMA(kamp::detail::hip_space)) \
  KAMP_DETAIL_OTHER_HOST_SPACES(KAMP_DETAIL_SPACE_THEN_COMMA) KAMP_DETAIL_LAST_HOST_SPACE

#endif
