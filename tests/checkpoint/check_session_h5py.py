#!/usr/bin/env python3
"""h5py reads a session checkpoint by layer name: every tensor under model/<name> with its
shape and the session's exact weights, the optimizer state flat beside it."""
import argparse
import json
import os
import subprocess
import sys

import h5py
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--writer", required=True)
p.add_argument("--workdir", required=True)
a = p.parse_args()
path = os.path.join(a.workdir, "session_h5py.h5")
out = subprocess.run([a.writer, path], check=True, capture_output=True, text=True).stdout
expected = json.loads(out.strip().splitlines()[-1])
failures = []
with h5py.File(path, "r") as f:
    fmt = f.attrs["format"]
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt  # kamp writes fixed-length strings
    if fmt != "kamp-session":
        failures.append(f"format attribute is {fmt!r}")
    for name, (shape, values) in expected.items():
        d = f["model/" + name]
        if list(d.shape) != shape or d.dtype != np.float32:
            failures.append(f"model/{name}: shape {d.shape} {d.dtype}, expected {shape} float32")
        elif not np.array_equal(d[...].ravel(), np.array(values, dtype=np.float32)):
            failures.append(f"model/{name}: values differ from the session's weights")
    if f["model/layers.0.weight"].shape != (5, 3):
        failures.append("layers.0.weight is not (out, in) = (5, 3)")
    for state in ("moment1", "moment2"):
        if state not in f["optimizer"]:
            failures.append(f"optimizer/{state} missing")
os.remove(path)
for x in failures:
    print("FAIL:", x)
print(f"{len(expected)} tensors read by name" if not failures else "session checkpoint not read as expected")
sys.exit(1 if failures else 0)
