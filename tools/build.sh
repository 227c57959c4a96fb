#!/usr/bin/env bash
# Configure and build kamp against the Kokkos that tools/setup.sh built (build dir: ./build).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$KAMP_REPO_DIR/tools/setup.sh"
kokkos_prefix=$(cat "$KAMP_CACHE_DIR/kokkos-host.prefix")
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
kamp_step "configuring and building kamp in $build"
cmake -S "$KAMP_REPO_DIR" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos_prefix" >/dev/null \
  || kamp_die "configuring kamp failed" "read CMake's message above"
cmake --build "$build" -j "$KAMP_JOBS" || kamp_die "building kamp failed" "read the compiler's message above"
