#ifndef KAMP_MODEL_DIST_ENVIRONMENT_HPP
#define KAMP_MODEL_DIST_ENVIRONMENT_HPP

#include <kamp/model/dist/communicator.hpp>

namespace kamp::dist {

/// \brief MPI for the lifetime of a program started by an MPI launcher (mpirun, mpiexec, srun):
/// initialized on construction when `launched()`, finalized on destruction. A program started
/// without a launcher does not touch MPI and gets the one-process communicator. A kamp built
/// without MPI refuses to start under a launcher (its ranks would each train alone).
class environment {
 public:
  environment(int& argc, char**& argv);
  ~environment();
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

  /// MPI_COMM_WORLD when MPI was initialized, else the one-process communicator.
  const communicator& world() const { return world_; }
  /// True when the environment names an MPI launcher (Open MPI, PMIx, PMI, Slurm's srun with a
  /// PMI plugin, MPICH/Hydra) or KAMP_MPI=1 asks for MPI; KAMP_MPI=0 forbids it.
  static bool launched();

 private:
  bool initialized_ = false;
  communicator world_;
};

}  // namespace kamp::dist

#endif
