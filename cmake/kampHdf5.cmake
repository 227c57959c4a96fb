# MPI and HDF5, chosen together: with MPI, kamp needs the parallel HDF5. Included by
# kampDependencies.cmake, and alone by tests/setup/hdf5_fallback (tools/check-hdf5-fallback.sh),
# after kampOptionalDependency.cmake. Needs the C language enabled. Sets KAMP_HAVE_MPI,
# KAMP_HAVE_PARALLEL_HDF5 and FindHDF5's results (hdf5::hdf5, HDF5_VERSION, HDF5_IS_PARALLEL).

# Data-parallel training (kamp::dist) uses MPI's C API; without MPI it is one process only.
kamp_optional_dependency(MPI MPI "data parallelism" COMPONENTS C)
if(NOT KAMP_HAVE_MPI AND NOT KAMP_ENABLE_MPI STREQUAL "OFF")
  message(WARNING "kamp: no MPI found: kamp::dist runs one process only and the mpi tests are not built. "
                  "Install one (Debian: libopenmpi-dev openmpi-bin) or point MPI_C_COMPILER at its mpicc.")
endif()

# Checkpoints are HDF5 files. With MPI, kamp takes the parallel library (Debian's
# libhdf5-openmpi-dev): every rank writes its slices of a checkpoint into the one file
# (docs/checkpoint.md). Without MPI one process writes, with either library.
if(KAMP_HAVE_MPI)
  set(HDF5_PREFER_PARALLEL TRUE)
  if(DEFINED HDF5_DIR OR DEFINED HDF5_ROOT OR DEFINED ENV{HDF5_ROOT})
    # The user's HDF5 (a cluster's module), or the one an earlier configure of this build found.
  elseif(DEFINED HDF5_C_COMPILER_EXECUTABLE)
    # That compiler wrapper (h5pcc), not package files that may be another flavour's.
    set(HDF5_NO_FIND_PACKAGE_CONFIG_FILE TRUE)
  else()
    # Where each flavour has its own package file (Debian's HDF5 2), FindHDF5 would take the
    # serial one it finds first: name the parallel one. Elsewhere, the compiler wrapper h5pcc
    # (Debian's HDF5 1.10). With neither, no parallel HDF5 is installed: HDF5 is found as without
    # MPI and the check below falls back. (FindHDF5's wrapper parsing must not meet Debian's HDF5 2
    # serial h5cc: it names libhdf5_serial, and FindHDF5 stops, "a different variable was set".)
    find_path(KAMP_PARALLEL_HDF5_DIR hdf5-config.cmake
              PATH_SUFFIXES lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/hdf5_openmpi
                            lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/hdf5_mpich lib/cmake/hdf5_openmpi
                            lib/cmake/hdf5_mpich)
    if(KAMP_PARALLEL_HDF5_DIR)
      set(HDF5_DIR "${KAMP_PARALLEL_HDF5_DIR}")
    else()
      find_program(KAMP_PARALLEL_HDF5_WRAPPER h5pcc)
      if(KAMP_PARALLEL_HDF5_WRAPPER)
        set(HDF5_NO_FIND_PACKAGE_CONFIG_FILE TRUE)
      endif()
    endif()
  endif()
endif()
find_package(HDF5 COMPONENTS C)
if(NOT HDF5_FOUND)
  message(FATAL_ERROR "kamp: no HDF5 found: kamp's checkpoints are HDF5 files. Install one (Debian: libhdf5-dev; "
                      "with MPI libhdf5-openmpi-dev) or point HDF5_ROOT at an installation.")
endif()
if(HDF5_VERSION VERSION_LESS 1.10)
  message(FATAL_ERROR "kamp's checkpoints need HDF5 1.10 or newer, found ${HDF5_VERSION}. "
                      "Point HDF5_ROOT at a newer installation (Debian: libhdf5-dev).")
endif()
set(KAMP_HAVE_PARALLEL_HDF5 OFF)
if(KAMP_HAVE_MPI)
  # Ranks write their shards of a checkpoint into one file; no rank holds the whole state.
  if(NOT HDF5_IS_PARALLEL)
    string(CONCAT kamp_serial_hdf5 "the HDF5 found (${HDF5_INCLUDE_DIRS}) is serial, and kamp's ranks write their "
           "checkpoint shards with parallel HDF5. Install one (Debian: libhdf5-openmpi-dev; a cluster's hdf5 MPI "
           "module) or point HDF5_C_COMPILER_EXECUTABLE at its h5pcc, in a new build directory")
    if(KAMP_ENABLE_MPI STREQUAL "ON")
      message(FATAL_ERROR "kamp: KAMP_ENABLE_MPI=ON, but ${kamp_serial_hdf5}; or build with -DKAMP_ENABLE_MPI=OFF.")
    endif()
    message(WARNING "kamp: MPI found, but ${kamp_serial_hdf5}. Building without MPI (one process only).")
    set(KAMP_HAVE_MPI OFF)
  endif()
endif()
if(KAMP_HAVE_MPI)
  if(HDF5_VERSION VERSION_LESS 1.10.2)
    message(FATAL_ERROR "kamp: parallel HDF5 ${HDF5_VERSION} cannot write checksummed (filtered) datasets in "
                        "parallel; that needs 1.10.2 or newer.")
  endif()
  set(KAMP_HAVE_PARALLEL_HDF5 ON)
endif()
message(STATUS "kamp: HDF5 ${HDF5_VERSION} (parallel: ${KAMP_HAVE_PARALLEL_HDF5}): ${HDF5_INCLUDE_DIRS}")
