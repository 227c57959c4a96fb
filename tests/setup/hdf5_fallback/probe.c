/* Links the HDF5 (and MPI) that kamp's configure chose and says which HDF5 it runs with. */
#include <hdf5.h>
#include <stdio.h>
#ifdef KAMP_HAVE_PARALLEL_HDF5
#include <mpi.h>
#endif

int main(void) {
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0) return 1;
#ifdef KAMP_HAVE_PARALLEL_HDF5
  /* Parallel HDF5 only: the MPI-IO file driver kamp's ranks write checkpoints with (linked, not
     called: that would need MPI_Init, and Open MPI refuses root without mpirun's flag). */
  herr_t (*volatile set_mpio)(hid_t, MPI_Comm, MPI_Info) = H5Pset_fapl_mpio;
  if (!set_mpio) return 1;
  printf("hdf5_probe: HDF5 %u.%u.%u, parallel\n", major, minor, release);
#else
  printf("hdf5_probe: HDF5 %u.%u.%u, serial\n", major, minor, release);
#endif
  return 0;
}
