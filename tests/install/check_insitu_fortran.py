#!/usr/bin/env python3
"""examples/insitu_fortran on 1 and 2 ranks: the 2-rank loss curve (each rank its own half of
the points, gradients summed by kamp) agrees with the 1-rank curve on the same samples within
1e-4 relative at every step; the checkpoint the Fortran program wrote is read by h5py by layer
name with the config's shapes, and kamp-inspect reads it."""
import argparse
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--program", required=True)
p.add_argument("--mpiexec", required=True)
p.add_argument("--mpiexec-flags", default="")
p.add_argument("--inspect", required=True)
p.add_argument("--workdir", required=True)
a = p.parse_args()
shutil.rmtree(a.workdir, ignore_errors=True)
os.makedirs(a.workdir)
one, two = (os.path.join(a.workdir, f"loss_{n}_ranks.txt") for n in (1, 2))
checkpoint = os.path.join(a.workdir, "surrogate.h5")
flags = a.mpiexec_flags.split("|") if a.mpiexec_flags else []
for command in ([a.mpiexec, "-n", "1", *flags, a.program, one, checkpoint],
                [a.mpiexec, "-n", "2", *flags, a.program, two]):
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True)

failures = []
c1, c2 = np.loadtxt(one), np.loadtxt(two)
if c1.shape != c2.shape or c1.size < 100:
    failures.append(f"loss curves of {c1.size} and {c2.size} steps")
else:
    worst = float(np.max(np.abs(c1 - c2) / np.abs(c1)))
    print(f"{c1.size} steps: largest relative difference between the 1- and 2-rank losses {worst:.2e} (allowed 1e-4)")
    if not worst <= 1e-4:
        failures.append(f"the 2-rank loss curve differs from the 1-rank one by {worst:.2e} relative")

expected = {"layers.0.weight": (32, 2), "layers.0.bias": (32,), "layers.1.weight": (32, 32), "layers.1.bias": (32,),
            "layers.2.weight": (2, 32), "layers.2.bias": (2,)}
with h5py.File(checkpoint, "r") as f:
    fmt = f.attrs["format"]
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    if fmt != "kamp-session":
        failures.append(f"format attribute {fmt!r}")
    for name, shape in expected.items():
        d = f["model/" + name]
        if d.shape != shape or d.dtype != np.float32 or not np.all(np.isfinite(d[...])):
            failures.append(f"model/{name}: {d.shape} {d.dtype}, expected {shape} float32, finite")
    if set(f["model"].keys()) != set(expected):
        failures.append(f"model/ holds {sorted(f['model'].keys())}")
    if int(f.attrs["train_steps"]) != c1.size:
        failures.append(f"train_steps {int(f.attrs['train_steps'])}, the program took {c1.size}")

inspected = subprocess.run([a.inspect, checkpoint], capture_output=True, text=True)
print(inspected.stdout, inspected.stderr)
if inspected.returncode != 0 or "layers.2.weight" not in inspected.stdout or "kamp session" not in inspected.stdout:
    failures.append("kamp-inspect did not read the session checkpoint")
for x in failures:
    print("FAIL:", x)
sys.exit(1 if failures else 0)
