#!/usr/bin/env bash
# CI leg: kamp built with AddressSanitizer and UndefinedBehaviorSanitizer, then the kernels,
# model and app tests under them (the C API's and the Fortran module's, the hostile checkpoint
# files and inputs among them). Any report fails the run (halt_on_error; UBSan's are errors too).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# -O1, as the sanitizers' authors advise: their reports keep their frames, and the build is
# faster than at -O3 on 2 cores.
kamp_configure_check sanitizers "with -fsanitize=address,undefined" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_Fortran_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" -DKAMP_ENABLE_MPI=OFF
build=$check_build
cmake --build "$build" -j "$KAMP_JOBS" --target kamp_test_kernels kamp_test_nn kamp_test_model kamp_test_app_logic \
  kamp-train kamp-generate kamp-inspect kamp-plan kamp-bench kamp_write_bit_patterns kamp_write_session \
  kamp_test_c_api kamp_test_c_minimal $(grep -q '^KAMP_ENABLE_FORTRAN:BOOL=ON' "$build/CMakeCache.txt" && echo kamp_test_fortran) \
  >/dev/null \
  || kamp_die "building with sanitizers failed" "run the build in $build to see the errors"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
# Leaks are checked too, except those wholly inside libhdf5 (tools/lsan.supp says which and why).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$KAMP_REPO_DIR/tools/lsan.supp
# kamp-bench is built for the file rules its --json follows (app.never_clobber); its timing tests
# run in the other legs, where a sanitizer does not skew them. Left to the other legs as well, for
# CI's time: the finite-difference gradient checks and the plan-against-tables enumeration (pure
# arithmetic over the kernels the other tests run here; 2 min under the sanitizers), the plotting
# script's test (Python) and the 20 kills of crash_safety (what it checks is the files on disk).
excluded='install_consumer|kamp-bench|plot_metrics|crash_safety|finite differences|table-built plan'
(cd "$build" && ctest -L 'kernels|model|app' -LE 'stress|mpi' -E "$excluded" --output-on-failure >"$build/ctest.log" 2>&1) \
  || { grep -E "ERROR: |runtime error|FAILED|Failed" "$build/ctest.log" | head -n 40; tail -n 40 "$build/ctest.log"
       kamp_die "tests failed under the sanitizers" "see $build/ctest.log"; }
echo "with address and undefined-behaviour sanitizers: $(grep 'tests passed' "$build/ctest.log")"
kamp_report_skips "$build"
