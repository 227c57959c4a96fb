#!/usr/bin/env bash
# examples/slurm/modes.sbatch, a job array over the four precision modes, each writing --metrics,
# then examples/slurm/plot.sbatch over them as a job that depends on it (--dependency=afterok).
# An array whose tasks fail leaves its dependent job pending for good (DependencyNeverSatisfied).
source "$(dirname "$0")/jobs.sh"
[ -n "${KAMP_PYTHON:-}" ] || fail "no python3 with matplotlib for tools/plot-metrics (Debian: python3-matplotlib)"
export KAMP_TOOLS=$repo/tools
modes=$(sbatch --parsable --cpus-per-task=1 "$examples/modes.sbatch" "${model[@]}" --steps 200 --log-every 50)
plot=$(sbatch --parsable --dependency=afterok:"$modes" "$examples/plot.sbatch" "runs/modes-$modes")
[ "$(wait_end "$plot" 180)" = COMPLETED ] || fail "the plot job ended $(job_field "$plot" JobState)"
for task in 0 1 2 3; do
  mode=$(echo fp32 amp_bf16 amp_fp16 pure_bf16 | cut -d' ' -f$((task + 1)))
  out=$work/kamp-modes-${modes}_$task.out
  grep -q "Slurm job [0-9]* (array job $modes, task $task), restart 0" "$out" || fail "task $task: no job in the banner"
  grep -q "mode $mode" "$out" || fail "task $task did not train $mode"
  [ "$(wc -l < "runs/modes-$modes/$mode.csv")" = 201 ] || fail "$mode.csv does not hold 200 steps"
  [ "$(completions "${modes}_$task")" = "COMPLETED 0:0" ] || fail "task $task: $(completions "${modes}_$task")"
done
[ "$(head -c 4 "runs/modes-$modes/modes.png" | tail -c 3)" = PNG ] || fail "no image runs/modes-$modes/modes.png"
failing=$(sbatch --parsable --cpus-per-task=1 "$examples/modes.sbatch" --steps 0x)
never=$(sbatch --parsable --dependency=afterok:"$failing" "$examples/plot.sbatch" "runs/modes-$failing")
wait_state "$never" PENDING 10
for _ in $(seq 150); do
  [ "$(job_field "$never" Reason)" = DependencyNeverSatisfied ] && break
  sleep 0.2
done
[ "$(job_field "$never" Reason)" = DependencyNeverSatisfied ] ||
  fail "the plot after a failed array is $(job_field "$never" JobState) ($(job_field "$never" Reason))"
scancel "$never"
echo "array job $modes: four modes with metrics, then the plot (afterok); a failed array's plot never runs"
