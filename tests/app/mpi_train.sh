#!/usr/bin/env bash
# kamp-train on 2 MPI ranks: a resume on 2 ranks is bit-exact (h5diff finds no difference in the
# step-8 checkpoints); a 2-rank checkpoint resumes on 1 process with batch 2B and a 1-process one
# on 2 ranks with batch B/2, each continuing the run within the data-parallel tolerance; SIGUSR1
# (which mpirun forwards; Slurm: --signal) stops every rank at the same step with a checkpoint;
# an error ends the job with its message.
# usage: mpi_train.sh KAMP_TRAIN H5DIFF WORKDIR MPIEXEC-WITH-FLAGS-FOR-2-RANKS...
set -euo pipefail
train=$1 h5diff=$2 work=$3/mpi_train
shift 3
mpi=("$@")
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --eval-batches 2 --steps 8 --log-every 1)
fail() { echo "FAIL: $*" >&2; exit 1; }
loss_at() { grep "^step $2/" "$1" | sed -E 's/.* loss ([0-9.]+).*/\1/'; }
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = (a > b ? a - b : b - a) / b; exit !(d < 2e-3) }'; }
rm -rf "$work" && mkdir -p "$work"

"${mpi[@]}" "$train" "${tiny[@]}" --batch 4 --checkpoint-every 4 --checkpoint-dir "$work/two" > "$work/two.log"
grep -q "data parallel: 2 MPI ranks x batch 4" "$work/two.log" || fail "kamp-train did not run on 2 ranks"
"${mpi[@]}" "$train" "${tiny[@]}" --batch 4 --resume "$work/two/step-00000004.h5" --checkpoint-dir "$work/two-resumed" \
  > "$work/two-resumed.log"
for object in /model /master /moment1 /moment2 /loss_scaler /config; do
  "$h5diff" -q "$work/two/step-00000008.h5" "$work/two-resumed/step-00000008.h5" "$object" "$object" ||
    fail "2 ranks -> 2 ranks: $object differs after resuming"
done

# 2 ranks x batch 4 -> 1 process x batch 8, and back.
"$train" "${tiny[@]}" --batch 8 --resume "$work/two/step-00000004.h5" --checkpoint-dir "$work/one-resumed" \
  > "$work/one-resumed.log"
close "$(loss_at "$work/one-resumed.log" 8)" "$(loss_at "$work/two.log" 8)" ||
  fail "2 -> 1: step-8 loss $(loss_at "$work/one-resumed.log" 8) vs $(loss_at "$work/two.log" 8) on 2 ranks"
"$train" "${tiny[@]}" --batch 8 --checkpoint-every 4 --checkpoint-dir "$work/one" > "$work/one.log"
"${mpi[@]}" "$train" "${tiny[@]}" --batch 4 --resume "$work/one/step-00000004.h5" --checkpoint-dir "$work/two-from-one" \
  > "$work/two-from-one.log"
close "$(loss_at "$work/two-from-one.log" 8)" "$(loss_at "$work/one.log" 8)" ||
  fail "1 -> 2: step-8 loss $(loss_at "$work/two-from-one.log" 8) vs $(loss_at "$work/one.log" 8) in one process"

# A signal stops both ranks after the same step, with one checkpoint; --resume auto continues.
"${mpi[@]}" "$train" "${tiny[@]}" --batch 4 --steps 100000 --checkpoint-dir "$work/signal" > "$work/signal.log" 2>&1 &
launcher=$!
for _ in $(seq 600); do grep -q "^step 3/" "$work/signal.log" && break; sleep 0.1; done
kill -USR1 "$launcher"
wait "$launcher" || fail "the 2-rank run did not exit 0 after SIGUSR1: $(tail -n 5 "$work/signal.log")"
grep -q "stopped by SIGUSR1 after step" "$work/signal.log" || fail "no stop message: $(tail -n 5 "$work/signal.log")"
[ "$(ls "$work/signal" | wc -l)" = 1 ] || fail "expected one checkpoint after the stop: $(ls "$work/signal")"
# An error on the ranks ends the job with the message, not a hang.
if "${mpi[@]}" "$train" "${tiny[@]}" --batch 4 --diagnose --checkpoint-dir "$work/diagnose" > "$work/diagnose.log" 2>&1; then
  fail "--diagnose on 2 ranks was accepted"
fi
grep -q "error (rank 0 of 2): --diagnose runs the precision doctor in one process" "$work/diagnose.log" ||
  fail "no error message for --diagnose on 2 ranks: $(tail -n 5 "$work/diagnose.log")"
echo "2-rank resume is bit-exact; 2 -> 1 and 1 -> 2 continue within 2e-3; SIGUSR1 stops both ranks together"
