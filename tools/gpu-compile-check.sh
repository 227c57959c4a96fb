#!/usr/bin/env bash
# Compile every kamp kernel, library, test and program with device code for a GPU backend,
# without a GPU.
#   tools/gpu-compile-check.sh hip    Debian's hipcc (ROCm 5.2), Kokkos HIP backend, arch VEGA908
#   tools/gpu-compile-check.sh cuda   nvcc from CUDA_HOME (default /usr/local/cuda), arch AMPERE80
# Prints each target it compiled. Nothing is run: the tests need the GPU (tools/gpu-check.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

backend=${1:-}
case "$backend" in
  hip)
    "$KAMP_REPO_DIR/tools/setup.sh"
    kamp_step "HIP toolchain (Debian's hipcc)"
    kamp_apt_install hipcc libamdhip64-dev
    # hipcc asks rocm_agent_enumerator for the GPU unless a target is given; there is no GPU here.
    export HCC_AMDGPU_TARGET=gfx908
    # hipcc picks NVIDIA's nvcc as its back end when it finds a CUDA toolkit; this check is for AMD.
    export HIP_PLATFORM=amd
    compiler=hipcc ;;
  cuda)
    "$KAMP_REPO_DIR/tools/setup.sh"
    [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] || kamp_die "no nvcc in ${CUDA_HOME:-/usr/local/cuda}/bin" \
      "install the CUDA toolkit or set CUDA_HOME; CUDA is not in Debian's main archive"
    export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
    compiler=nvcc_wrapper ;;
  *) kamp_die "usage: tools/gpu-compile-check.sh hip|cuda" "name the backend to compile for" ;;
esac

"$KAMP_REPO_DIR/tools/kokkos.sh" "$backend"
prefix=$(cat "$KAMP_CACHE_DIR/kokkos-$backend.prefix")
[ "$compiler" = nvcc_wrapper ] && compiler="$prefix/bin/nvcc_wrapper"

# Inside the clone: a CMake build tree belongs to one source tree, and CI clones anew.
build="$KAMP_REPO_DIR/build/checks/$backend"
mkdir -p "$(dirname "$build")"
kamp_step "compiling kamp for $backend in $build"
t0=$(date +%s)
# Nothing built here runs, so the host code is not optimized (-O0): the check is whether every
# kernel, test and app compiles for the backend, and that takes less time. Warnings that only
# optimization finds are the host builds' to catch. nvcc still optimizes device code.
cmake -S "$KAMP_REPO_DIR" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS_NONE=-O0 \
  -DCMAKE_CXX_COMPILER="$compiler" \
  "$(kamp_ccache_launcher_in "$KAMP_CACHE_DIR/ccache-gpu")" -DKokkos_ROOT="$prefix" -DKAMP_TEST_DISCOVERY=OFF >"$build.log" 2>&1 \
  || { tail -n 30 "$build.log"; kamp_die "configuring kamp for $backend failed (log: $build.log)" "read the log"; }
# What holds device code: the libraries, the tests and the programs with kernels of their own
# (kamp-bench, kamp-demo). The host-only programs (kamp-train, -generate, -inspect, -plan) and
# host-only tests (the exhaustive conversions, the app logic) compile in the host legs.
targets=$(ninja -C "$build" -t targets all | sed -n -E 's/^(kamp_model|kamp_c|kamp_fortran|kamp_test_[a-z0-9_]+|kamp_write_[a-z_]+|kamp-bench|kamp-demo): phony$/\1/p' \
  | grep -vxE 'kamp_test_numeric_exhaustive|kamp_test_app_logic')
# shellcheck disable=SC2086 # one word per target
cmake --build "$build" -j "$KAMP_JOBS" --target $targets >>"$build.log" 2>&1 \
  || { grep -E -A4 'error' "$build.log" | head -n 40; kamp_die "kamp does not compile for $backend (log: $build.log)" "fix the errors above: kernels must be portable"; }
echo "compiled for $backend in $(( $(date +%s) - t0 )) s: $(find "$build" -name '*.o' | wc -l) translation units, executables:"
find "$build" -type f -perm -u+x \( -name 'kamp-*' -o -name 'kamp_test_*' \) -printf '  %P\n' | sort
