#!/usr/bin/env bash
# tools/plot-metrics on the metrics of real (tiny) runs: a CSV alone, a CSV and a JSONL overlaid,
# and the errors bad input gets.
#   plot_metrics.sh KAMP-TRAIN PYTHON PLOT-METRICS WORK-DIR
train=$1 python=$2 plot=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh" "$4/plot_metrics"
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
