#include <kamp/model/dist/communicator.hpp>

#include <cstdlib>
#include <cstring>

namespace kamp::dist {

bool environment::launched() {
  if (const char* force = std::getenv("KAMP_MPI")) return std::strcmp(force, "0") != 0;
  // Open MPI's mpirun, PMIx and PMI (srun, MPICH's Hydra, Intel MPI), MPICH's own.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

}  // namespace kamp::dist
