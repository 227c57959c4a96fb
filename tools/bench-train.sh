#!/usr/bin/env bash
# Training throughput of kamp against PyTorch on the reference GPT, same machine, same run.
#   tools/bench-train.sh [rounds]      (default 3 rounds; JSON in build/bench-train.json)
# Each round runs kamp-bench --suite train (all four modes) and the PyTorch script in fp32 and
# bf16 autocast, each with and without GOMP_SPINCOUNT=0 (Debian's torch runs fp32 GEMMs on
# OpenBLAS threads that fight libgomp's spinning threads; the better setting is its reference).
# Debian's interpreter (/usr/bin/python3) runs it: a python3 earlier in PATH may lack torch.
# Ratios are of medians over rounds, so a noisy moment on a shared machine hits both sides.
# On a CPU without bf16 dot products (no avx512_bf16/amx_bf16) PyTorch's bf16 autocast runs at
# ~100 tokens/s (minutes per run), so it is skipped there and every mode is compared with PyTorch fp32.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
rounds=${1:-3}
"$KAMP_REPO_DIR/tools/build.sh"
kamp_step "PyTorch reference (Debian's python3-torch)"
/usr/bin/python3 -c "import torch" 2>/dev/null || kamp_apt_install python3-torch
build=${KAMP_BUILD_DIR:-$KAMP_REPO_DIR/build}
out_dir=$(mktemp -d)
torch_modes="fp32 bf16"
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo || torch_modes="fp32"
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
for r in $(seq 1 "$rounds"); do
  kamp_step "round $r of $rounds"
  "$build/apps/kamp-bench" --suite train --json "$out_dir/kamp-$r.json" >/dev/null
  for mode in $torch_modes; do
    /usr/bin/python3 "$KAMP_REPO_DIR/apps/bench/pytorch_gpt.py" --mode "$mode" > "$out_dir/torch-$mode-spin-$r.json"
    GOMP_SPINCOUNT=0 /usr/bin/python3 "$KAMP_REPO_DIR/apps/bench/pytorch_gpt.py" --mode "$mode" \
      > "$out_dir/torch-$mode-nospin-$r.json"
  done
done
python3 - "$out_dir" "$rounds" "$build/bench-train.json" <<'PY'
import json, os, statistics, sys
d, rounds, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda name: json.load(open(f"{d}/{name}"))
kamp = {}
for r in range(1, rounds + 1):
    for entry in load(f"kamp-{r}.json")["results"]:
        if entry["name"].startswith("train_tokens_per_s_"):
            kamp.setdefault(entry["name"][len("train_tokens_per_s_"):], []).append(entry["value"])
torch_modes = [m for m in ("fp32", "bf16") if os.path.exists(f"{d}/torch-{m}-spin-1.json")]
torch = {}
for mode in torch_modes:
    for env in ("spin", "nospin"):
        torch[(mode, env)] = statistics.median(load(f"torch-{mode}-{env}-{r}.json")["tokens_per_s"]
                                               for r in range(1, rounds + 1))
ref = {m: max(torch[(m, "spin")], torch[(m, "nospin")]) for m in torch_modes}
low_ref = "bf16" if "bf16" in ref else "fp32"
result = {"rounds": rounds,
          "kamp_tokens_per_s": {m: statistics.median(v) for m, v in kamp.items()},
          "pytorch_tokens_per_s": {f"{m}_{e}": v for (m, e), v in torch.items()},
          "pytorch_reference_tokens_per_s": ref,
          "cpu_bf16_dot_products": "bf16" in ref}
# fp32 against PyTorch fp32; every mixed/low-precision mode against PyTorch's bf16 autocast
# (PyTorch fp32 where the CPU has no bf16), and every mode against kamp fp32.
result["ratios"] = {m: result["kamp_tokens_per_s"][m] / ref["fp32" if m == "fp32" else low_ref]
                    for m in result["kamp_tokens_per_s"]}
result["ratios_to_kamp_fp32"] = {m: v / result["kamp_tokens_per_s"]["fp32"]
                                 for m, v in result["kamp_tokens_per_s"].items() if "fp32" in result["kamp_tokens_per_s"]}
if not result["ratios"]:
    sys.exit("no kamp training results in the kamp-bench JSON")
json.dump(result, open(dest, "w"), indent=2)
print(json.dumps(result, indent=2))
PY
rm -rf "$out_dir"
# The CPU model, kind and date the figures belong to (tools/perf-tables.py reads them).
python3 "$KAMP_REPO_DIR/tools/perf-tables.py" --stamp "$build/bench-train.json"
