#!/usr/bin/env python3
"""Tables of bench/run_device_sweep_full.sh (issue #15's full-catalog sweep goal).

    python3 bench/sweep_full_report.py DIR

DIR holds steps.txt (one "sweep gpu=G v1|v2 KERNEL MODE rc=R wall_s=S" line per sweep) and the
sweeps' CSVs ({v1,v2}_gpu{G}_{KERNEL}_{MODE}.csv). Prints the sweep time of v1 and v2 over the
variants both finished (the sum of the per-variant sweep wall times of both lanes), their ratio,
and v2's medians against v1's on the same GPU, item by item.
"""
import csv
import os
import re
import statistics
import sys

STEP = re.compile(r"^sweep gpu=(\d+) (v1|v2) (\S+) (cold|hot) rc=(-?\d+) wall_s=([0-9.]+)$")


def main(d):
    walls = {}  # (who, kernel, mode) -> (gpu, rc, seconds)
    with open(os.path.join(d, "steps.txt")) as f:
        for line in f:
            m = STEP.match(line.strip())
            if m:
                gpu, who, k, mode, rc, s = m.groups()
                walls[(who, k, mode)] = (int(gpu), int(rc), float(s))
    kernels = sorted({k for (_, k, _) in walls}, key=lambda k: min(
        i for i, (key) in enumerate(walls) if key[1] == k))
    done = [k for k in kernels
            if all(walls.get((w, k, m), (0, 1, 0))[1] == 0 for w in ("v1", "v2") for m in ("cold", "hot"))]
    missing = [k for k in kernels if k not in done]
    print("# Full-catalog default sweep, v1 vs v2 (issue #15)\n")
    print(f"Variants with all four sweeps (v1/v2 x cold/hot) finished: {len(done)} of {len(kernels)} started"
          + (f"; incomplete: {', '.join(missing)}" if missing else "") + ".\n")
    print("| mode | v1 sweep s | v2 sweep s | v1 / v2 |")
    print("|---|---|---|---|")
    tot = {"v1": 0.0, "v2": 0.0}
    for mode in ("cold", "hot"):
        s = {w: sum(walls[(w, k, mode)][2] for k in done) for w in ("v1", "v2")}
        for w in s:
            tot[w] += s[w]
        ratio = s["v1"] / s["v2"] if s["v2"] > 0 else float("nan")
        print(f"| {mode} | {s['v1']:.1f} | {s['v2']:.1f} | {ratio:.2f}x |")
    ratio = tot["v1"] / tot["v2"] if tot["v2"] > 0 else float("nan")
    print(f"| **both** | **{tot['v1']:.1f}** | **{tot['v2']:.1f}** | **{ratio:.2f}x** |")
    items = len(done) * 2 * 3
    print(f"\n{items} items ({len(done)} variants x 3 sizes x 2 modes). Goal: v2 at least 4x faster "
          f"than v1: {'met' if ratio >= 4 else 'MISSED'} ({ratio:.2f}x).\n")

    # Medians, v2 against v1, same GPU, same item.
    rows = []
    for k in done:
        for mode in ("cold", "hot"):
            gpu = walls[("v1", k, mode)][0]
            med = {}
            for w in ("v1", "v2"):
                p = os.path.join(d, f"{w}_gpu{gpu}_{k}_{mode}.csv")
                with open(p) as f:
                    for r in csv.DictReader(f):
                        if r.get("error"):
                            continue
                        med[(w, r["elements"])] = (float(r["median_seconds"]), int(r["samples"]))
            for n in sorted({n for (_, n) in med}, key=int):
                if ("v1", n) in med and ("v2", n) in med:
                    (m1, s1), (m2, s2) = med[("v1", n)], med[("v2", n)]
                    rows.append((k, n, mode, gpu, m1, s1, m2, s2, m2 / m1 - 1))
    print("| variant | N | mode | GPU | v1 median µs (samples) | v2 median µs (samples) | v2 vs v1 |")
    print("|---|---|---|---|---|---|---|")
    names = {"1048576": "1Mi", "16777216": "16Mi", "268435456": "256Mi"}
    for k, n, mode, gpu, m1, s1, m2, s2, dv in rows:
        print(f"| {k} | {names.get(n, n)} | {mode} | {gpu} | {m1 * 1e6:.2f} ({s1}) | {m2 * 1e6:.2f} ({s2}) | {dv * 100:+.2f}% |")
    for n in ("16777216", "268435456"):
        ds = [abs(r[8]) for r in rows if r[1] == n]
        if ds:
            within = sum(1 for x in ds if x <= 0.005)
            print(f"\n{names[n]}: |v2/v1 - 1| median {statistics.median(ds) * 100:.2f}%, max "
                  f"{max(ds) * 100:.2f}%; {within} of {len(ds)} items within 0.5%.")


if __name__ == "__main__":
    main(sys.argv[1])
