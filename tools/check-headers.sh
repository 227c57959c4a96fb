#!/usr/bin/env bash
# CI leg: every public header (kernels/include/kamp, model/include/kamp; detail/ folders and the
# deprecated forwarding headers too) compiles alone, included twice, in a translation unit of its
# own (tests/headers/CMakeLists.txt, -DKAMP_CHECK_HEADERS=ON). Only those objects are built, with
# every dependency the setup found (MPI included, so the kamp::dist headers are checked too).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kamp_configure_check headers "header by header (KAMP_CHECK_HEADERS)" -DKAMP_CHECK_HEADERS=ON \
  -DKAMP_ENABLE_TESTS=OFF -DKAMP_ENABLE_APPS=OFF -DCMAKE_COMPILE_WARNING_AS_ERROR="${KAMP_WARNINGS_AS_ERRORS:-OFF}"
build=$check_build
t0=$(date +%s)
cmake --build "$build" -j "$KAMP_JOBS" --target kamp_header_check >"$build.log" 2>&1 \
  || { grep -E -B2 -A6 'error|warning' "$build.log" | head -n 60
       kamp_die "a header does not compile alone (log: $build.log)" \
         "include what the header uses in the header itself, and give it an include guard"; }
count=$(grep -c . "$build/tests/headers/headers.txt")
grep -q '^/\* #undef KAMP_HAVE_MPI \*/' "$build/include/kamp/config.hpp" && mpi="without MPI" || mpi="with MPI"
echo "headers self-contained: $count headers, each compiled alone and included twice ($mpi, $(( $(date +%s) - t0 )) s)"
