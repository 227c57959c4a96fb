#include <kamp/model/dist/environment.hpp>

#ifdef KAMP_HAVE_MPI
#include "dist/mpi_check.hpp"
#endif

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kamp::dist {

bool environment::launched() {
  if (const char* force = std::getenv("KAMP_MPI")) return std::strcmp(force, "0") != 0;
  // Open MPI's mpirun, PMIx and PMI (srun, MPICH's Hydra, Intel MPI), MPICH's own.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

#ifdef KAMP_HAVE_MPI
environment::environment(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized || !launched()) {
    if (initialized) world_ = communicator(MPI_COMM_WORLD);
    return;
  }
  int provided = 0;
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  initialized_ = true;
  // Kokkos' OpenMP threads run between MPI calls, which only the main thread makes.
  if (provided < MPI_THREAD_FUNNELED)
    throw std::runtime_error(
        "kamp::dist: the MPI library does not support MPI_THREAD_FUNNELED, which kamp needs "
        "(its OpenMP threads run while the main thread calls MPI)");
  // Errors come back as codes and become exceptions with MPI's message.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  world_ = communicator(MPI_COMM_WORLD);
}

environment::~environment() {
  if (initialized_) MPI_Finalize();
}
#else
environment::environment(int&, char**&) {
  if (launched())
    throw std::runtime_error(
        "this kamp was built without MPI but an MPI launcher started it: every rank would "
        "train alone. Rebuild kamp with MPI (Debian: libopenmpi-dev), or run without the "
        "launcher (KAMP_MPI=0 runs each process alone on purpose)");
}
environment::~environment() = default;
#endif

}  // namespace kamp::dist
