# Kokkos: any version from 3.4 on. Kokkos' own version file only accepts its major version,
# so the lower bound is checked here instead of in find_package.
find_package(Kokkos REQUIRED)
if(Kokkos_VERSION VERSION_LESS 3.4)
  message(FATAL_ERROR "kamp needs Kokkos 3.4 or newer, found ${Kokkos_VERSION} in ${Kokkos_DIR}. "
                      "Point Kokkos_ROOT at a newer installation, or run tools/setup.sh to build 3.4.01.")
endif()
foreach(backend SERIAL OPENMP THREADS CUDA HIP SYCL)
  if(Kokkos_ENABLE_${backend})
    list(APPEND KAMP_KOKKOS_BACKENDS ${backend})
  endif()
endforeach()
message(STATUS "kamp: Kokkos ${Kokkos_VERSION} from ${Kokkos_DIR}, backends: ${KAMP_KOKKOS_BACKENDS}")

# Checkpoints are HDF5 files (the serial library: one writer, see docs/checkpoint.md).
find_package(HDF5 REQUIRED COMPONENTS C)
if(HDF5_VERSION VERSION_LESS 1.10)
  message(FATAL_ERROR "kamp's checkpoints need HDF5 1.10 or newer, found ${HDF5_VERSION}. "
                      "Point HDF5_ROOT at a newer installation (Debian: libhdf5-dev).")
endif()
message(STATUS "kamp: HDF5 ${HDF5_VERSION}: ${HDF5_INCLUDE_DIRS}")

# Optional dependencies, each found automatically and switchable off. AUTO: use when found;
# ON: required; OFF: never.
function(kamp_optional_dependency name package purpose)
  set(KAMP_ENABLE_${name} AUTO CACHE STRING "Use ${package} for ${purpose} (AUTO, ON, OFF)")
  set_property(CACHE KAMP_ENABLE_${name} PROPERTY STRINGS AUTO ON OFF)
  set(found OFF)
  if(NOT KAMP_ENABLE_${name} STREQUAL "OFF")
    if(KAMP_ENABLE_${name} STREQUAL "ON")
      find_package(${package} ${ARGN} REQUIRED)
    else()
      find_package(${package} ${ARGN} QUIET)
    endif()
    set(found ${${package}_FOUND})
  endif()
  set(KAMP_HAVE_${name} ${found} PARENT_SCOPE)
  message(STATUS "kamp: ${package} for ${purpose}: ${found}")
endfunction()

# Data-parallel training (kamp::dist) uses MPI's C API; without MPI it is one process only.
kamp_optional_dependency(MPI MPI "data parallelism" COMPONENTS C)
if(NOT KAMP_HAVE_MPI AND NOT KAMP_ENABLE_MPI STREQUAL "OFF")
  message(WARNING "kamp: no MPI found: kamp::dist runs one process only and the mpi tests are not built. "
                  "Install one (Debian: libopenmpi-dev openmpi-bin) or point MPI_C_COMPILER at its mpicc.")
endif()

# Vendor GEMM paths ("TPLs"); without them the portable kernel runs.
# Kokkos Kernels usually sits in Kokkos' prefix; look there too (config mode).
get_filename_component(kamp_kokkos_prefix "${Kokkos_DIR}/../../.." ABSOLUTE)
kamp_optional_dependency(KOKKOSKERNELS KokkosKernels "GEMM" PATHS ${kamp_kokkos_prefix})
kamp_optional_dependency(DNNL dnnl "GEMM")
set(KAMP_HAVE_CUBLAS OFF)
if(Kokkos_ENABLE_CUDA)
  kamp_optional_dependency(CUBLAS CUDAToolkit "GEMM")
endif()
