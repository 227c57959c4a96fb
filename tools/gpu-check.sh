#!/usr/bin/env bash
# Build and test kamp on an NVIDIA GPU machine that cannot download anything.
#   tools/gpu-check.sh --prepare   (here, with network) copy what the GPU machine lacks into ./carry:
#                                  the extracted Kokkos 3.4.01 sources, the header-only libraries the
#                                  tests and benchmarks use (Catch2, CLI11, nlohmann-json) and Debian's
#                                  serial HDF5 (headers, libhdf5 and its szip/aec libraries)
#   tools/gpu-check.sh             (on the GPU machine) build Kokkos for CUDA (+OpenMP), build kamp,
#                                  run the whole test suite, the main job and kamp-bench on the GPU, and
#                                  print what one training step launches, fences and copies
# The GPU machine needs nvcc (CUDA_HOME, default /usr/local/cuda), CMake >= 3.19, ninja and a C++17 host compiler.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry="$here/carry"

if [ "${1:-}" = --prepare ]; then
  source "$here/tools/common.sh"
  "$here/tools/setup.sh"
  rm -rf "$carry" && mkdir -p "$carry/cache/src" "$carry/deps/include" "$carry/deps/lib/cmake" "$carry/deps/share/cmake"
  cp -r "$KAMP_CACHE_DIR/src/kokkos-$KAMP_KOKKOS_VERSION" "$carry/cache/src/"
  cp -r /usr/include/catch2 /usr/include/CLI /usr/include/nlohmann "$carry/deps/include/"
  cp -r /usr/lib/cmake/Catch2 "$carry/deps/lib/cmake/"
  cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$carry/deps/share/cmake/"
  # yaml-cpp (session configs): its CMake package finds the library relative to itself.
  multiarch_dir=$(gcc -print-multiarch)
  mkdir -p "$carry/deps/lib/$multiarch_dir/cmake"
  cp -r /usr/include/yaml-cpp "$carry/deps/include/"
  cp -r "/usr/lib/$multiarch_dir/cmake/yaml-cpp" "$carry/deps/lib/$multiarch_dir/cmake/"
  cp -P "/usr/lib/$multiarch_dir"/libyaml-cpp.so* "$carry/deps/lib/$multiarch_dir/"
  mkdir -p "$carry/deps/hdf5/include" "$carry/deps/hdf5/lib"
  cp -r /usr/include/hdf5/serial/. "$carry/deps/hdf5/include/"
  multiarch=/usr/lib/$(gcc -print-multiarch)
  cp -L "$multiarch/hdf5/serial/libhdf5.so" "$carry/deps/hdf5/lib/"
  for lib in "$multiarch"/libhdf5_serial.so.* "$multiarch"/libsz.so.* "$multiarch"/libaec.so.*; do
    [ -e "$lib" ] && cp -L "$lib" "$carry/deps/hdf5/lib/"
  done
  du -sh "$carry"
  exit 0
fi

[ -d "$carry/cache/src" ] || { echo "gpu-check: $carry is missing; run tools/gpu-check.sh --prepare first and carry it" >&2; exit 1; }
export KAMP_CACHE_DIR="$carry/cache" KAMP_JOBS=${KAMP_JOBS:-$(nproc)}
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
t0=$(date +%s)
"$here/tools/kokkos.sh" cuda
prefix=$(cat "$KAMP_CACHE_DIR/kokkos-cuda.prefix")
echo "== Kokkos built after $(( $(date +%s) - t0 )) s"

build="$carry/build-cuda"
# HDF5 from the carried copy unless the machine has its own (h5cc on PATH).
command -v h5cc >/dev/null || export HDF5_ROOT="$carry/deps/hdf5" LD_LIBRARY_PATH="$carry/deps/hdf5/lib:${LD_LIBRARY_PATH:-}"
for dir in "$carry"/deps/lib/*-linux-gnu; do
  if [ -d "$dir" ]; then export LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}"; fi
done
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" \
  -DKokkos_ROOT="$prefix" -DCMAKE_PREFIX_PATH="$carry/deps" >"$build.log" 2>&1 || { tail -n 30 "$build.log"; exit 1; }
cmake --build "$build" -j "$KAMP_JOBS" >>"$build.log" 2>&1 || { grep -A4 error "$build.log" | head -n 60; exit 1; }
echo "== kamp built after $(( $(date +%s) - t0 )) s"

export OMP_PROC_BIND=spread OMP_PLACES=threads
(cd "$build" && ctest --output-on-failure) | tee "$build/ctest.log"
echo "== tests done after $(( $(date +%s) - t0 )) s"
# FP8 on the GPU: the cuBLASLt path (compute capability >= 8.9) and the portable kernel, each
# against fp64 sums of the scaled FP8 products, and the device casts against the host's bits.
echo "== FP8 (cuBLASLt FP8 GEMM against fp64 and the portable kernel):"
"$build/tests/kamp_test_kernels" "[fp8]" | tail -n 3
"$build/tests/kamp_test_numeric" "FP8*" | tail -n 3
"$build/apps/kamp-train" --summary "${OUT:-$carry}/kamp-train-cuda.json" --checkpoint-dir "$build/checkpoints" \
  --overwrite-checkpoints
"$build/apps/kamp-inspect" "$build/checkpoints/step-00000200.h5" | head -n 4
# Per-step launches, fences (host waits) and copies, tokens/s, the AMP kernels against a STREAM
# triad and kamp's GEMM paths against cuBLAS' fp32 GEMM, all measured in this run.
"$build/apps/kamp-bench" --json "${OUT:-$carry}/kamp-bench-cuda.json" | tee "$build/bench.log"
echo "== per training step on the GPU:"
grep -E "one step|train step|roofline" "$build/bench.log" || true
echo "== gpu-check done after $(( $(date +%s) - t0 )) s"
