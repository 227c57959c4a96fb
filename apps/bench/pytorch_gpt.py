#!/usr/bin/env python3
"""The PyTorch reference for kamp's training benchmark: the same GPT (token + learned position
embeddings, pre-LayerNorm blocks with causal multi-head attention and a 4x tanh-GELU MLP, final
LayerNorm, LM head tied to the token embedding), the same AdamW step with gradient clipping,
timed the same way (median tokens/s over timed steps after three warm-up steps).

Written for kamp (not taken from another project). Modes: fp32, and bf16 = autocast(bfloat16),
PyTorch's mixed precision on CPUs. The shape options default to kamp's reference model; model
FLOP/s counts as kamp-bench --suite shape does (6 per parameter + 12 L C T per token). Prints
one JSON object, with the process's peak resident memory."""
import argparse
import json
import math
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, mlp):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, mlp)
        self.fc_proj = nn.Linear(mlp, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = F.softmax(att.masked_fill(mask[:t, :t] == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, heads, d, mlp):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads, mlp) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.register_buffer("mask", torch.tril(torch.ones(context, context)))
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if "proj.weight" in name else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        for block in self.blocks:
            x = block(x, self.mask)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["fp32", "bf16"], default="bf16")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    vocab, context, layers, heads, d, batch = args.vocab, args.context, args.layers, args.heads, args.d_model, args.batch
    mlp = 4 * d
    model = GPT(vocab, context, layers, heads, d, mlp)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.randint(0, vocab, (batch, context + 1))
    rates = []
    for step in range(args.steps + 3):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.mode == "bf16"):
            loss = model(data[:, :-1], data[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= 3:
            rates.append(batch * context / (time.perf_counter() - start))
    rates.sort()
    parameters = sum(p.numel() for p in model.parameters())
    flops_per_token = 6 * parameters + 12 * layers * d * context
    print(json.dumps({"framework": "pytorch", "version": torch.__version__, "mode": args.mode,
                      "parameters": parameters, "tokens_per_s": rates[len(rates) // 2],
                      "model_flop_per_s": rates[len(rates) // 2] * flops_per_token,
                      "process_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


if __name__ == "__main__":
    main()
