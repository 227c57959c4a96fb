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
