#!/usr/bin/env bash
# Data-parallel throughput and per-rank memory on the reference GPT: kamp-train on 2 MPI ranks
# (batch 8 each, one thread each) against one process (batch 16, two threads), alternating.
#   tools/bench-dist.sh [rounds] [steps]   (default 3 rounds of 100 steps; JSON in build/bench-dist.json)
# The one-process run is the reference measured in the same session; ratios are of medians.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
rounds=${1:-3} steps=${2:-100}
"$KAMP_REPO_DIR/tools/build.sh"
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
command -v mpirun >/dev/null || kamp_die "no mpirun" "install openmpi-bin (tools/setup.sh does)"
out_dir=$(mktemp -d)
train=("$build/apps/kamp-train" --steps "$steps" --eval-every 0 --overwrite-checkpoints)
for r in $(seq 1 "$rounds"); do
  kamp_step "round $r of $rounds"
  OMP_PROC_BIND=spread OMP_PLACES=threads "${train[@]}" --batch 16 --checkpoint-dir "$out_dir/ck1" \
    --summary "$out_dir/one-$r.json" >/dev/null
  OMP_NUM_THREADS=1 OMP_PROC_BIND=false OMPI_MCA_btl_vader_single_copy_mechanism=none \
    mpirun -np 2 --oversubscribe --allow-run-as-root "${train[@]}" --batch 8 --checkpoint-dir "$out_dir/ck2" \
    --summary "$out_dir/two-$r.json" >/dev/null
done
python3 - "$out_dir" "$rounds" "$build/bench-dist.json" <<'PY'
import json, statistics, sys
d, rounds, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {k: [json.load(open(f"{d}/{k}-{r}.json")) for r in range(1, rounds + 1)] for k in ("one", "two")}
tps = {k: statistics.median(s["median_tokens_per_s"] for s in v) for k, v in runs.items()}
mem = {k: {c: v[0]["memory_bytes"][c]["measured"] for c in ("parameters", "gradients", "master", "optimizer",
                                                             "activations")} for k, v in runs.items()}
result = {"rounds": rounds,
          "one_process_batch_16_tokens_per_s": tps["one"],
          "two_ranks_batch_8_tokens_per_s": tps["two"],
          "ratio_two_ranks_to_one_process": tps["two"] / tps["one"],
          "final_loss": {k: v[0]["final_loss"] for k, v in runs.items()},
          "final_validation_loss": {k: v[0]["final_validation_loss"] for k, v in runs.items()},
          "memory_bytes_per_rank": mem}
json.dump(result, open(dest, "w"), indent=2)
print(json.dumps(result, indent=2))
PY
