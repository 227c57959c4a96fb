#!/usr/bin/env bash
# How kamp's training cost grows with width, depth and context, against PyTorch, in one run.
#   tools/bench-scaling.sh            (JSON in build/bench-scaling.json, the plot in docs/scaling.png)
# Shapes: d_model 256/512/768 (64-wide heads, MLP 4 x d_model) x 4/12 layers x context 128/1024,
# vocabulary 256, 4096 tokens per step (batch 32 or 4); then GPT-2 124M (--preset gpt2-124m) at
# batch 4 x 1024. Each shape runs kamp's modes (KAMP_SCALING_MODES, default all four) and
# PyTorch 1.13 (fp32, and bf16 autocast where the CPU has bf16 dot products), each in its own
# process (its peak resident memory is the run's own), kamp first on even shapes and PyTorch
# first on odd ones, so a noisy minute of the shared machine does not fall on one side only.
# Median tokens/s over KAMP_SCALING_STEPS (3) timed steps after warm-up. About 45 minutes on 2 cores.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$KAMP_REPO_DIR/tools/build.sh"
/usr/bin/python3 -c "import torch, matplotlib" 2>/dev/null || kamp_apt_install python3-torch python3-matplotlib
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
steps=${KAMP_SCALING_STEPS:-3}
modes=${KAMP_SCALING_MODES:-fp32 amp_bf16 pure_bf16 amp_fp16}
torch_modes="fp32 bf16"
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo || torch_modes="fp32"
out=$(mktemp -d)
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
shapes=()
for context in 128 1024; do
  for layers in 4 12; do
    for d in 256 512 768; do
      shapes+=("$d $layers $context 256 $((4096 / context))")
    done
  done
done
shapes+=("768 12 1024 50257 4")
run_kamp() {  # SHAPE-INDEX D LAYERS CONTEXT VOCAB BATCH
  for mode in $modes; do
    "$build/apps/kamp-bench" --suite shape --d-model "$2" --heads $(($2 / 64)) --mlp $((4 * $2)) --layers "$3" \
      --context "$4" --vocab "$5" --batch "$6" --train-steps "$steps" --modes "$mode" \
      --json "$out/kamp-$1-$mode.json" | grep -E "tokens/s" || kamp_die "kamp-bench failed on shape $1 ($mode)"
  done
}
run_torch() {
  for mode in $torch_modes; do
    /usr/bin/python3 "$KAMP_REPO_DIR/apps/bench/pytorch_gpt.py" --mode "$mode" --d-model "$2" --heads $(($2 / 64)) \
      --layers "$3" --context "$4" --vocab "$5" --batch "$6" --steps "$steps" >"$out/torch-$1-$mode.json"
    echo "  pytorch $mode $(grep -o '"tokens_per_s": [0-9.]*' "$out/torch-$1-$mode.json")"
  done
}
for i in "${!shapes[@]}"; do
  read -r d layers context vocab batch <<<"${shapes[$i]}"
  kamp_step "shape $((i + 1)) of ${#shapes[@]}: d_model $d, $layers layers, context $context, vocab $vocab, batch $batch"
  if [ $((i % 2)) -eq 0 ]; then
    run_kamp "$i" "$d" "$layers" "$context" "$vocab" "$batch"
    run_torch "$i" "$d" "$layers" "$context" "$vocab" "$batch"
  else
    run_torch "$i" "$d" "$layers" "$context" "$vocab" "$batch"
    run_kamp "$i" "$d" "$layers" "$context" "$vocab" "$batch"
  fi
done
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
isa=$(grep -m1 -owE 'amx_bf16' /proc/cpuinfo || grep -m1 -owE 'avx512_bf16' /proc/cpuinfo ||
  grep -m1 -owE 'avx512f' /proc/cpuinfo || echo avx2)
/usr/bin/python3 "$KAMP_REPO_DIR/tools/scaling_report.py" "$out" "${#shapes[@]}" "$cpu ($isa, $(nproc) cores)" \
  "$build/bench-scaling.json" "$KAMP_REPO_DIR/docs/scaling.png"
