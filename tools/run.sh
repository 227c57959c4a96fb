#!/usr/bin/env bash
# The README's main-job command: setup (idempotent), build, then run the main job.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$KAMP_REPO_DIR/tools/build.sh"
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
kamp_step "running the main job"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
exec "$build/apps/kamp-train" "$@"
