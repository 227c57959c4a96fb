#ifndef KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP
#define KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP

#include <kamp/kernels/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

// Every execution space this Kokkos was built with, as a comma-separated type list for
// TEMPLATE_TEST_CASE (a macro rather than a std::tuple so that test names show the space).
// Each entry but the last ends in a comma; the last is the first enabled of Serial, OpenMP,
// Threads (Debian's Kokkos 5 has no Serial).
#ifdef KOKKOS_ENABLE_CUDA
#define KAMP_TEST_SPACE_CUDA Kokkos::Cuda,
#else
#define KAMP_TEST_SPACE_CUDA
#endif
#ifdef KOKKOS_ENABLE_HIP
#define KAMP_TEST_SPACE_HIP kamp::detail::hip_space,
#else
#define KAMP_TEST_SPACE_HIP
#endif
#if defined(KOKKOS_ENABLE_THREADS) && (defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP))
#define KAMP_TEST_SPACE_THREADS Kokkos::Threads,
#else
#define KAMP_TEST_SPACE_THREADS
#endif
#if defined(KOKKOS_ENABLE_OPENMP) && defined(KOKKOS_ENABLE_SERIAL)
#define KAMP_TEST_SPACE_OPENMP Kokkos::OpenMP,
#else
#define KAMP_TEST_SPACE_OPENMP
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
#define KAMP_TEST_SPACE_LAST Kokkos::Serial
#elif defined(KOKKOS_ENABLE_OPENMP)
#define KAMP_TEST_SPACE_LAST Kokkos::OpenMP
#else
#define KAMP_TEST_SPACE_LAST Kokkos::Threads
#endif

#define KAMP_TEST_EXECUTION_SPACES \
  KAMP_TEST_SPACE_CUDA KAMP_TEST_SPACE_HIP KAMP_TEST_SPACE_THREADS KAMP_TEST_SPACE_OPENMP KAMP_TEST_SPACE_LAST

#endif
