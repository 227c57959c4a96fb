#!/usr/bin/env bash
# Data parallelism on the reference GPT at each sharding level: kamp-train on 2 and 4 MPI ranks
# (one thread each) against one process (two threads), all with the global batch 16, alternating.
#   tools/bench-dist.sh [rounds] [steps]   (default 1 round of 50 steps; JSON in build/bench-dist.json)
# Per run: median tokens/s, the seconds each rank waited for sharded collectives (communication
# compute did not hide), the per-rank peak memory by category, the final checkpoint's write time
# and the time to read it back on the same ranks. The one-process run is the reference measured
# in the same session: on 2 cores the ranks share the cores, so ratios, not absolute speeds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
rounds=${1:-1} steps=${2:-50}
"$KAMP_REPO_DIR/tools/build.sh"
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
command -v mpirun >/dev/null || kamp_die "no mpirun" "install openmpi-bin (tools/setup.sh does)"
out_dir=$(mktemp -d)
train=("$build/apps/kamp-train" --eval-every 0 --eval-batches 1)
run() {  # NAME RANKS SHARDING: train, then resume the final checkpoint for one more step
  local name=$1 ranks=$2 level=$3 launch=()
  if [ "$ranks" -gt 1 ]; then
    launch=(env OMP_NUM_THREADS=1 OMP_PROC_BIND=false OMPI_MCA_btl_vader_single_copy_mechanism=none
            mpirun -np "$ranks" --oversubscribe --allow-run-as-root)
  else
    launch=(env OMP_PROC_BIND=spread OMP_PLACES=threads)
  fi
  "${launch[@]}" "${train[@]}" --steps "$steps" --batch $((16 / ranks)) --sharding "$level" --overwrite-checkpoints \
    --checkpoint-dir "$out_dir/$name" --summary "$out_dir/$name-$r.json" > /dev/null
  "${launch[@]}" "${train[@]}" --steps $((steps + 1)) --batch $((16 / ranks)) --sharding "$level" --resume auto \
    --checkpoint-dir "$out_dir/$name" --summary "$out_dir/$name-$r-resumed.json" > /dev/null
}
names=(one)
for r in $(seq 1 "$rounds"); do
  kamp_step "round $r of $rounds: one process"
  run one 1 optimizer
  for ranks in 2 4; do
    for level in optimizer gradients parameters; do
      kamp_step "round $r of $rounds: $ranks ranks, sharding $level"
      run "$ranks-$level" "$ranks" "$level"
      [ "$r" -gt 1 ] || names+=("$ranks-$level")
    done
  done
done
python3 - "$out_dir" "$rounds" "$build/bench-dist.json" "${names[@]}" <<'PY'
import json, statistics, sys
d, rounds, dest, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
load = lambda n, r, tail="": json.load(open(f"{d}/{n}-{r}{tail}.json"))
categories = ("parameters", "gradients", "master", "optimizer", "activations")
runs = {}
for n in names:
    s = [load(n, r) for r in range(1, rounds + 1)]
    resumed = [load(n, r, "-resumed") for r in range(1, rounds + 1)]
    seconds = statistics.median(x["seconds"] for x in s)
    mem = {c: s[0]["memory_bytes"][c]["measured"] for c in categories}
    runs[n] = {"ranks": s[0]["ranks"], "sharding": s[0]["sharding"],
               "tokens_per_s": statistics.median(x["median_tokens_per_s"] for x in s),
               "collective_wait_fraction": statistics.median(x["communication_wait_seconds"] for x in s) / seconds,
               "memory_bytes_per_rank": mem,
               "state_bytes_per_rank": sum(mem[c] for c in categories[:4]),
               "checkpoint_write_seconds": statistics.median(x["checkpoint_write_seconds"] for x in s),
               "checkpoint_read_seconds": statistics.median(x["checkpoint_read_seconds"] for x in resumed),
               "final_loss": s[0]["final_loss"]}
one = runs["one"]
for n, x in runs.items():
    x["tokens_per_s_ratio_to_one_process"] = x["tokens_per_s"] / one["tokens_per_s"]
    x["state_bytes_ratio_to_one_process"] = x["state_bytes_per_rank"] / one["state_bytes_per_rank"]
    x["checkpoint_write_ratio_to_one_process"] = x["checkpoint_write_seconds"] / one["checkpoint_write_seconds"]
result = {"rounds": rounds, "global_batch": 16, "runs": runs}
json.dump(result, open(dest, "w"), indent=2)
print(json.dumps(result, indent=2))
PY
