#!/usr/bin/env bash
# Build kamp with every vendor GEMM path and MPI switched off and run the GEMM and kernel tests,
# so the portable fallbacks are what a user without those libraries gets, and they pass; the
# model library builds without MPI (one process only).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kamp_configure_check no-tpls "without vendor GEMM libraries" \
  -DKAMP_ENABLE_KOKKOSKERNELS=OFF -DKAMP_ENABLE_DNNL=OFF -DKAMP_ENABLE_MPI=OFF -DKAMP_ENABLE_APPS=OFF
build=$check_build
cmake --build "$build" -j "$KAMP_JOBS" --target kamp_test_kernels kamp_test_nn kamp_model >/dev/null || kamp_die "building without TPLs failed" "run the build in $build to see the errors"
grep -q '^/\* #undef KAMP_ENABLE_DNNL \*/' "$build/include/kamp/config.hpp" || kamp_die "oneDNN was not switched off" "check cmake/kampDependencies.cmake"
grep -q '^/\* #undef KAMP_HAVE_MPI \*/' "$build/include/kamp/config.hpp" || kamp_die "MPI was not switched off" "check cmake/kampDependencies.cmake"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
(cd "$build" && ctest -L kernels --output-on-failure >"$build/ctest.log" 2>&1) \
  || { tail -n 40 "$build/ctest.log"; kamp_die "kernel tests failed without vendor GEMM libraries" "see $build/ctest.log"; }
echo "without vendor GEMM libraries: $(grep 'tests passed' "$build/ctest.log")"
kamp_report_skips "$build"
