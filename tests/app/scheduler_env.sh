#!/usr/bin/env bash
# kamp-train inside a batch job, without a scheduler: the job Slurm's environment describes (id,
# array task, restart count) in the banner, the summary line and --summary; --time-limit as a
# duration, and auto from SLURM_JOB_END_TIME (the job's end in Unix seconds) or squeue (a stand-in
# script); the errors for a malformed environment, auto outside a job, a squeue that fails, and
# too little time left.
# (The slurm label runs the same against a real Slurm.)
# Usage: scheduler_env.sh KAMP_TRAIN SCRATCH_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
train=$(readlink -f "$1") scratch=$(readlink -f "$2")/scheduler-env
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
unset SLURM_JOB_ID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURM_RESTART_COUNT SLURM_JOB_END_TIME
export OMP_PROC_BIND=false
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --eval-batches 1 --log-every 100)
ck() { mktemp -d "$scratch/ck-XXXXXX"; }  # a fresh checkpoint directory per run
job=(env SLURM_JOB_ID=77 SLURM_ARRAY_JOB_ID=70 SLURM_ARRAY_TASK_ID=3 SLURM_RESTART_COUNT=2)

expect "the job in the banner and the summary" 0 \
  "  Slurm job 77 \(array job 70, task 3\), restart 2.*done: 4 steps .*; Slurm job 77 \(array job 70, task 3\), restart 2" \
  "${job[@]}" "$train" "${tiny[@]}" --steps 4 --checkpoint-dir "$(ck)" --summary summary.json
expect "the job in --summary" 0 '"array_job_id": "70",.*"array_task_id": "3",.*"job_id": "77",.*"restart_count": 2' \
  cat summary.json
expect "no job outside Slurm" 0 '"slurm": null' \
  bash -c "'$train' ${tiny[*]} --steps 2 --checkpoint-dir '$(ck)' --summary plain.json > /dev/null && cat plain.json"
expect "a malformed restart count" 1 "SLURM_RESTART_COUNT='two' is not a count" \
  env SLURM_JOB_ID=77 SLURM_RESTART_COUNT=two "$train" "${tiny[@]}" --steps 2 --checkpoint-dir "$(ck)"
expect "--time-limit auto outside a job" 1 "--time-limit auto: this is not a Slurm job \(SLURM_JOB_ID is not set\)" \
  "$train" "${tiny[@]}" --steps 2 --time-limit auto --checkpoint-dir "$(ck)"
expect "--time-limit of no unit" 1 "--time-limit '90': give auto \(the Slurm job's end\), a duration with unit s, m or h" \
  "$train" "${tiny[@]}" --steps 2 --time-limit 90 --checkpoint-dir "$(ck)"
# squeue stands in for the scheduler (a script on PATH): a job's end in local time, a job without
# a limit, and a squeue that fails, with its own message and the way out.
mkdir bin
squeue_says() { printf '#!/bin/sh\n%s\n' "$1" > bin/squeue && chmod +x bin/squeue; }
epoch=$(($(date +%s) + 3600))
end=$(date -d @$epoch +%Y-%m-%dT%H:%M:%S)
squeue_says "[ \"\$SLURM_TIME_FORMAT \$*\" = '%s -h -j 77 -o %e' ] && echo 'squeue: warning: a note' >&2 && echo $epoch"
expect "--time-limit auto from squeue" 0 "time limit at $end \(the end of Slurm job 77, from squeue\).*done: 2 steps" \
  env SLURM_JOB_ID=77 PATH="$scratch/bin:$PATH" "$train" "${tiny[@]}" --steps 2 --time-limit auto --checkpoint-dir "$(ck)"
squeue_says "echo N/A"
expect "--time-limit auto in a job without a limit" 0 "time limit auto: the Slurm job has none.*done: 2 steps" \
  env SLURM_JOB_ID=77 PATH="$scratch/bin:$PATH" "$train" "${tiny[@]}" --steps 2 --time-limit auto --checkpoint-dir "$(ck)"
squeue_says "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1"
expect "--time-limit auto when squeue fails" 1 \
  "--time-limit auto: 'SLURM_TIME_FORMAT=%s squeue -h -j 77 -o %e' failed \(slurm_load_jobs error: Unable to contact slurm controller\): give the time limit as a duration" \
  env SLURM_JOB_ID=77 PATH="$scratch/bin:$PATH" "$train" "${tiny[@]}" --steps 2 --time-limit auto --checkpoint-dir "$(ck)"
expect "a malformed SLURM_JOB_END_TIME" 1 "SLURM_JOB_END_TIME='soon' is not a time in Unix seconds" \
  env SLURM_JOB_ID=77 SLURM_JOB_END_TIME=soon "$train" "${tiny[@]}" --steps 2 --time-limit auto --checkpoint-dir "$(ck)"
# 14 s before the job's end, a run of a million steps stops with its checkpoint and exits 0 (it
# keeps 10 s for the exit and twice the next steps and a checkpoint).
dir=$(ck)
expect "--time-limit auto from SLURM_JOB_END_TIME" 0 \
  "time limit at .* \(the end of Slurm job 77, from SLURM_JOB_END_TIME\).*checkpoint \(the time limit\): .*stopped by the time limit \\([0-9]+ s before it\\) after step [1-9][0-9]* of 1000000 \(Slurm job 77, restart 0\)" \
  env SLURM_JOB_ID=77 SLURM_JOB_END_TIME=$(($(date +%s) + 14)) "$train" "${tiny[@]}" --steps 1000000 \
  --time-limit auto --checkpoint-dir "$dir"
expect "a resumed run with too little time left" 1 \
  "--time-limit 5s: [0-9] s are left, too few for a step, a checkpoint and the exit: give the job more time" \
  "$train" "${tiny[@]}" --steps 1000000 --time-limit 5s --checkpoint-dir "$dir" --resume auto
expect "--time-limit as a duration" 0 "time limit at .* \(1h from the start\).*done: 3 steps" \
  "$train" "${tiny[@]}" --steps 3 --time-limit 1h --checkpoint-dir "$(ck)"
expect_summary "kamp-train in a batch job's environment"
