#!/usr/bin/env bash
# Preemption, the two ways a site does it, to examples/slurm/train.sbatch (two jobs side by side):
# - `scontrol requeue` of the running job: Slurm sends SIGTERM, kamp-train checkpoints and exits
#   0, and the job starts again (restart 1) from that checkpoint and completes;
# - `scancel --signal=TERM`, then `scancel`: the checkpoint is written before the cancel, and a
#   new job given the same checkpoint directory continues the run to the end.
# Every checkpoint left behind loads (kamp-inspect).
source "$(dirname "$0")/jobs.sh"
export KAMP_STEPS=$(steps_for_seconds 15)
args=("${model[@]}" --log-every 500)
submit() { KAMP_CHECKPOINT_DIR=$work/$1 sbatch --parsable --cpus-per-task=1 --output="$work/$1.out" \
  "$examples/train.sbatch" "${args[@]}"; }
requeued=$(submit requeued)
cancelled=$(submit cancelled)
wait_line "$work/requeued.out" "^step 500/" 60
scontrol requeue "$requeued"
wait_line "$work/cancelled.out" "^step 500/" 60
scancel --signal=TERM "$cancelled"
wait_line "$work/cancelled.out" "^stopped by SIGTERM after step [0-9]+ .*restart 0" 60
# The script has requeued the job: cancelled while it waits to start again (a scancel during the
# requeue itself finds the job completing and is ignored).
wait_state "$cancelled" PENDING 30
scancel "$cancelled"
[ "$(wait_end "$cancelled" 60)" = CANCELLED ] || fail "job $cancelled was not cancelled"
continued=$(submit cancelled)
final=$(printf 'step-%08d.h5' "$KAMP_STEPS")
for job in "$requeued" "$continued"; do
  [ "$(wait_end "$job" 120)" = COMPLETED ] || fail "job $job ended $(job_field "$job" JobState)"
done
out=$work/requeued.out
grep -Eq "^stopped by SIGTERM after step [0-9]+ of $KAMP_STEPS \(Slurm job $requeued, restart 0\)" "$out" ||
  fail "scontrol requeue did not stop kamp-train with SIGTERM"
grep -q "CANCELLED .* DUE TO JOB REQUEUE" "$out" || fail "no requeue message from Slurm"
grep -q "Slurm job $requeued, restart 1" "$out" || fail "job $requeued did not start again"
grep -Eq "resumed from '.*/requeued/step-[0-9]+.h5'" "$out" || fail "job $requeued did not resume"
stopped=$(sed -n "s/^stopped by SIGTERM after step \([0-9]*\).*/\1/p" "$work/cancelled.out" | head -n 1)
grep -q "resumed from '.*/cancelled/$(printf 'step-%08d.h5' "$stopped")'" "$work/cancelled.out" ||
  fail "job $continued did not resume from the step-$stopped checkpoint job $cancelled wrote"
for checkpoint in "$work"/requeued/step-*.h5 "$work"/cancelled/step-*.h5; do
  "$bin/kamp-inspect" "$checkpoint" > /dev/null || fail "$checkpoint does not load"
done
[ -f "$work/requeued/$final" ] && [ -f "$work/cancelled/$final" ] || fail "a run did not reach step $KAMP_STEPS"
echo "scontrol requeue and scancel --signal=TERM each left a checkpoint the next start continued from"
