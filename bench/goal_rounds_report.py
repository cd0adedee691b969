#!/usr/bin/env python3
"""Issue #19's goal table over rounds (bench/run_device_goal_rounds.sh).

    python3 bench/goal_rounds_report.py DIR

DIR/round*/server.csv (gpubench sweep CSV, cold and hot) and DIR/round*/torch.csv
(bench/torch_add.py). Per dtype x N x mode: the best gpubench add variant is the one with the
lowest median over the rounds of its per-round medians; its ratio to torch.add and to CUB is taken
in each round against the same round's figures (their time / ours: >= 1 means ours is at least as
fast), and the row reports the median ratio and the range. A row is met when the median ratios are
>= 1.00 (and >= 92% of 4.8 TB/s at 256Mi, >= 4.15 TB/s at 16Mi hot f16/bf16); a missed row whose
ratio range reaches 1.00 is marked a tie within the rounds' spread.
"""
import csv
import glob
import os
import statistics
import sys

DATASHEET_BYTES_PER_SECOND = 4.8e12  # H200 HBM3e (issue #7 / #19: >= 92% at 256Mi)
HOT_16MI_16BIT_GOAL = 4.15e12  # issue #19: 16Mi hot, f16 and bf16
ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def human(n):
    for factor, suffix in ((1 << 30, "Gi"), (1 << 20, "Mi"), (1 << 10, "Ki")):
        if n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)


def read_round(d):
    """({(kernel, dtype, n, mode): median_seconds}, {(dtype, n, mode): torch median_seconds})."""
    ours, torch = {}, {}
    path = os.path.join(d, "server.csv")
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                if r.get("kernel") in (None, "kernel") or not r.get("median_seconds"):
                    continue
                if r.get("verified") not in ("pass", None) or r.get("error"):
                    continue
                ours[(r["kernel"], r["dtype"], int(r["elements"]), r["cache_mode"])] = float(
                    r["median_seconds"])
    return ours, read_torch(os.path.join(d, "torch.csv"))


def read_torch(path):
    """{(dtype, n, mode): median_seconds} of a bench/torch_add.py CSV ({} when absent)."""
    torch = {}
    if os.path.exists(path):
        with open(path) as f:
            for row in csv.reader(f):
                if not row or row[0] == "kernel" or not row[0].startswith("torch_add_"):
                    continue
                kernel, n, mode, _reps, median = row[:5]
                torch[(kernel[len("torch_add_"):], int(n), mode)] = float(median)
    return torch


def main(d):
    dirs = [p for p in sorted(glob.glob(os.path.join(d, "round*"))) if read_round(p)[0]]
    rounds = [read_round(p) for p in dirs]
    # torch.add again on the legacy default stream (run_device_goal_rounds.sh,
    # TORCH_DEFAULT_STREAM_SIZES), beside the main torch.csv's stream.
    default_stream = [read_torch(os.path.join(p, "torch_default.csv")) for p in dirs]
    best_of = {}
    if not rounds:
        print("No rounds with server results.")
        return
    print(f"# Issue #19 goal table over {len(rounds)} round(s)\n")
    print("Ratio = their time / ours in the same round (>= 1.00: ours at least as fast); the "
          "median over rounds, and the range.\n")
    print("| dtype | N | mode | best variant | median µs | vs torch.add | vs CUB | TB/s | % of 4.8 TB/s | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = sorted({(k[1], k[2], k[3]) for ours, _ in rounds for k in ours if k[0].startswith("add_")},
                  key=lambda k: ({"f32": 0, "f16": 1, "bf16": 2}.get(k[0], 3), k[1], k[2]))
    met = ties = missed = unevaluated = 0
    for dtype, n, mode in rows:
        variants = {k[0] for ours, _ in rounds for k in ours
                    if k[0].startswith("add_") and k[1:] == (dtype, n, mode)}
        per_variant = {v: [ours[(v, dtype, n, mode)] for ours, _ in rounds
                           if (v, dtype, n, mode) in ours] for v in variants}
        best = min(per_variant, key=lambda v: statistics.median(per_variant[v]))
        best_of[(dtype, n, mode)] = best
        t = statistics.median(per_variant[best])
        vs_torch, vs_cub = [], []
        for ours, torch in rounds:
            mine = ours.get((best, dtype, n, mode))
            if mine is None:
                continue
            if (dtype, n, mode) in torch:
                vs_torch.append(torch[(dtype, n, mode)] / mine)
            cub = ours.get((f"cub_add_{dtype}", dtype, n, mode))
            if cub is not None:
                vs_cub.append(cub / mine)
        tbps = 3 * n * ELEMENT_BYTES[dtype] / t
        pct = 100 * tbps / DATASHEET_BYTES_PER_SECOND

        def cell(v):
            if not v:
                return "-"
            return f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f})" if len(v) > 1 else f"{v[0]:.3f}"

        if not vs_torch or not vs_cub:
            unevaluated += 1
            verdict = "not evaluated (no torch.add or CUB figure)"
        else:
            ratio_ok = statistics.median(vs_torch) >= 1.0 and statistics.median(vs_cub) >= 1.0
            size_ok = (n < (256 << 20) or pct >= 92) and not (
                n == 16 << 20 and mode == "hot" and dtype != "f32" and tbps < HOT_16MI_16BIT_GOAL)
            if ratio_ok and size_ok:
                met += 1
                verdict = "met"
            elif size_ok and max(vs_torch) >= 1.0 and max(vs_cub) >= 1.0:
                ties += 1
                verdict = "**tie**: a median ratio under 1.00, but a round at or above it"
            else:
                missed += 1
                verdict = "**miss**"
        print(f"| {dtype} | {human(n)} | {mode} | {best} | {t * 1e6:.2f} | {cell(vs_torch)} | "
              f"{cell(vs_cub)} | {tbps / 1e12:.3f} | {pct:.1f}% | {verdict} |")
    print(f"\n{met} met, {ties} ties within the rounds' spread, {missed} missed, {unevaluated} not "
          f"evaluated, of {len(rows)} rows.")
    extra = sorted({k for t in default_stream for k in t if k in best_of})
    if extra:
        print("\ntorch.add on the legacy default stream (torch_default.csv), same rounds:\n")
        print("| dtype | N | mode | best variant | vs torch.add (default stream) |")
        print("|---|---|---|---|---|")
        for key in extra:
            best = best_of[key]
            v = [t[key] / ours[(best,) + key] for (ours, _), t in zip(rounds, default_stream)
                 if key in t and (best,) + key in ours]
            print(f"| {key[0]} | {human(key[1])} | {key[2]} | {best} | "
                  f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f}) |")


if __name__ == "__main__":
    main(sys.argv[1])
