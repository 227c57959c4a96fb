#ifndef KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP
#define KAMP_TESTS_SUPPORT_EXECUTION_SPACES_HPP

#include <kamp/kernels/execution_spaces.hpp>

// Every execution space this Kokkos was built with, for TEMPLATE_TEST_CASE: the list the
// compiled model is instantiated for (kamp/kernels/execution_spaces.hpp).
#define KAMP_TEST_EXECUTION_SPACES KAMP_EXECUTION_SPACES

#endif
