#!/usr/bin/env python3
"""Latency sweep report: gpubench's latency family beside the independent bench/pchase.

    latency_report.py GPUBENCH_JSON PCHASE_CSV [--tolerance=0.05]

GPUBENCH_JSON: `gpubench sweep --kernels=latency_chase --sizes=... --format=json` (one mode).
PCHASE_CSV: bench/pchase's output at the same footprints (its "# pchase on NAME (L2 N bytes)"
line gives the L2 size used to name the plateaus).

Prints every footprint (ns per load from both programs, their ratio, verification), then the
plateaus found in gpubench's curve: runs of consecutive footprints whose latency stays within
15% of the previous footprint's, at least two footprints long. A plateau is named by where its
footprints lie: all within 256 KiB (the largest L1 of the GPUs gpubench targets) "L1", all within
the L2 size "L2", all beyond it "HBM" (several L2 plateaus are numbered: the far L2 partition).
For each plateau: the median ns/load of each program over its footprints and their ratio. Exits 0
when L1, L2 and HBM plateaus were all found and each agrees within the tolerance, 1 otherwise.
"""
import csv
import json
import re
import statistics
import sys

L1_MAX_BYTES = 256 << 10
STEP = 0.15


def size_name(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def load_gpubench(path):
    text = open(path).read().strip()
    items = json.loads(text) if text else []
    out = {}
    for r in items:
        if "request" not in r:  # a SweepItemError
            print(f"gpubench error at {r.get('elements')}: {r.get('message')}")
            continue
        t = r.get("throughput", {})
        loads = float(t.get("operations", 0) or 0)
        spo = t.get("secondsPerOperation")
        if spo is None and loads > 0:
            spo = r["timing"]["medianSeconds"] / loads
        if spo is None:
            continue
        v = r.get("verification", {})
        verified = "pass" if v.get("passed") else ("skipped" if not v.get("requested") else "FAIL")
        out[int(r["request"]["elements"])] = (1e9 * float(spo), verified)
    return out


def load_pchase(path):
    l2 = None
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                m = re.search(r"L2 (\d+) bytes", line)
                if m:
                    l2 = int(m.group(1))
            elif line.strip():
                rows.append(line)
    out = {}
    for r in csv.DictReader(rows):
        out[int(r["footprint_bytes"])] = (float(r["ns_per_load"]), r["verified"])
    return out, l2


def plateaus(series):
    """Runs of footprints (sorted) whose latency changes < STEP from one to the next."""
    groups, current = [], []
    for f, ns in series:
        if current and abs(ns / current[-1][1] - 1) > STEP:
            groups.append(current)
            current = []
        current.append((f, ns))
    if current:
        groups.append(current)
    return [g for g in groups if len(g) >= 2]


def name_of(group, l2):
    sizes = [f for f, _ in group]
    if max(sizes) <= L1_MAX_BYTES:
        return "L1"
    if l2 and max(sizes) <= l2 and min(sizes) > L1_MAX_BYTES // 2:
        return "L2"
    if l2 and min(sizes) > l2:
        return "HBM"
    return "mixed"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tolerance = 0.05
    for a in sys.argv[1:]:
        if a.startswith("--tolerance="):
            tolerance = float(a.split("=", 1)[1])
    if len(args) != 2:
        print(__doc__)
        return 2
    ours = load_gpubench(args[0])
    theirs, l2 = load_pchase(args[1])
    print(f"Latency per load, gpubench latency_chase vs bench/pchase (L2 {size_name(l2) if l2 else 'unknown'})\n")
    print("| footprint | gpubench ns/load | pchase ns/load | ratio | verified (gpubench/pchase) |")
    print("|---|---:|---:|---:|---|")
    for f in sorted(set(ours) | set(theirs)):
        a, b = ours.get(f), theirs.get(f)
        ratio = f"{a[0] / b[0]:.3f}" if a and b and b[0] > 0 else "-"
        print(f"| {size_name(f)} | {f'{a[0]:.2f}' if a else '-'} | {f'{b[0]:.2f}' if b else '-'} "
              f"| {ratio} | {a[1] if a else '-'}/{b[1] if b else '-'} |")
    found = plateaus(sorted((f, v[0]) for f, v in ours.items()))
    print(f"\nPlateaus (consecutive footprints within {100 * STEP:.0f}% of each other, "
          f"named by footprint: L1 <= {size_name(L1_MAX_BYTES)}, L2 <= L2 size, HBM beyond)\n")
    print("| plateau | footprints | gpubench ns/load | pchase ns/load | ratio | within "
          f"{100 * tolerance:.0f}% |")
    print("|---|---|---:|---:|---:|---|")
    names = {}
    l2_count = 0
    for g in found:
        name = name_of(g, l2)
        if name == "L2":
            l2_count += 1
            if l2_count > 1:
                name = f"L2 ({l2_count})"
        sizes = [f for f, _ in g]
        a = statistics.median(ns for _, ns in g)
        common = [theirs[f][0] for f in sizes if f in theirs]
        b = statistics.median(common) if common else None
        ok = b is not None and abs(a / b - 1) <= tolerance
        names.setdefault(name.split(" ")[0], []).append(ok)
        print(f"| {name} | {size_name(sizes[0])} .. {size_name(sizes[-1])} | {a:.2f} | "
              f"{f'{b:.2f}' if b is not None else '-'} | {f'{a / b:.3f}' if b else '-'} | "
              f"{'yes' if ok else 'NO'} |")
    verified = all(v[1] == "pass" for v in ours.values()) and all(
        v[1] == "pass" for v in theirs.values())
    missing = [n for n in ("L1", "L2", "HBM") if n not in names]
    met = not missing and all(all(v) for v in names.values()) and verified and ours
    print()
    if missing:
        print(f"plateaus not found: {', '.join(missing)}")
    if not verified:
        print("a run did not verify (see the table)")
    print(f"Goal (L1, L2 and HBM plateaus found; pchase agrees within {100 * tolerance:.0f}% on "
          f"each): {'MET' if met else 'NOT MET'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
