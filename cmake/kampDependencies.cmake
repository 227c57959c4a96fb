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
# The C++ standard is Kokkos' (C++17 for 3.4 and 4.x, C++20 for 5.x): kamp asks for C++17 at least
# and Kokkos::kokkos carries its own requirement to everything that links it.
foreach(target Kokkos::kokkos Kokkos::kokkoscore)
  if(TARGET ${target} AND NOT kamp_kokkos_std)
    get_target_property(kamp_kokkos_features ${target} INTERFACE_COMPILE_FEATURES)
    string(REGEX MATCH "cxx_std_[0-9]+" kamp_kokkos_std "${kamp_kokkos_features}")
  endif()
endforeach()
# kamp passes no arch flags of its own; they come from Kokkos' host arch. A distribution's Kokkos
# (Debian's libkokkos-dev) has none, so its users get baseline x86-64 (SSE2) code unless they ask.
set(kamp_host_archs ${Kokkos_ARCH})
list(FILTER kamp_host_archs EXCLUDE REGEX "^(KEPLER|MAXWELL|PASCAL|VOLTA|TURING|AMPERE|ADA|HOPPER|BLACKWELL|VEGA|NAVI|AMD_GFX|INTEL_GEN|INTEL_DG|INTEL_PVC|INTEL_XE)")
if(NOT kamp_host_archs AND NOT CMAKE_CXX_FLAGS MATCHES "-march=|-mcpu=|-xHost")
  message(WARNING "kamp: the Kokkos in ${Kokkos_DIR} was built without a host arch (Kokkos_ARCH: '${Kokkos_ARCH}'), "
                  "so kamp's CPU code compiles for the baseline instruction set (SSE2 on x86-64): the portable "
                  "GEMM ran at 0.3x OpenBLAS sgemm there instead of 0.6-0.85x, and the 16-bit kernels slow "
                  "down too. Configure with -DCMAKE_CXX_FLAGS=-march=native (for the CPU the jobs run on), or "
                  "use a Kokkos built with -DKokkos_ARCH_<your CPU>=ON.")
endif()
message(STATUS "kamp: Kokkos ${Kokkos_VERSION} from ${Kokkos_DIR}, backends: ${KAMP_KOKKOS_BACKENDS}, "
               "C++ standard: ${kamp_kokkos_std}")

# Optional dependencies: kamp_optional_dependency(NAME PACKAGE PURPOSE [find_package args]).
include(kampOptionalDependency)

# MPI and HDF5 (the parallel library with MPI, else a fallback without MPI).
include(kampHdf5)

# yaml-cpp reads session configs: kamp's keys and TorchFort's YAML (JSON is read as YAML too).
find_package(yaml-cpp QUIET)
if(NOT yaml-cpp_FOUND)
  message(FATAL_ERROR "kamp needs yaml-cpp for session configs: run tools/setup.sh, or apt-get install "
                      "libyaml-cpp-dev, or point yaml-cpp_DIR at an installation")
endif()
# yaml-cpp 0.7 (Debian 12) names its target yaml-cpp, 0.8 yaml-cpp::yaml-cpp.
if(TARGET yaml-cpp::yaml-cpp)
  set(KAMP_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(KAMP_YAML_TARGET yaml-cpp)
endif()

# Vendor GEMM paths ("TPLs"); without them the portable kernel runs.
# Kokkos Kernels usually sits in Kokkos' prefix; look there too (config mode).
get_filename_component(kamp_kokkos_prefix "${Kokkos_DIR}/../../.." ABSOLUTE)
kamp_optional_dependency(KOKKOSKERNELS KokkosKernels "GEMM" PATHS ${kamp_kokkos_prefix})
# A standalone Kokkos Kernels exports Kokkos::kokkoskernels; Trilinos' (Debian's
# libtrilinos-kokkos-kernels-dev) exports KokkosKernels::all_libs.
if(KAMP_HAVE_KOKKOSKERNELS)
  foreach(target Kokkos::kokkoskernels KokkosKernels::all_libs)
    if(TARGET ${target} AND NOT KAMP_KOKKOSKERNELS_TARGET)
      set(KAMP_KOKKOSKERNELS_TARGET ${target})
    endif()
  endforeach()
  if(NOT KAMP_KOKKOSKERNELS_TARGET)
    message(FATAL_ERROR "kamp: Kokkos Kernels in ${KokkosKernels_DIR} defines neither Kokkos::kokkoskernels nor "
                        "KokkosKernels::all_libs. Point KokkosKernels_ROOT at another installation, or configure "
                        "with -DKAMP_ENABLE_KOKKOSKERNELS=OFF.")
  endif()
endif()
kamp_optional_dependency(DNNL dnnl "GEMM")
# tpls/gemm_dnnl.hpp speaks oneDNN 2 and 3 (their APIs differ in three places); others are refused here.
if(KAMP_HAVE_DNNL AND NOT dnnl_VERSION MATCHES "^[23]\\.")
  message(FATAL_ERROR "kamp's oneDNN path supports oneDNN 2.x and 3.x, found ${dnnl_VERSION} in ${dnnl_DIR}. "
                      "Point dnnl_ROOT at a 2.x or 3.x installation, or configure with -DKAMP_ENABLE_DNNL=OFF.")
endif()
set(KAMP_HAVE_CUBLAS OFF)
if(Kokkos_ENABLE_CUDA)
  kamp_optional_dependency(CUBLAS CUDAToolkit "GEMM")
endif()
