#!/usr/bin/env bash
# Configure and build kamp against the Kokkos that tools/setup.sh built (build dir: ./build).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$KAMP_REPO_DIR/tools/setup.sh"
kamp_read_kokkos_args
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
kamp_step "configuring and building kamp in $build"
# CI sets KAMP_WARNINGS_AS_ERRORS=ON: kamp compiles without a warning on g++ 12 and 16.
cmake -S "$KAMP_REPO_DIR" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${kamp_kokkos_args[@]}" "${kamp_ccache_launcher[@]}" \
  -DCMAKE_COMPILE_WARNING_AS_ERROR="${KAMP_WARNINGS_AS_ERRORS:-OFF}" >/dev/null \
  || kamp_die "configuring kamp failed" "read CMake's message above"
cmake --build "$build" -j "$KAMP_JOBS" || kamp_die "building kamp failed" "read the compiler's message above"
