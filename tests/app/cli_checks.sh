# Sourced by the app test scripts: a fresh work directory, and checks of a program's exit and
# message. Usage: source cli_checks.sh WORK-DIR
set -euo pipefail
rm -rf "$1" && mkdir -p "$1" && cd "$1"
export OMP_PROC_BIND=false
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() {  # refused PATTERN COMMAND...: a non-zero exit whose stderr matches
  local pattern=$1 rc=0
  shift
  "$@" >/dev/null 2>err.txt || rc=$?
  [ "$rc" -ne 0 ] || fail "'$*' exited 0"
  grep -Eq "$pattern" err.txt || { cat err.txt >&2; fail "'$*': no '$pattern' in its message"; }
}
# The smallest model that trains: a few seconds per run.
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --eval-batches 1 --steps 6)
