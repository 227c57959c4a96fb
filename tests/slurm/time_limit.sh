#!/usr/bin/env bash
# A job's time limit, the way Slurm ends it: examples/slurm/train.sbatch with --time=1 (a minute)
# and about 65 s of training, so it cannot finish in one job.
# - With --signal=USR1@25 (Slurm sends it 25 to 85 s before the end: it looks every 30 s, so
#   5 to 35 s into a one-minute job, before --time-limit auto's stop at about 47 s):
#   kamp-train stops at SIGUSR1 with a checkpoint and exits 0, the job requeues itself, the next
#   start (SLURM_RESTART_COUNT 1) resumes; the job completes with exit code 0.
# - The same script without its --signal line: --time-limit auto alone stops it before the end.
# Both finished runs equal an uninterrupted one, run beside them outside Slurm, bit for bit.
source "$(dirname "$0")/jobs.sh"
steps=$(steps_for_seconds 65)
echo "$steps steps (about 65 s on one CPU)"
args=("${model[@]}" --log-every 1000)
grep -v '^#SBATCH --signal' "$examples/train.sbatch" > "$work/without-signal.sbatch"
export KAMP_STEPS=$steps
signal=$(KAMP_CHECKPOINT_DIR=$work/signal sbatch --parsable --time=1 --signal=USR1@25 --cpus-per-task=1 \
  --output="$work/signal.out" "$examples/train.sbatch" "${args[@]}")
limit=$(KAMP_CHECKPOINT_DIR=$work/limit sbatch --parsable --time=1 --cpus-per-task=1 --output="$work/limit.out" \
  "$work/without-signal.sbatch" "${args[@]}")
OMP_NUM_THREADS=1 "$bin/kamp-train" "${args[@]}" --steps "$steps" --checkpoint-dir "$work/straight" \
  > "$work/straight.log" 2>&1 || fail "the uninterrupted run failed"
final=$(printf 'step-%08d.h5' "$steps")
for job in "$signal" "$limit"; do
  state=$(wait_end "$job" 240)
  [ "$state" = COMPLETED ] || fail "job $job ended $state"
  [ "$(job_field "$job" ExitCode)" = 0:0 ] || fail "job $job: exit code $(job_field "$job" ExitCode)"
  restarts=$(job_field "$job" Restarts)
  [ "$restarts" -ge 1 ] || fail "job $job finished without a requeue: it was not stopped"
  # The completion log holds each start's end: requeued ones, then the completion.
  [ "$(completions "$job" | tail -n 1)" = "COMPLETED 0:0" ] || fail "job $job: completion log $(completions "$job")"
  echo "job $job: completed after $restarts requeues; completion log: $(completions "$job" | tr '\n' ';')"
done
out=$work/signal.out
grep -q "Slurm job $signal, restart 0" "$out" || fail "the banner does not name job $signal, restart 0"
grep -Eq "^stopped by SIGUSR1 after step [0-9]+ of $steps \(Slurm job $signal, restart 0\)" "$out" ||
  fail "job $signal was not stopped by SIGUSR1 in its first start"
grep -q "Slurm job $signal, restart 1" "$out" || fail "no restart 1 of job $signal"
grep -Eq "^done: $steps steps .*; Slurm job $signal, restart [1-9]" "$out" || fail "no summary naming the job"
out=$work/limit.out
grep -q "time limit at .* (the end of Slurm job $limit, from squeue)" "$out" || fail "no end time from squeue"
grep -q "SIGUSR1" "$out" && fail "job $limit got SIGUSR1 without --signal"
grep -Eq "^stopped by the time limit \([0-9]+ s before it\) after step [0-9]+ of $steps \(Slurm job $limit, restart 0\)" "$out" ||
  fail "job $limit was not stopped by --time-limit auto"
grep -Eq "resumed from '.*/limit/step-[0-9]+.h5'" "$out" || fail "job $limit did not resume"
same_checkpoints "$work/straight/$final" "$work/signal/$final"
same_checkpoints "$work/straight/$final" "$work/limit/$final"
echo "stopped by SIGUSR1 and by --time-limit auto, requeued, resumed: both equal the uninterrupted run"
