#!/usr/bin/env bash
# kamp-train resumes bit-exactly: 8 steps with a checkpoint at step 4, against a second run that
# resumes from that checkpoint; h5diff (HDF5's own tool) finds no difference in any tensor,
# counter, scaler attribute or FP8 scale and amax history of the two step-8 checkpoints (amp_fp8's
# delayed history holds 3 steps, so the ring has wrapped at the save). Then --resume auto skips a damaged
# newest checkpoint, and kamp-inspect reads one.
# usage: checkpoint_resume.sh KAMP_TRAIN KAMP_INSPECT H5DIFF WORKDIR
set -euo pipefail
train=$1 inspect=$2 h5diff=$3 work=$4/checkpoint_resume
h5dump=$(dirname "$h5diff")/h5dump
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --eval-batches 1 --steps 8)
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"

for run in amp_fp16 pure_bf16 amp_fp8-delayed amp_fp8-current; do
  mode=${run%%-*} recipe=${run#*-}
  [ "$recipe" = "$run" ] && recipe=delayed
  # amp_fp16 starts at a scale that overflows: skipped attempts and a moving scale before the save.
  args=("${tiny[@]}" --mode "$mode" --loss-scale 1e9 --loss-scale-growth-interval 2 --pure-bf16-update stochastic)
  [ "$mode" = amp_fp8 ] && args+=(--fp8-recipe "$recipe" --fp8-amax-history 3)
  "$train" "${args[@]}" --checkpoint-every 4 --checkpoint-dir "$work/$run-straight" > "$work/$run-straight.log"
  "$train" "${args[@]}" --resume "$work/$run-straight/step-00000004.h5" --checkpoint-dir "$work/$run-resumed" \
    > "$work/$run-resumed.log"
  grep -q "resumed from '.*step-00000004.h5'" "$work/$run-resumed.log" || fail "$run: no resume message"
  a=$work/$run-straight/step-00000008.h5 b=$work/$run-resumed/step-00000008.h5
  # Everything but the run_config attribute (it names the other directory).
  objects=(/model /moment1 /moment2 /loss_scaler /config)
  [ "$mode" = pure_bf16 ] || objects+=(/master)
  [ "$mode" = amp_fp8 ] && objects+=(/fp8)
  for object in "${objects[@]}"; do
    "$h5diff" -q "$a" "$b" "$object" "$object" || fail "$run: $object differs after resuming"
  done
  for attribute in step attempts data_position; do
    [ "$("$h5dump" -a /$attribute "$a" | grep '(0)')" = "$("$h5dump" -a /$attribute "$b" | grep '(0)')" ] ||
      fail "$run: attribute $attribute differs"
  done
  # The per-step losses of steps 5-8 are the same lines in both logs.
  diff <(grep "^step [5-8]/8" "$work/$run-straight.log" | cut -d'|' -f1) \
       <(grep "^step [5-8]/8" "$work/$run-resumed.log" | cut -d'|' -f1) || fail "$run: losses differ"
done
# The FP8 state the resume carried is not the initial one: delayed scales moved off 1 and the
# ring of 3 wrapped (8 updates).
"$h5dump" -a /fp8/updates "$work/amp_fp8-delayed-straight/step-00000004.h5" | grep -q '(0): 4' ||
  fail "amp_fp8: the checkpoint at step 4 does not hold 4 history updates"
"$h5dump" -d /fp8/scales "$work/amp_fp8-delayed-straight/step-00000004.h5" | grep -Eq '[0-9]{2,}\.' ||
  fail "amp_fp8: the delayed scales at step 4 are still the initial 1"
grep -q "SKIPPED" "$work/amp_fp16-straight.log" || fail "amp_fp16 never overflowed: the scaler state was not exercised"

# A damaged newest checkpoint: --resume auto reports it and takes the one before.
dir=$work/amp_fp16-straight
head -c 5000 "$dir/step-00000008.h5" > "$dir/step-00000009.h5"
"$train" "${tiny[@]}" --mode amp_fp16 --loss-scale 1e9 --loss-scale-growth-interval 2 --steps 10 \
  --checkpoint-dir "$dir" --resume auto > "$work/auto.log" 2>&1 || fail "--resume auto did not recover"
grep -q "skips it: checkpoint '.*step-00000009.h5'.*truncated" "$work/auto.log" || fail "damaged file not reported"
grep -q "resumed from '.*step-00000008.h5'" "$work/auto.log" || fail "did not resume from step 8"

"$inspect" "$dir/step-00000010.h5" > "$work/inspect.log"
grep -q "precision: amp_fp16; step 10" "$work/inspect.log" || fail "kamp-inspect: no metadata"
grep -Eq "master/h0.mlp.fc.weight +fp32 +64x32 " "$work/inspect.log" || fail "kamp-inspect: no tensor statistics"
grep -q "non-finite values in all tensors: 0" "$work/inspect.log" || fail "kamp-inspect: no non-finite count"
echo "resume is bit-exact; --resume auto skips a damaged checkpoint; kamp-inspect reads one"
