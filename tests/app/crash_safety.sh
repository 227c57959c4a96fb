#!/usr/bin/env bash
# Crash safety: kamp-train writes a checkpoint after every step and is killed with SIGKILL at a
# random moment, TRIALS times. After every kill each step-*.h5 must load completely (kamp-inspect
# reads and checks all of it), and the next run must resume from the newest one. The test also
# requires that some kills landed inside a checkpoint write (a leftover .tmp file shows it).
# usage: crash_safety.sh KAMP_TRAIN KAMP_INSPECT WORKDIR TRIALS
set -euo pipefail
train=$1 inspect=$2 work=$3/crash_safety trials=$4
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --eval-batches 1 --log-every 1)
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/after_kill.sh"
rm -rf "$work" && mkdir -p "$work"
dir=$work/checkpoints
RANDOM=2026
mid_write=0 newest=0
for trial in $(seq "$trials"); do
  log=$work/run-$trial.log
  "$train" "${tiny[@]}" --steps 1000000 --checkpoint-every 1 --keep-checkpoints 2 --checkpoint-dir "$dir" \
    --resume auto > "$log" 2>&1 &
  pid=$!
  # Wait until the run has resumed (or started) and trained, then kill it 0-300 ms later.
  for _ in $(seq 400); do grep -q "^checkpoint (periodic)" "$log" && break; sleep 0.025; done
  if [ "$trial" -gt 1 ]; then
    grep -q "resumed from '$(printf "%s/step-%08d.h5" "$dir" "$newest")'" "$log" ||
      fail "trial $trial: did not resume from the newest checkpoint (step $newest):$(cat "$log")"
  fi
  sleep "0.$(printf %03d $((RANDOM % 300)))"
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  compgen -G "$dir/*.tmp" > /dev/null && mid_write=$((mid_write + 1))
  newest=$(newest_after_kill "$inspect" "$dir" "$trial" "$newest")
done
echo "$trials kills ($mid_write inside a checkpoint write): every checkpoint loaded, every run resumed; last step $newest"
[ "$mid_write" -ge 1 ] || fail "no kill landed inside a checkpoint write; the test did not test what it should"
