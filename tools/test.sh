#!/usr/bin/env bash
# The README's test command: setup (idempotent), build, then every test (including `long`)
# except the opt-in `stress` label. Arguments go to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$KAMP_REPO_DIR/tools/build.sh"
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
# The `stress` label stays out unless asked for: -L stress runs it; -LE X becomes -LE 'X|stress'.
selection=()
while [ $# -gt 0 ]; do
  case "$1" in
    -LE|--label-exclude) selection+=("$1" "($2)|stress"); shift 2 ;;
    *) selection+=("$1"); shift ;;
  esac
done
[[ " ${selection[*]} " == *stress* ]] || selection+=(-LE stress)
kamp_step "running the tests (ctest ${selection[*]})"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
cd "$build" && ctest --output-on-failure "${selection[@]}"
kamp_report_skips "$build"
