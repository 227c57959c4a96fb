#!/usr/bin/env bash
# kamp-generate on real (tiny) runs: samples during training, text from the newest checkpoint
# (prompt + N bytes, the same for a seed), an amp_fp16 checkpoint in its mode, and the errors
# bad input gets.
#   generate.sh KAMP-TRAIN KAMP-GENERATE WORK-DIR
train=$1 generate=$2
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh" "$3/generate"

"$train" "${tiny[@]}" --sample-every 3 --sample-tokens 20 >train.txt
grep -q '^sample at step 3: ' train.txt && grep -q '^sample at step 6: ' train.txt || fail "no samples at steps 3 and 6"
"$train" "${tiny[@]}" --mode amp_fp16 --checkpoint-dir fp16 >/dev/null

"$generate" --prompt "the " --tokens 30 --seed 7 >a.txt 2>gen.txt
[ "$(stat -c %s a.txt)" -eq 35 ] || fail "expected the prompt, 30 bytes and a newline, got $(stat -c %s a.txt) bytes"
[ "$(head -c 4 a.txt)" = "the " ] || fail "the text does not start with the prompt"
grep -q 'step 6, amp_bf16' gen.txt || fail "kamp-generate did not name the checkpoint it read"
"$generate" --prompt "the " --tokens 30 --seed 7 >b.txt 2>/dev/null
cmp -s a.txt b.txt || fail "the same seed gave different text"
"$generate" --checkpoint fp16/step-00000006.h5 --temperature 0 --tokens 30 >c.txt 2>gen.txt
grep -q 'amp_fp16' gen.txt || fail "the amp_fp16 checkpoint was not read in its mode"
[ "$(stat -c %s c.txt)" -eq 35 ] || fail "greedy amp_fp16: expected 35 bytes, got $(stat -c %s c.txt)"
"$generate" --checkpoint fp16/step-00000006.h5 --temperature 0 --tokens 30 >d.txt 2>/dev/null
cmp -s c.txt d.txt || fail "greedy decoding gave different text twice"
refused "no directory 'nowhere'.*train first" "$generate" --checkpoint-dir nowhere
refused "it does not exist" "$generate" --checkpoint /nonexistent.h5
refused "temperature must be finite and >= 0" "$generate" --temperature -1
"$generate" --temperature -1 >out.txt 2>/dev/null || true
[ ! -s out.txt ] || fail "a refused option still printed the prompt"
refused "top-k must lie in \[0, 256\]" "$generate" --top-k 300
refused "prompt needs at least one byte" "$generate" --prompt ""

echo "kamp-generate: all checks passed"
