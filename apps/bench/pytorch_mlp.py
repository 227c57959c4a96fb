#!/usr/bin/env python3
"""The PyTorch reference for kamp-bench --suite mlp: the same surrogate MLP (Linear layers of
--sizes with tanh-GELU between them), MSE loss and AdamW step (lr 1e-3, weight decay 0.01), the
same batch, timed the same way (samples/s over timed steps after three warm-up steps, median
of --repeat runs).

Written for kamp (not taken from another project). Modes: fp32; bf16 = autocast(bfloat16), PyTorch's
mixed precision on CPUs; pure_bf16 = the model and inputs in bfloat16 (the loss in fp32, which 1.13
needs on CPUs). Prints one JSON object."""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn as nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["fp32", "bf16", "pure_bf16"], default="fp32")
    p.add_argument("--sizes", default="4,512,512,512,4")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    a = p.parse_args()
    torch.set_num_threads(a.threads)  # Debian's torch starts with one thread here
    sizes = [int(s) for s in a.sizes.split(",")]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.GELU(approximate="tanh"))
    torch.manual_seed(0)
    model = nn.Sequential(*layers)
    dtype = torch.bfloat16 if a.mode == "pure_bf16" else torch.float32
    model = model.to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    x = torch.rand(a.batch, sizes[0], dtype=dtype) * 2 - 1
    y = torch.sin(2 * x[:, : sizes[-1]].float()) if sizes[-1] <= sizes[0] else torch.zeros(a.batch, sizes[-1])
    loss_fn = nn.MSELoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.mode == "bf16"):
            # PyTorch 1.13 has no bf16 mse_loss on CPUs: pure_bf16's loss is taken in fp32.
            loss = loss_fn(model(x).float(), y.float())
        loss.backward()
        opt.step()

    runs = []
    for _ in range(a.repeat):
        for _ in range(3):
            step()
        start = time.perf_counter()
        for _ in range(a.steps):
            step()
        runs.append(a.batch * a.steps / (time.perf_counter() - start))
    print(json.dumps({"mode": a.mode, "samples_per_s": statistics.median(runs), "threads": torch.get_num_threads(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
