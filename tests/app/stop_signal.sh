#!/usr/bin/env bash
# A batch system's stop signal (SIGTERM, or Slurm's --signal=USR1@T): kamp-train finishes the
# current step, writes a checkpoint, says so and exits 0; --resume auto continues from it.
# usage: stop_signal.sh KAMP_TRAIN WORKDIR
set -euo pipefail
train=$1 work=$2/stop_signal
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --eval-batches 1 --log-every 1)
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"

for signal in TERM USR1; do
  dir=$work/$signal
  "$train" "${tiny[@]}" --steps 1000000 --checkpoint-dir "$dir" > "$work/$signal.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do grep -q "^step 3/" "$work/$signal.log" && break; sleep 0.05; done
  kill -s "$signal" "$pid"
  status=0
  wait "$pid" || status=$?
  [ "$status" = 0 ] || fail "SIG$signal: exit status $status, expected 0"
  grep -q "stopped by SIG$signal after step [0-9]*" "$work/$signal.log" || fail "SIG$signal: no stop message"
  step=$(sed -n "s/^stopped by SIG$signal after step \([0-9]*\).*/\1/p" "$work/$signal.log")
  checkpoint=$(printf "%s/step-%08d.h5" "$dir" "$step")
  [ -f "$checkpoint" ] || fail "SIG$signal: no checkpoint $checkpoint"
  "$train" "${tiny[@]}" --steps $((step + 2)) --checkpoint-dir "$dir" --resume auto > "$work/$signal-resumed.log"
  grep -q "resumed from '$checkpoint'" "$work/$signal-resumed.log" || fail "SIG$signal: did not resume from $checkpoint"
  grep -q "done: $((step + 2)) steps" "$work/$signal-resumed.log" || fail "SIG$signal: resumed run did not finish"
done
echo "SIGTERM and SIGUSR1 each stopped the run with a checkpoint that resumes"
