# Sourced by the slurm tests: submitting the job scripts of examples/slurm to the test cluster
# (SLURM_CONF, from ctest) and reading what the scheduler and the jobs recorded.
#   usage of a test: TEST.sh REPO_DIR BIN_DIR WORK_DIR [more]
set -euo pipefail
repo=$1 bin=$2 work=$3/$(basename "$0" .sh)
shift 3
examples=$repo/examples/slurm
h5diff=$(command -v h5diff) h5dump=$(command -v h5dump)
# A test run inside a Slurm job of a real cluster must not talk about that job.
unset SLURM_JOB_ID SLURM_JOBID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURM_RESTART_COUNT SLURM_JOB_END_TIME
# Every run of a test trains the same small model, one thread per task.
model=(--layers 2 --heads 2 --d-model 64 --mlp 128 --context 32 --batch 8 --eval-every 0 --eval-batches 1)
export OMP_PROC_BIND=false KAMP_BIN=$bin
rm -rf "$work" && mkdir -p "$work" && cd "$work"
# A test that fails leaves no job behind to hold the node's CPUs for the next one.
trap 'jobs=$(squeue -h -o %A 2> /dev/null || true); [ -z "$jobs" ] || scancel $jobs 2> /dev/null || true' EXIT

fail() {
  echo "FAIL: $*" >&2
  local f
  for f in "$work"/*.out; do [ -f "$f" ] && { echo "--- $f:"; tail -n 30 "$f"; }; done >&2
  echo "--- slurmctld.log:" >&2
  tail -n 30 "$(dirname "$SLURM_CONF")/slurmctld.log" >&2
  exit 1
}
# The job's FIELD as `scontrol show job` gives it (JobState, Restarts, ExitCode, ...).
job_field() { scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
# Waits up to SECONDS for JOB to be in a state matching the extended regex STATES.
wait_state() {
  local job=$1 states=$2 seconds=$3 state=
  for _ in $(seq $((seconds * 5))); do
    state=$(job_field "$job" JobState)
    [[ $state =~ ^($states)$ ]] && return 0
    sleep 0.2
  done
  fail "job $job is $state after $seconds s, not $states"
}
# Waits until JOB has ended for good (not pending again after a requeue) and gives its state.
wait_end() {
  wait_state "$1" 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY' "$2"
  job_field "$1" JobState
}
# What the job completion log (sacct --completion, jobcomp/filetxt) holds of JOB: "STATE EXIT" lines.
completions() { sacct --completion -n -P -j "$1" -o State,ExitCode | tr '|' ' '; }
# Waits until FILE has a line matching REGEX.
wait_line() {
  for _ in $(seq $(($3 * 5))); do grep -Eq "$2" "$1" 2> /dev/null && return 0; sleep 0.2; done
  fail "no line /$2/ in $1 after $3 s"
}
# Two step-N checkpoints of the same run hold the same tensors, counters and scaler (h5diff, the
# HDF5 tool; the run_config attribute names each run's directory, so it is left out).
same_checkpoints() {
  local object attribute
  for object in /model /master /moment1 /moment2 /loss_scaler /config; do
    "$h5diff" -q "$1" "$2" "$object" "$object" || fail "$object differs: $1 and $2"
  done
  for attribute in step attempts data_position; do
    [ "$("$h5dump" -a /$attribute "$1" | grep '(0)')" = "$("$h5dump" -a /$attribute "$2" | grep '(0)')" ] ||
      fail "attribute $attribute differs: $1 and $2"
  done
}
# Optimizer steps one CPU takes in about SECONDS with `model` (from a timed 1000-step run).
steps_for_seconds() {
  local t0 t1
  t0=$(date +%s%N)
  OMP_NUM_THREADS=1 "$bin/kamp-train" "${model[@]}" --steps 1000 --checkpoint-dir "$work/calibration" \
    > /dev/null
  t1=$(date +%s%N)
  rm -rf "$work/calibration"
  echo $(($1 * 1000 * 1000000000 / (t1 - t0)))
}
