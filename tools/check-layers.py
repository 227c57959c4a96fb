#!/usr/bin/env python3
"""kamp's layers are one-way: a file includes only its own layer and those below it.

numeric -> kernels -> model's config -> network -> dist -> state -> training -> diagnostics -> apps,
bindings (the C API and Fortran module, over the training session).
Run from anywhere: `tools/check-layers.py [ROOT]` checks the tree at ROOT (default: this checkout)
and exits 1 naming every include that points up, with the rule it breaks.
"""
import pathlib
import re
import sys

# Lowest first. A file's layer and an included header's layer both come from these prefixes;
# the first prefix that matches wins.
LAYERS = [
    ("numeric", ["kernels/include/kamp/numeric/", "kernels/include/kamp/numeric.hpp", "kamp/numeric/",
                 "kamp/numeric.hpp", "kamp/config.hpp"]),
    ("kernels", ["kernels/include/kamp/", "kamp/kernels/", "kamp/kernels.hpp", "kamp/kamp.hpp", "kamp/tools/"]),
    ("config", ["model/include/kamp/model/config/", "model/src/config/", "kamp/model/config/", "config/"]),
    ("network", ["model/include/kamp/model/network/", "model/src/network/", "kamp/model/network/", "network/"]),
    ("dist", ["model/include/kamp/model/dist/", "model/src/dist/", "kamp/model/dist/", "dist/"]),
    ("state", ["model/include/kamp/model/state/", "model/src/state/", "kamp/model/state/", "state/"]),
    ("training", ["model/include/kamp/model/training/", "model/src/training/", "kamp/model/training/",
                  "training/"]),
    ("diagnostics", ["model/include/kamp/model/diagnostics/", "model/src/diagnostics/",
                     "kamp/model/diagnostics/", "diagnostics/"]),
    ("model", ["model/include/kamp/model.hpp", "kamp/model.hpp"]),
    ("apps", ["apps/"]),
    ("bindings", ["bindings/"]),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def layer_of(path, prefixes_of_files):
    for name, prefixes in LAYERS:
        for p in prefixes:
            if p in prefixes_of_files and path.startswith(p):
                return name
    return None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    file_prefixes = {p for _, ps in LAYERS for p in ps if p.startswith(("kernels/", "model/", "apps/", "bindings/"))}
    header_prefixes = {p for _, ps in LAYERS for p in ps if not p.startswith(("kernels/", "model/", "apps/", "bindings/"))}
    problems, checked = [], 0
    for f in sorted(root.glob("**/*")):
        rel = f.relative_to(root).as_posix()
        if f.suffix not in (".hpp", ".cpp", ".h") or not f.is_file():
            continue
        own = layer_of(rel, file_prefixes)
        if own is None:
            continue
        checked += 1
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = layer_of(m.group(1), header_prefixes)
            if target is not None and RANK[target] > RANK[own]:
                problems.append(f"{rel}:{n}: {own} includes {m.group(1)} ({target}, a layer above it)")
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} includes point up a layer; the layers, lowest first: "
              + " -> ".join(n for n, _ in LAYERS)
              + ". Move what both need down to the lower layer, or the including file up.", file=sys.stderr)
        return 1
    print(f"check-layers: {checked} files, every include points down or sideways")
    return 0


if __name__ == "__main__":
    sys.exit(main())
