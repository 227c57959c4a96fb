// Catch2 entry point for tests run under mpirun: MPI and Kokkos stay initialized while the
// tests run, and the program fails when any rank failed.
#define CATCH_CONFIG_RUNNER
#include "../support/catch.hpp"

#include "world.hpp"

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <optional>

namespace {
std::optional<kamp::dist::communicator> the_world;
}

const kamp::dist::communicator& kamp::test::world() { return *the_world; }

int main(int argc, char* argv[]) {
  MPI_Init(&argc, &argv);
  int failed = 0;
  {
    Catch::Session session;
    failed = session.applyCommandLine(argc, argv);
    if (failed == 0) {
      Kokkos::ScopeGuard kokkos(argc, argv);
      the_world.emplace(MPI_COMM_WORLD);
      failed = session.run();
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
