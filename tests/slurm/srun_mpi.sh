#!/usr/bin/env bash
# examples/slurm/train.sbatch with two tasks: srun starts two kamp-train ranks through PMIx
# (srun --mpi=pmix: Slurm's mpi_pmix_v4 and Open MPI's PMIx component, both Debian's), fully
# sharded (--sharding parameters), checkpointing every 500 steps. Rank 1 is then killed with
# SIGKILL (as the OOM killer would: scancel has no per-task form, so the pid comes from
# `scontrol listpids`). --kill-on-bad-exit ends the step within the kill wait: the job fails, not
# requeued, no rank is left running, and every checkpoint loads; a new job continues the run.
source "$(dirname "$0")/jobs.sh"
export KAMP_STEPS=100000 KAMP_CHECKPOINT_DIR=$work/checkpoints
args=("${model[@]}" --sharding parameters --checkpoint-every 500 --log-every 500)
job=$(sbatch --parsable --ntasks=2 --cpus-per-task=1 --output="$work/job.out" "$examples/train.sbatch" "${args[@]}")
wait_line "$work/job.out" "^checkpoint \(periodic\): .*step-00001000.h5" 120
grep -q "data parallel: 2 MPI ranks x batch 8" "$work/job.out" || fail "kamp-train did not run as 2 MPI ranks"
rank1=$(scontrol listpids "$job" | awk '$3 == 0 && $5 == 1 {print $1}')
[ -n "$rank1" ] || fail "no pid of task 1 in step 0: $(scontrol listpids "$job")"
grep -q kamp-train "/proc/$rank1/cmdline" || fail "task 1 (pid $rank1) is not kamp-train"
killed=$(date +%s)
kill -KILL "$rank1"
state=$(wait_end "$job" 60)
ended=$(($(date +%s) - killed))
[ "$state" = FAILED ] || fail "job $job ended $state after a rank was killed, not FAILED"
[ "$ended" -le 15 ] || fail "the step took $ended s to end after the kill (kill wait: 10 s)"
[ "$(job_field "$job" Restarts)" = 0 ] || fail "job $job was requeued after a rank died"
! pgrep -f -- "--checkpoint-dir $KAMP_CHECKPOINT_DIR" > /dev/null || fail "a rank is still running"
grep -Eq "task 1: Killed|error: .*task 1" "$work/job.out" || fail "srun did not name the killed task"
for checkpoint in "$KAMP_CHECKPOINT_DIR"/step-*.h5; do
  "$bin/kamp-inspect" "$checkpoint" > /dev/null || fail "$checkpoint does not load"
done
newest=$(ls "$KAMP_CHECKPOINT_DIR" | grep '^step-' | tail -n 1)
KAMP_STEPS=$(($(echo "$newest" | sed 's/^step-0*\([0-9]*\)\.h5$/\1/') + 500))
export KAMP_STEPS
continued=$(sbatch --parsable --ntasks=2 --cpus-per-task=1 --output="$work/continued.out" "$examples/train.sbatch" \
  "${args[@]}")
[ "$(wait_end "$continued" 120)" = COMPLETED ] || fail "the continuation ended $(job_field "$continued" JobState)"
grep -q "resumed from '$KAMP_CHECKPOINT_DIR/$newest'" "$work/continued.out" || fail "no resume from $newest"
echo "killed rank 1: the step ended in $ended s, the job FAILED, checkpoints load, $newest continued to step $KAMP_STEPS"
