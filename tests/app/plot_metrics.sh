#!/usr/bin/env bash
# tools/plot-metrics on the metrics of real (tiny) runs: a CSV alone, a CSV and a JSONL overlaid,
# and the errors bad input gets.
#   plot_metrics.sh KAMP-TRAIN PYTHON PLOT-METRICS WORK-DIR
set -euo pipefail
train=$1 python=$2 plot=$3
work=$4/plot_metrics
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMP_PROC_BIND=false
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() {  # refused PATTERN COMMAND...: a non-zero exit whose stderr matches
  local pattern=$1 rc=0
  shift
  "$@" >/dev/null 2>err.txt || rc=$?
  [ "$rc" -ne 0 ] || fail "'$*' exited 0"
  grep -Eq "$pattern" err.txt || { cat err.txt >&2; fail "'$*': no '$pattern' in its message"; }
}
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --eval-batches 1 --steps 6)
"$train" "${tiny[@]}" --metrics bf16.csv --checkpoint-dir bf16 >/dev/null
"$train" "${tiny[@]}" --mode amp_fp16 --metrics fp16.jsonl --checkpoint-dir fp16 >/dev/null

"$python" "$plot" bf16.csv >/dev/null
"$python" "$plot" amp_bf16=bf16.csv amp_fp16=fp16.jsonl -o modes.png --title "two modes" >/dev/null
for png in bf16.png modes.png; do
  [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$png is not a PNG"
  [ "$(stat -c %s "$png")" -gt 10000 ] || fail "$png is nearly empty"
done
refused "cannot read 'missing.csv'" "$python" "$plot" missing.csv
refused "must end in .csv or .jsonl" "$python" "$plot" bf16.png
echo "plot-metrics: all checks passed"
