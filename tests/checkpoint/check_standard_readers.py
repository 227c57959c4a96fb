"""Reads kamp checkpoints with h5py and h5dump and compares every value with the raw bits
kamp stored, decoded here independently with numpy: bf16 bits are the high half of a binary32,
fp16 bits are numpy's float16."""
import argparse
import re
import subprocess
import sys

import h5py
import numpy as np


def decode(raw, dtype):
    if dtype == "bf16":
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
    if dtype == "fp16":
        return raw.view("<f2")
    return raw.view("<f4")


def same(got, expected):
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        return False
    nan = np.isnan(expected)
    return (np.array_equal(np.isnan(got), nan) and np.array_equal(got[~nan], expected[~nan])
            and np.array_equal(np.signbit(got[~nan]), np.signbit(expected[~nan])))


def h5dump_values(h5dump, path, group):
    """{dataset: values} from h5dump's text output with 9 significant digits, which name each
    binary32 (and so each bf16 and fp16) value uniquely: parsed back to float32 they are exact."""
    text = subprocess.run([h5dump, "-A", "0", "-m", "%.9g", "-g", group, path], check=True,
                          capture_output=True, text=True).stdout
    values, current = {}, None
    for line in text.splitlines():
        m = re.match(r'\s*DATASET "(.+)" \{', line)
        if m:
            current = values.setdefault(m.group(1), [])
            continue
        m = re.match(r"\s*\([0-9,]+\): (.*)", line)
        if m and current is not None:
            current.extend(float(v) for v in m.group(1).rstrip(",").split(","))
    return {name: np.array(v, dtype=np.float64).astype(np.float32) for name, v in values.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--writer", required=True)
    parser.add_argument("--h5dump", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    subprocess.run([args.writer, args.workdir], check=True)
    failures, checked = [], 0
    for mode in ("amp_bf16", "amp_fp16"):
        base = f"{args.workdir}/{mode}"
        raw = open(base + ".bin", "rb").read()
        dumped = {g: h5dump_values(args.h5dump, base + ".h5", "/" + g) for g in ("model", "master")}
        patterns, offset = set(), 0
        with h5py.File(base + ".h5", "r") as f:
            for line in open(base + ".manifest"):
                name, dtype, count = line.split()
                width = 2 if dtype in ("bf16", "fp16") else 4
                chunk = np.frombuffer(raw, dtype=np.uint8, count=int(count) * width, offset=offset)
                offset += int(count) * width
                expected = decode(chunk, dtype)
                if width == 2:
                    patterns.update(chunk.view("<u2").tolist())
                if not same(f[name][...].ravel(), expected):
                    failures.append(f"h5py: {mode} {name}")
                group, dataset = name.split("/", 1)
                if group in dumped and not same(dumped[group].get(dataset, np.zeros(0)), expected):
                    failures.append(f"h5dump: {mode} {name}")
                checked += expected.size
        if len(patterns) != 65536:
            failures.append(f"{mode}: only {len(patterns)} of the 65536 16-bit patterns were written")
    print(f"checked {checked} values; failures: {failures or 'none'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
