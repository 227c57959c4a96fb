#ifndef KAMP_TESTS_MPI_WORLD_HPP
#define KAMP_TESTS_MPI_WORLD_HPP

#include <kamp/model/dist/communicator.hpp>

namespace kamp::test {

/// MPI_COMM_WORLD of the test program. A test asserts only on values every rank holds the same,
/// so that all ranks pass or fail each assertion together and none waits in a collective alone.
const dist::communicator& world();

}  // namespace kamp::test

#endif
