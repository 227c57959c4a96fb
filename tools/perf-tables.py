#!/usr/bin/env python3
"""Regenerates the figure tables of docs/performance.md from benchmark JSON in docs/bench/.

    tools/perf-tables.py [--check] [--bench-dir DIR] [--doc FILE]
    tools/perf-tables.py --stamp FILE... [--cpu MODEL] [--kind KIND] [--date YYYY-MM-DD]

Reads every docs/bench/*.json and rewrites what lies between the lines
`<!-- perf-tables:begin -->` and `<!-- perf-tables:end -->` of docs/performance.md: one table
per CPU kind (AMX, AVX-512-BF16, AVX-512, AVX2, ...), headed by the CPU model, core count and
date of each file it draws on. Every row is kamp's figure beside the reference measured in the
same run and their ratio (kamp's speed over the reference's: above 1 is faster), because on a
shared machine absolute figures swing between runs and ratios do not. `--check` writes nothing
and exits 1 when the file differs from what would be generated (CI, or before a commit);
an input it cannot use (not JSON, an unknown shape, no CPU or date) is one line and exit 2.

Two kinds of JSON are read:
  - kamp-bench's (`kamp-bench --json FILE`, any suite): `context` and `results`, plus
    `roofline` for the train suite. Bandwidth kernels against the STREAM triad, GEMMs against
    OpenBLAS sgemm (or the fp32 vendor path), a training step against its roofline,
    checkpoints against raw fwrite + fsync and fread.
  - tools/bench-train.sh's (`build/bench-train.json`): kamp's tokens/s per mode against
    PyTorch on the same machine in the same session.
For each CPU kind the newest file of each kind of JSON is used; older ones are ignored.

Neither writes the CPU or the date, so each file needs them before it is read: `--stamp` adds a
`machine` object (cpu_model, cpu_kind, cores, date) taken from this machine's /proc/cpuinfo and
the file's modification date. Run it on the machine that measured, right after the benchmark.
The same keys in `context` (should kamp-bench write them one day) are read too.
Standard library only: it runs wherever python3 does, with no build."""
import argparse
import datetime
import difflib
import json
import os
import platform
import sys

BEGIN = "<!-- perf-tables:begin -->"
END = "<!-- perf-tables:end -->"
KIND_ORDER = ["AMX", "AVX-512-BF16", "AVX-512", "AVX2"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Refusal(Exception):
    """A problem with an input, reported as one line naming the file (no traceback)."""


# ---- stamping: the machine a file was measured on -------------------------------------------


def cpu_kind(flags, arch):
    """The CPU kind that decides kamp's GEMM paths (docs/gemm.md's table), from cpuinfo flags."""
    for flag, kind in (("amx_bf16", "AMX"), ("avx512_bf16", "AVX-512-BF16"), ("avx512f", "AVX-512"), ("avx2", "AVX2")):
        if flag in flags:
            return kind
    return arch or "unknown"


def this_machine():
    model, flags = None, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model name", "Hardware") and model is None:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {"cpu_model": model or platform.processor() or "unknown",
            "cpu_kind": cpu_kind(flags, platform.machine()),
            "cores": os.cpu_count()}


def stamp(paths, cpu, kind, date):
    here = this_machine()
    for path in paths:
        doc = load(path)
        machine = doc.setdefault("machine", {})
        machine.setdefault("cpu_model", cpu or here["cpu_model"])
        machine.setdefault("cpu_kind", kind or here["cpu_kind"])
        machine.setdefault("cores", here["cores"])
        # The measurement's date is the file's, not today's: a file may be stamped later.
        mtime = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
        machine.setdefault("date", date or mtime.date().isoformat())
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"{path}: {machine['cpu_kind']}, {machine['cpu_model']}, {machine['cores']} cores, {machine['date']}")


# ---- reading -------------------------------------------------------------------------------


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise Refusal(f"{path}: cannot read it: {e.strerror}")
    except ValueError as e:
        raise Refusal(f"{path}: not JSON: {e}")
    if not isinstance(doc, dict):
        raise Refusal(f"{path}: not a JSON object")
    return doc


def format_of(doc):
    if isinstance(doc.get("results"), list) and isinstance(doc.get("context"), dict):
        return "kamp-bench"
    if isinstance(doc.get("kamp_tokens_per_s"), dict) and isinstance(doc.get("pytorch_reference_tokens_per_s"), dict):
        return "bench-train"
    return None


def machine_of(path, doc):
    found = {}
    for key in ("cpu_model", "cpu_kind", "cores", "date"):
        for source in (doc.get("machine"), doc.get("context")):
            if isinstance(source, dict) and source.get(key) not in (None, ""):
                found[key] = source[key]
                break
    missing = [k for k in ("cpu_model", "cpu_kind", "date") if k not in found]
    if missing:
        raise Refusal(f"{path}: no {', '.join(missing)} (machine.* or context.*): run "
                      f"`tools/perf-tables.py --stamp {path}` on the machine that measured it")
    try:
        datetime.date.fromisoformat(str(found["date"]))
    except ValueError:
        raise Refusal(f"{path}: date {found['date']!r} is not YYYY-MM-DD")
    return found


def read_all(directory):
    files = []
    names = sorted(n for n in os.listdir(directory) if n.endswith(".json")) if os.path.isdir(directory) else []
    for name in names:
        path = os.path.join(directory, name)
        doc = load(path)
        kind = format_of(doc)
        if kind is None:
            raise Refusal(f"{path}: neither kamp-bench's JSON (context, results) nor tools/bench-train.sh's "
                          "(kamp_tokens_per_s, pytorch_reference_tokens_per_s)")
        files.append({"name": name, "path": path, "format": kind, "doc": doc, "machine": machine_of(path, doc)})
    return files


# ---- numbers as the docs write them ----------------------------------------------------------


def grouped(x):
    """An integer in groups of three, as the docs write them: 16 660."""
    return f"{round(x):,}".replace(",", " ")


def number(x, unit):
    if unit == "tokens/s":
        return grouped(x)
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def rate(x, unit):
    return f"{number(x, unit)} {unit}"


def span(values, unit=None):
    """min–max of values over shapes, as one figure when they print the same."""
    show = (lambda v: number(v, unit)) if unit else ratio
    lo, hi = show(min(values)), show(max(values))
    text = lo if lo == hi else f"{lo}–{hi}"
    return f"{text} {unit}" if unit else text


def ratio(x):
    return f"{x:.2f}"


# ---- rows --------------------------------------------------------------------------------------


def value_of(doc, name):
    for r in doc["results"]:
        if r.get("name") == name and "value" in r:
            return r["value"]
    return None


def rows_bench_train(doc):
    kamp, ref, ratios = doc["kamp_tokens_per_s"], doc["pytorch_reference_tokens_per_s"], doc.get("ratios", {})
    low = "bf16" if "bf16" in ref else "fp32"
    rows = []
    for mode in ("fp32", "amp_bf16", "pure_bf16", "amp_fp16", "amp_fp8"):
        if mode not in kamp:
            continue
        # tools/bench-train.sh's pairing: fp32 against PyTorch fp32, every other mode against
        # bf16 autocast (PyTorch fp32 where the CPU has no bf16 dot products).
        against = "fp32" if mode == "fp32" else low
        if against not in ref:
            continue
        label = "PyTorch fp32" if against == "fp32" else "PyTorch bf16 autocast"
        r = ratios.get(mode, kamp[mode] / ref[against])
        rows.append((f"training, reference GPT, `{mode}`", rate(kamp[mode], "tokens/s"),
                     f"{label} {rate(ref[against], 'tokens/s')}", ratio(r)))
    return rows


def rows_kamp_bench(doc):
    rows = []
    roofline = doc.get("roofline", {})
    for mode in ("fp32", "amp_bf16", "pure_bf16", "amp_fp16", "amp_fp8"):
        tokens = value_of(doc, f"train_tokens_per_s_{mode}")
        if tokens is None or mode not in roofline:
            continue
        r = roofline[mode]
        rows.append((f"training step `{mode}` against its roofline",
                     f"{r['step_ms']:.1f} ms ({rate(tokens, 'tokens/s')})",
                     f"GEMMs at dense vendor rates + kernels at triad or core rates: {r['roofline_ms']:.1f} ms",
                     ratio(r["fraction_of_roofline"])))

    # GEMMs: one row per (variant, path), ranges over the shapes; the reference is its own row.
    gemms = {}
    for r in doc["results"]:
        if r.get("kind") != "gemm":
            continue
        what = r["name"].split(" ", 3)[-1] if r["name"].count(" ") >= 3 else r["name"]
        ratio_key = next((k for k in r if k.startswith("ratio_to_")), None)
        if ratio_key is None:
            continue
        key = (what, r.get("path", "?"), ratio_key[len("ratio_to_"):])
        gemms.setdefault(key, []).append(r)
    references = [r for (what, _, _), rs in gemms.items() if "(reference)" in what for r in rs]
    for (what, path, against), rs in gemms.items():
        if "(reference)" in what:
            continue  # its figures are the reference column of every other row
        shapes = len(rs)
        name = f"GEMM {what} [`{path}`], {shapes} shape{'s' if shapes > 1 else ''}"
        reference = "OpenBLAS sgemm" if against == "sgemm" else "fp32 vendor path"
        if references:
            reference += " " + span([x["gflop_per_s"] for x in references], "GFLOP/s")
        rows.append((name, span([x["gflop_per_s"] for x in rs], "GFLOP/s"), reference,
                     span([x[f"ratio_to_{against}"] for x in rs])))

    # Attention's GEMMs on heads in place against the same GEMMs on contiguous heads.
    for r in doc["results"]:
        if r.get("kind") == "attention_gemm":
            rows.append((f"{r['name']} [`{r['path']}`: {r['implementation']}]", f"{r['gflop_per_s']:.1f} GFLOP/s",
                         "the same GEMM on contiguous heads", ratio(r["ratio_to_dense"])))

    triad = value_of(doc, "stream_triad_gb_per_s")
    for r in doc["results"]:
        if r.get("kind") == "bandwidth":
            reference = "STREAM triad" + (f" {triad:.1f} GB/s" if isinstance(triad, (int, float)) else "")
            rows.append((r["name"], f"{r['gb_per_s']:.1f} GB/s", reference, ratio(r["ratio_to_triad"])))
    fusion = value_of(doc, "amp.fusion_speedup")
    if isinstance(fusion, (int, float)):
        rows.append(("AMP step after the backward pass", "fused: check + update",
                     "unfused: scale, check, norm, update", ratio(fusion)))

    for mode in ("fp32", "amp_bf16", "pure_bf16", "amp_fp16", "amp_fp8"):
        c = value_of(doc, f"checkpoint_{mode}")
        if not isinstance(c, dict):
            continue
        size = f"{c['file_bytes'] / 1e6:.1f} MB"
        rows.append((f"checkpoint `{mode}` ({size}), atomic write", f"{c['write_seconds']:.3f} s",
                     "the same bytes, `fwrite` + `fsync`", ratio(c["write_speed_vs_raw_fsync"])))
        rows.append((f"checkpoint `{mode}`, read + verify", f"{c['read_seconds']:.3f} s", "the same bytes, `fread`",
                     ratio(c["read_speed_vs_raw_fread"])))
    return rows


# ---- the tables --------------------------------------------------------------------------------


def describe(f):
    m, context = f["machine"], f["doc"].get("context", {})
    what = [m["cpu_model"]]
    if m.get("cores"):
        what.append(f"{m['cores']} cores")
    if context.get("execution_space"):
        what.append(f"{context['execution_space']}, concurrency {context.get('concurrency', '?')}")
    if context.get("kamp_version"):
        what.append(f"kamp {context['kamp_version']}")
    source = "kamp-bench" if f["format"] == "kamp-bench" else "tools/bench-train.sh"
    return f"[`{f['name']}`](bench/{f['name']}) ({source}, {m['date']}): {', '.join(what)}"


def generate(files):
    if not files:
        return ("No benchmark JSON in `docs/bench/` yet: see [bench/README.md](bench/README.md) for how to add it; "
                "then `tools/perf-tables.py` writes the tables here.\n")
    kinds = sorted({f["machine"]["cpu_kind"] for f in files},
                   key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER), k))
    out = []
    for kind in kinds:
        used, rows = [], []
        for fmt, rows_of in (("bench-train", rows_bench_train), ("kamp-bench", rows_kamp_bench)):
            # The newest file of this format with figures in it (a shape-suite run has none here).
            mine = sorted((f for f in files if f["machine"]["cpu_kind"] == kind and f["format"] == fmt),
                          key=lambda f: (str(f["machine"]["date"]), f["name"]), reverse=True)
            for f in mine:
                found = rows_of(f["doc"])
                if found:
                    used.append(f)
                    rows += found
                    break
        out.append(f"### {kind}\n")
        if not used:
            names = ", ".join(f"`{f['name']}`" for f in files if f["machine"]["cpu_kind"] == kind)
            out.append(f"No figures in {names} (a shape-suite run: its table is tools/bench-scaling.sh's).\n")
            continue
        out.append("\n".join("- " + describe(f) for f in used) + "\n")
        out.append("| figure | kamp | reference, same run | ratio |\n|---|---|---|---|")
        out.extend("| " + " | ".join(cells) + " |" for cells in rows)
        out.append("")
    return "\n".join(out)


def splice(text, block, doc_path):
    lines = text.split("\n")
    try:
        begin, end = lines.index(BEGIN), lines.index(END)
    except ValueError:
        raise Refusal(f"{doc_path}: the lines {BEGIN} and {END} are missing")
    if end < begin:
        raise Refusal(f"{doc_path}: {END} comes before {BEGIN}")
    return "\n".join(lines[:begin + 1] + block.rstrip("\n").split("\n") + lines[end:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is not up to date")
    parser.add_argument("--bench-dir", default=os.path.join(REPO, "docs", "bench"))
    parser.add_argument("--doc", default=os.path.join(REPO, "docs", "performance.md"))
    parser.add_argument("--stamp", nargs="+", metavar="FILE", help="add this machine's CPU and the file's date")
    parser.add_argument("--cpu", help="with --stamp: the CPU model (or GPU) instead of /proc/cpuinfo's")
    parser.add_argument("--kind", help="with --stamp: the CPU kind instead of the one the flags give")
    parser.add_argument("--date", help="with --stamp: YYYY-MM-DD instead of the file's modification date")
    args = parser.parse_args()
    try:
        if args.stamp:
            stamp(args.stamp, args.cpu, args.kind, args.date)
            return 0
        block = generate(read_all(args.bench_dir))
        try:
            with open(args.doc) as f:
                text = f.read()
        except OSError as e:
            raise Refusal(f"{args.doc}: cannot read it: {e.strerror}")
        new = splice(text, block, args.doc)
        shown = os.path.relpath(args.doc)
    except Refusal as e:
        print(f"perf-tables: {e}", file=sys.stderr)
        return 2
    if new == text:
        print(f"perf-tables: {shown} is up to date")
        return 0
    if args.check:
        sys.stderr.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), shown,
                                                   shown + " (generated)"))
        print(f"perf-tables: {shown} differs from the benchmark JSON: run tools/perf-tables.py", file=sys.stderr)
        return 1
    with open(args.doc, "w") as f:
        f.write(new)
    print(f"perf-tables: {shown} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
