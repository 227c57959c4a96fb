#!/usr/bin/env python3
"""The table, JSON and plot of tools/bench-scaling.sh from its per-run JSON files.

    scaling_report.py RESULTS-DIR SHAPES CPU-DESCRIPTION OUT.json OUT.png

Prints a Markdown table (the README's): per shape, tokens/s of every kamp mode and PyTorch
mode, kamp's ratio to PyTorch (fp32 to fp32; amp_bf16 and pure_bf16 to bf16 autocast, or to fp32
where the CPU has no bf16), model GFLOP/s and each process's peak resident memory."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

directory, count, cpu, json_out, png_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = []
for i in range(count):
    row = {"kamp": {}, "pytorch": {}}
    for name in sorted(os.listdir(directory)):
        stem, _ = os.path.splitext(name)
        framework, index, mode = stem.split("-", 2)
        if int(index) != i:
            continue
        data = json.load(open(os.path.join(directory, name)))
        if framework == "kamp":
            row["config"] = data["shape"]["config"]
            row["kamp"][mode] = data["shape"]["modes"][mode]
        else:
            row["pytorch"][mode] = data
    rows.append(row)

low = "bf16" if any("bf16" in r["pytorch"] for r in rows) else "fp32"
kamp_modes = [m for m in ("fp32", "amp_bf16", "pure_bf16", "amp_fp16") if m in rows[0]["kamp"]]
torch_modes = [m for m in ("fp32", "bf16") if m in rows[0]["pytorch"]]


def reference(mode):
    return "fp32" if mode in ("fp32", "amp_fp16") else low


def label(c):
    name = "GPT-2 124M" if c["vocab"] == 50257 else f"d{c['d_model']} L{c['layers']} T{c['context']}"
    return name


for r in rows:
    r["ratios"] = {m: r["kamp"][m]["tokens_per_s"] / r["pytorch"][reference(m)]["tokens_per_s"] for m in kamp_modes}
json.dump({"cpu": cpu, "rows": rows}, open(json_out, "w"), indent=2)

print(f"CPU: {cpu}\n")
header = ["shape", "batch"] + [f"kamp {m}" for m in kamp_modes] + [f"torch {m}" for m in torch_modes]
header += [f"{m} / torch {reference(m)}" for m in kamp_modes if m != "amp_fp16"]
header += ["kamp amp_bf16 GFLOP/s", "peak RSS kamp amp_bf16 / torch " + low]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for r in rows:
    c = r["config"]
    cells = [label(c), str(c["batch"])]
    cells += [f"{r['kamp'][m]['tokens_per_s']:.0f}" for m in kamp_modes]
    cells += [f"{r['pytorch'][m]['tokens_per_s']:.0f}" for m in torch_modes]
    cells += [f"{r['ratios'][m]:.2f}" for m in kamp_modes if m != "amp_fp16"]
    main = "amp_bf16" if "amp_bf16" in r["kamp"] else kamp_modes[0]
    cells.append(f"{r['kamp'][main]['model_flop_per_s'] / 1e9:.0f}")
    cells.append(f"{r['kamp'][main]['process_peak_rss_bytes'] / 1e9:.2f} / "
                 f"{r['pytorch'][low]['process_peak_rss_bytes'] / 1e9:.2f} GB")
    print("| " + " | ".join(cells) + " |")

fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
x = list(range(len(rows)))
names = [label(r["config"]) for r in rows]


def every_run(ax, key, scale):
    """One line per kamp mode (solid) and PyTorch mode (dashed) of `key` / scale."""
    for framework, modes, style, name in (("kamp", kamp_modes, "o-", "kamp"), ("pytorch", torch_modes, "s--", "PyTorch")):
        for m in modes:
            ax.plot(x, [r[framework][m][key] / scale for r in rows], style, label=f"{name} {m}")


every_run(axes[0], "model_flop_per_s", 1e9)
axes[0].set_ylabel("model GFLOP/s (6N + 12LCT per token)")
for m in kamp_modes:
    if m != "amp_fp16":
        axes[1].plot(x, [r["ratios"][m] for r in rows], "o-", label=f"kamp {m} / PyTorch {reference(m)}")
axes[1].axhline(1.0, color="grey", lw=0.8)
axes[1].set_ylabel("tokens/s ratio")
every_run(axes[2], "process_peak_rss_bytes", 1e9)
axes[2].set_ylabel("peak resident memory (GB)")
for ax in axes:
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
fig.suptitle(f"kamp against PyTorch 1.13 by shape, 4096 tokens per step: {cpu}", fontsize=10)
fig.tight_layout()
fig.savefig(png_out, dpi=110)
print(f"\nplot: {png_out}; JSON: {json_out}")
