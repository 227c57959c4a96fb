#!/usr/bin/env bash
# Skips are reported as skips, and CI refuses them: a small CTest project with one test that
# passes, one placeholder for a missing tool (kamp_skipped_test) and one that skips itself at run
# time (exit 77, as kamp::test::skip and the scripts' not_run do). CTest must list both as not
# run, tools/common.sh's kamp_report_skips must name each with its reason, pass outside CI and
# fail with KAMP_CI=1 (.ci/run).
set -uo pipefail
repo=$1 work=$2/skip-reporting
rm -rf "$work" && mkdir -p "$work/src"
cat >"$work/src/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(skips NONE)
enable_testing()
include($repo/cmake/kampTestSkips.cmake)
add_test(NAME passes COMMAND sh -c "exit 0")
add_test(NAME skips_itself COMMAND sh -c "echo 'kamp test skipped: no F16C here'; exit 77")
kamp_skipped_test(placeholder demo "spm_train is missing")
add_test(NAME fails COMMAND sh -c "exit 77")
set_tests_properties(fails PROPERTIES LABELS failing)
kamp_tests_may_skip()
set_tests_properties(fails PROPERTIES SKIP_RETURN_CODE 0)
CMAKE
failed=0
fail() { echo "FAILED: $1"; failed=$((failed + 1)); }
cmake -S "$work/src" -B "$work/build" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
(cd "$work/build" && ctest -LE failing >"$work/ctest.log" 2>&1) || fail "ctest failed on skips: $(cat "$work/ctest.log")"
grep -Eq 'skips_itself .*Skipped' "$work/ctest.log" || fail "a test exiting 77 is not shown as skipped"
grep -Eq 'placeholder .*Skipped' "$work/ctest.log" || fail "the placeholder is not shown as skipped"
grep -q 'The following tests did not run' "$work/ctest.log" || fail "CTest's summary does not list the skips"
# A test that exits 77 without being allowed to skip still fails.
(cd "$work/build" && ctest -L failing >/dev/null 2>&1) && fail "exit 77 passed where skipping is not allowed"
(cd "$work/build" && ctest -LE failing >/dev/null 2>&1)
source "$repo/tools/common.sh"
out=$(KAMP_CI=0 kamp_report_skips "$work/build" 2>&1) || fail "kamp_report_skips failed outside CI: $out"
[[ $out == *"skips_itself: no F16C here"* ]] || fail "the run-time skip is not named with its reason: $out"
[[ $out == *"placeholder: spm_train is missing"* ]] || fail "the placeholder is not named with its reason: $out"
out=$( (KAMP_CI=1 kamp_report_skips "$work/build") 2>&1) && fail "CI accepted skipped tests: $out"
[[ $out == *"CI must run every test"* ]] || fail "CI's refusal does not say why: $out"
# Without skips, CI passes.
(cd "$work/build" && ctest -R passes >/dev/null 2>&1)
out=$( (KAMP_CI=1 kamp_report_skips "$work/build") 2>&1) || fail "CI refused a run without skips: $out"
[ "$failed" -eq 0 ] || exit 1
echo "skips show as skipped with their reasons; outside CI they pass, in CI they fail the leg"
