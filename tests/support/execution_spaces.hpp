#ifndef KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP
#define KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP

#include <Kokkos_Core.hpp>

#include <tuple>

namespace kamp::test {

// Every execution space this Kokkos was built with; tests are TEMPLATE_LIST_TEST_CASEs over it.
using execution_spaces = std::tuple<
#ifdef KOKKOS_ENABLE_CUDA
    Kokkos::Cuda,
#endif
#ifdef KOKKOS_ENABLE_HIP
    Kokkos::Experimental::HIP,
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    Kokkos::OpenMP,
#endif
#ifdef KOKKOS_ENABLE_THREADS
    Kokkos::Threads,
#endif
    Kokkos::Serial>;

}  // namespace kamp::test

#endif
