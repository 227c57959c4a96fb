#!/usr/bin/env bash
# The README's test command: setup (idempotent), build, then every test (including `long`)
# except the opt-in `stress` label. Arguments replace that default selection (ctest options).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$KAMP_REPO_DIR/tools/build.sh"
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
selection=("$@")
[ $# -gt 0 ] || selection=(-LE stress)
kamp_step "running the tests (ctest ${selection[*]})"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
cd "$build" && ctest --output-on-failure "${selection[@]}"
