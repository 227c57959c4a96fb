#!/usr/bin/env bash
# tools/plot-metrics on the metrics of real (tiny) runs: a CSV alone, a CSV and a JSONL overlaid,
# the errors bad input gets (one line, exit status 1, never a traceback), and a million steps.
#   plot_metrics.sh KAMP-TRAIN PYTHON PLOT-METRICS WORK-DIR
train=$1 python=$2 plot=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh" "$4/plot_metrics"
"$train" "${tiny[@]}" --metrics bf16.csv --checkpoint-dir bf16 >/dev/null
"$train" "${tiny[@]}" --mode amp_fp16 --metrics fp16.jsonl --checkpoint-dir fp16 >/dev/null

is_png() {
  [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$1 is not a PNG"
  [ "$(stat -c %s "$1")" -gt 10000 ] || fail "$1 is nearly empty"
}
"$python" "$plot" bf16.csv >/dev/null
"$python" "$plot" amp_bf16=bf16.csv amp_fp16=fp16.jsonl -o modes.png --title "two modes" >/dev/null
for png in bf16.png modes.png; do is_png "$png"; done
refused "cannot read 'missing.csv'" "$python" "$plot" missing.csv
refused "must end in .csv or .jsonl" "$python" "$plot" bf16.png

# rejected PATTERN ARGS...: plot-metrics ARGS exits 1 with one line on stderr, an error matching
# PATTERN. Under a timeout: an input that blocks (a FIFO) fails instead of hanging the test.
rejected() {
  local pattern=$1 rc=0
  shift
  timeout 10 "$python" "$plot" "$@" >/dev/null 2>err.txt || rc=$?
  [ "$rc" -eq 1 ] || { cat err.txt >&2; fail "plot-metrics $*: exit status $rc, not 1"; }
  [ "$(wc -l <err.txt)" -eq 1 ] || { cat err.txt >&2; fail "plot-metrics $*: more than one line on stderr"; }
  grep -Eq "^plot-metrics: error: $pattern" err.txt || { cat err.txt >&2; fail "plot-metrics $*: no '$pattern'"; }
}

# Steps: whole numbers >= 0. Line 4 of bf16.csv is step 3.
for step in inf nan 1.5 -3; do
  sed "4s/^[^,]*/$step/" bf16.csv >"step$step.csv"
  rejected "step$step\.csv:4: step '$step' is not a whole number|step$step\.csv:4: step '$step' is negative" \
    "step$step.csv"
done
sed '4s/^\([^,]*\),[^,]*/\1,abc/' bf16.csv >word.csv
rejected "word\.csv:4: loss 'abc' is not a number; " word.csv
sed '4s/^\([^,]*\),[^,]*/\1,/' bf16.csv >hole.csv
rejected "hole\.csv:4: loss is empty; " hole.csv
sed '4s/,[^,]*$//' bf16.csv >short.csv
rejected "short\.csv:4: 7 fields where the header names 8; " short.csv
cut -d, -f3- bf16.csv >nocols.csv
rejected "nocols\.csv:1: the CSV header lacks step, loss; " nocols.csv
: >empty.csv
: >empty.jsonl
rejected "'empty\.csv' is empty; " empty.csv
rejected "'empty\.jsonl' is empty; " empty.jsonl
head -1 bf16.csv >header.csv
rejected "'header\.csv' holds no steps; " header.csv

# JSON Lines: one object a line.
for line in '[1, 2]' 42 '"text"'; do
  { head -2 fp16.jsonl; echo "$line"; } >line.jsonl
  rejected "line\.jsonl:3: the line is (a list|a number|a string), not a JSON object; " line.jsonl
done
{ head -2 fp16.jsonl; echo '{"step": 3,'; } >cut.jsonl
rejected "cut\.jsonl:3: invalid JSON: .* at column 12; " cut.jsonl
{ head -2 fp16.jsonl; echo '{"step": 3, "loss": 5.5}'; } >lacks.jsonl
rejected "lacks\.jsonl:3: the object lacks scale, skipped, grad_norm, tokens_per_s; " lacks.jsonl
sed '3s/"step":3/"step":3.5/' fp16.jsonl >half.jsonl
rejected "half\.jsonl:3: step 3\.5 is not a whole number; " half.jsonl

# A diverged run is data: gaps and one warning, no error. kamp-train writes nan as null in JSON.
sed -e '4s/^\([^,]*\),[^,]*/\1,inf/' -e '5s/^\([^,]*\),[^,]*/\1,nan/' bf16.csv >diverged.csv
sed '3s/"loss":[^,]*/"loss":null/' fp16.jsonl >diverged.jsonl
"$python" "$plot" diverged.csv diverged.jsonl -o diverged.png >out.txt 2>err.txt || { cat err.txt >&2; fail "diverged runs refused"; }
grep -q "^plot-metrics: warning: diverged\.csv: the loss is inf, nan or beyond float32's range at 2 of 6 steps (first at step 3)" err.txt \
  || { cat err.txt >&2; fail "no warning of the CSV's non-finite loss"; }
grep -q "^plot-metrics: warning: diverged\.jsonl: the loss is inf, nan or beyond float32's range at 1 of 6 steps (first at step 3)" err.txt \
  || { cat err.txt >&2; fail "no warning of the JSONL's null loss"; }
is_png diverged.png

# plotted OUTPUT ARGS...: plot-metrics ARGS -o OUTPUT exits 0, with nothing on stderr but its own
# warnings: no traceback, no warning of matplotlib's.
plotted() {
  local output=$1 rc=0
  shift
  timeout 60 "$python" "$plot" "$@" -o "$output" >/dev/null 2>err.txt || rc=$?
  [ "$rc" -eq 0 ] || { cat err.txt >&2; fail "plot-metrics $*: exit status $rc, not 0"; }
  ! grep -v "^plot-metrics: warning: " err.txt || fail "plot-metrics $*: more than its warnings on stderr (above)"
}

# Magnitudes past float32's range, which kamp-train would have written as inf, are gaps like inf in
# every column: near float64's largest, matplotlib's axis arithmetic overflows (a traceback).
cat >huge.csv <<'CSV'
step,loss,val_loss,scale,skipped,grad_norm,lr,tokens_per_s
1,5.5,,1.7e308,0,-1.7e308,0.0001,1.7e308
2,1.7e308,5e307,65536,0,1.5,0.0001,-1.7e308
3,-1e308,,-1e308,1,1e308,0.0001,5e307
4,5.2,5.1,32768,0,1.2,0.0001,100000.0
5,5.1,,32768,0,1.1,0.0001,-1e308
CSV
plotted huge.png huge.csv
grep -qx "plot-metrics: warning: huge\.csv: the loss is inf, nan or beyond float32's range at 2 of 5 steps (first at step 2); .*" \
  err.txt || { cat err.txt >&2; fail "huge.csv: no warning of its out-of-range losses"; }
is_png huge.png
# Nothing any panel can draw: 0 has no place on the loss scale's log axis.
awk -F, -v OFS=, 'NR > 1 { $2 = "1.7e308"; $4 = "0"; $6 = "-1.7e308"; $8 = "-1.7e308" } 1' huge.csv >allhuge.csv
plotted allhuge.png allhuge.csv
grep -q "the loss is inf, nan or beyond float32's range at 5 of 5 steps" err.txt || { cat err.txt >&2; fail "allhuge.csv: no warning"; }
is_png allhuge.png
cat >huge.jsonl <<'JSONL'
{"grad_norm":1e308,"loss":1.7e308,"lr":0.0001,"scale":65536.0,"skipped":false,"step":1,"tokens_per_s":-1.7e308}
{"grad_norm":1.5,"loss":5.4,"lr":0.0001,"scale":5e307,"skipped":true,"step":2,"tokens_per_s":100000.0,"val_loss":-1e308}
{"grad_norm":1.4,"loss":5.3,"lr":0.0001,"scale":32768.0,"skipped":false,"step":3,"tokens_per_s":1e308}
JSONL
plotted huge_jsonl.png huge.jsonl
is_png huge_jsonl.png

# Titles and run names are drawn as written: mathtext would parse "$...$" (and fail on "$\frac{$").
# A run named _x stays in the legends, which drop labels that start with "_". Bytes the locale
# cannot decode and control characters are drawn, not refused by the SVG writer; a long title is
# cut, not past what the rasterizer can draw.
cp bf16.csv '$x^$.csv'
cp bf16.csv _scratch.csv
plotted tex.png --title '$\frac{$' '$\frac{$=bf16.csv' '$x^$.csv' 'a $5 and $6 b=fp16.jsonl' _scratch.csv
is_png tex.png
plotted tex.svg --title "$(printf 'bytes \377\376, an escape \033, a\nnewline $$')" "$(printf '\377\001')=bf16.csv"
grep -q "<svg" tex.svg || fail "tex.svg is not an SVG"
plotted long.png --title "$(printf '%05000d' 0)" "$(printf '%0300d' 0)=bf16.csv"
is_png long.png

# Regular files only, refused by name without opening (a FIFO would block); no empty names.
mkfifo pipe.csv
mkdir folder.csv
rejected "'pipe\.csv' is a FIFO \(named pipe\), not a metrics file; " pipe.csv
rejected "'folder\.csv' is a directory, not a metrics file; " folder.csv
rejected "'/dev/null' is a character device, not a metrics file; " /dev/null
rejected "an empty argument where a metrics file belongs; " ""
rejected "'run=' names no file after '='; " run=
rejected "-o names no file \(an empty argument\); " bf16.csv -o ""

# The output: a format matplotlib writes, named by its extension; a directory gets the image inside.
rejected "-o 'plot\.xyz': matplotlib cannot write \.xyz images here; use one of .*\.pdf .*\.png .*\.svg" bf16.csv -o plot.xyz
rejected "-o 'plot' has no extension to name the image format; " bf16.csv -o plot
mkfifo pipe.png
rejected "-o 'pipe\.png' is a FIFO \(named pipe\), not an image to overwrite; " bf16.csv -o pipe.png
rejected "cannot write 'nowhere/plot\.png': there is no directory 'nowhere'; " bf16.csv -o nowhere/plot.png
rejected "cannot write 'bf16\.csv/plot\.png': 'bf16\.csv' is not a directory; " bf16.csv -o bf16.csv/plot.png
mkdir locked && chmod 555 locked
if ! touch locked/probe 2>/dev/null; then
  rejected "cannot write 'locked/plot\.png': permission denied; " bf16.csv -o locked/plot.png
elif [ -d /sys/kernel ] && ! touch /sys/kamp-probe 2>/dev/null; then  # root: sysfs takes no new files
  rejected "cannot write '/sys/kamp-plot\.png': Permission denied; " bf16.csv -o /sys/kamp-plot.png
fi
mkdir plots
"$python" "$plot" bf16.csv -o plots >out.txt
grep -qx "plot-metrics: plots/bf16.png (1 run)" out.txt || { cat out.txt >&2; fail "-o DIR: not reported as DIR/bf16.png"; }
is_png plots/bf16.png
[ ! -e plots.png ] || fail "-o plots wrote plots.png"
"$python" "$plot" bf16.csv -o modes.svg >/dev/null
grep -q "<svg" modes.svg || fail "modes.svg is not an SVG"

# A million steps, streamed and drawn from a few thousand points; then one bad value on the last line.
awk 'BEGIN { print "step,loss,val_loss,scale,skipped,grad_norm,lr,tokens_per_s"
  for (i = 1; i <= 1000000; i++) { skip = i % 9973 == 0
    printf "%d,%.6f,%s,%g,%d,%s,0.0001,%.1f\n", i, 1 + 4.5 * exp(-i / 3e5), i % 1000 ? "" : "3.0",
      2 ^ (16 - i % 7), skip, skip ? "inf" : "1.5", 100000 + i % 97 } }' >million.csv
timeout 60 "$python" "$plot" million.csv >out.txt 2>err.txt || { cat err.txt >&2; fail "million.csv: refused or over 60 s"; }
grep -qx "plot-metrics: million.png (1 run)" out.txt || { cat out.txt err.txt >&2; fail "million.csv: no million.png"; }
[ ! -s err.txt ] || { cat err.txt >&2; fail "million.csv: a warning"; }
is_png million.png
echo "1000001,1.5,,1,0,1.5,0.0001,fast" >>million.csv
timeout 60 "$python" "$plot" million.csv >/dev/null 2>err.txt && fail "million.csv with a bad last line: exit status 0"
grep -q "^plot-metrics: error: million\.csv:1000002: tokens_per_s 'fast' is not a number; " err.txt \
  || { cat err.txt >&2; fail "million.csv: the bad last line not named"; }
rm million.csv
echo "plot-metrics: all checks passed"
