#ifndef KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP
#define KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP

#include <Kokkos_Core.hpp>

// Every execution space this Kokkos was built with, as a comma-separated type list for
// TEMPLATE_TEST_CASE (a macro rather than a std::tuple so that test names show the space).
#ifdef KOKKOS_ENABLE_CUDA
#define KAMP_TEST_SPACE_CUDA Kokkos::Cuda,
#else
#define KAMP_TEST_SPACE_CUDA
#endif
#ifdef KOKKOS_ENABLE_HIP
#define KAMP_TEST_SPACE_HIP Kokkos::Experimental::HIP,
#else
#define KAMP_TEST_SPACE_HIP
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#define KAMP_TEST_SPACE_OPENMP Kokkos::OpenMP,
#else
#define KAMP_TEST_SPACE_OPENMP
#endif
#ifdef KOKKOS_ENABLE_THREADS
#define KAMP_TEST_SPACE_THREADS Kokkos::Threads,
#else
#define KAMP_TEST_SPACE_THREADS
#endif

#define KAMP_TEST_EXECUTION_SPACES \
  KAMP_TEST_SPACE_CUDA KAMP_TEST_SPACE_HIP KAMP_TEST_SPACE_OPENMP KAMP_TEST_SPACE_THREADS Kokkos::Serial

#endif
