"""Builds the side-by-side table from one device run.

    python3 bench/report.py server.csv torch.csv events.csv

server.csv: `gpubench sweep --format=csv` output (all modes concatenated, headers repeated ok).
torch.csv / events.csv: rows kernel,elements,mode,reps,median_seconds,bandwidth_bytes_per_second.
Ratios are other_time / variant_time: above 1.00 the variant is faster.
"""
import csv
import sys


def read_simple(path):
    out = {}
    with open(path) as f:
        for row in csv.reader(f):
            if not row or row[0] == "kernel":
                continue
            kernel, n, mode, _reps, median, _bw = row[:6]
            out[(kernel, int(n), mode)] = float(median)
    return out


def launch(r):
    """block x items, or "lib" where the library picks its own launch."""
    if r.get("grid_size") in (None, "", "0"):
        return "lib"
    return f'{r["block_size"]}x{r.get("items_per_thread", "?")}'


def human(n):
    for factor, suffix in ((1 << 30, "Gi"), (1 << 20, "Mi"), (1 << 10, "Ki")):
        if n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)


def main():
    server_path, torch_path, events_path = sys.argv[1:4]
    torch = read_simple(torch_path)
    events = read_simple(events_path)
    rows = []
    with open(server_path) as f:
        for row in csv.DictReader(f):
            if row["kernel"] == "kernel" or not row.get("median_seconds"):
                continue
            rows.append(row)
    by_key = {(r["kernel"], int(r["elements"]), r["cache_mode"]): r for r in rows}
    print("| variant | launch | dtype | N | mode | median | GB/s | % of peak | vs torch.add | vs cub | "
          "independent events Δ | verified |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        kernel, dtype = r["kernel"], r["dtype"]
        n, mode = int(r["elements"]), r["cache_mode"]
        t = float(r["median_seconds"])
        bw = float(r["bandwidth_bytes_per_second"]) / 1e9
        peak = r["percent_of_peak"] or "-"
        vs_torch = "-"
        if kernel.startswith(("add_", "cub_add_")):
            tt = torch.get((f"torch_add_{dtype}", n, mode))
            vs_torch = f"{tt / t:.3f}" if tt else "-"
        vs_cub = "-"
        cub = by_key.get((f"cub_add_{dtype}", n, mode))
        if cub and kernel.startswith("add_") or (cub and kernel.startswith("cub_")):
            vs_cub = f"{float(cub['median_seconds']) / t:.3f}"
        ev = events.get((kernel, n, mode))
        delta = f"{100 * (t - ev) / ev:+.1f}%" if ev else "-"
        print(f"| {kernel} | {launch(r)} | {dtype} | {human(n)} | {mode} | {t * 1e6:.2f} us | {bw:.0f} | {peak} | "
              f"{vs_torch} | {vs_cub} | {delta} | {r['verified']} |")
    print()
    print_goal(rows, torch)
    print()
    print("torch.add reference (CUDA events, same cold/hot discipline):")
    print("| torch | N | mode | median | GB/s |")
    print("|---|---|---|---|---|")
    for (kernel, n, mode), t in sorted(torch.items()):
        size = {"f32": 4}.get(kernel.rsplit("_", 1)[1], 2)
        print(f"| {kernel} | {human(n)} | {mode} | {t * 1e6:.2f} us | {3 * n * size / t / 1e9:.0f} |")


DATASHEET_BYTES_PER_SECOND = 4.8e12  # H200 HBM3e datasheet figure (issue #7's goal: >= 92%)
HOT_16MI_16BIT_GOAL = 4.15e12  # issue #19: 16Mi hot, f16 and bf16, at least 4.15 TB/s


def print_goal(rows, torch):
    """Best gpubench add variant per dtype x N x mode against torch.add and CUB (issue #7)."""
    print("Goal table: best gpubench variant (not cub_*) vs torch.add and cub::DeviceTransform; "
          "ratio = their time / ours (>= 1.00 means ours is at least as fast)")
    print("| dtype | N | mode | best variant | launch | median | vs torch.add | vs CUB | % of 4.8 TB/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["dtype"], int(r["elements"]), r["cache_mode"]) for r in rows
                   if r["kernel"].startswith("add_")},
                  key=lambda k: ({"f32": 0, "f16": 1, "bf16": 2}[k[0]], k[1], k[2]))
    misses = unevaluated = 0
    for dtype, n, mode in keys:
        ours = [r for r in rows if r["kernel"].startswith("add_") and r["dtype"] == dtype and
                int(r["elements"]) == n and r["cache_mode"] == mode and r["verified"] == "pass"]
        best = min(ours, key=lambda r: float(r["median_seconds"]))
        t = float(best["median_seconds"])
        cub = next((float(r["median_seconds"]) for r in rows if r["kernel"] == f"cub_add_{dtype}"
                    and int(r["elements"]) == n and r["cache_mode"] == mode), None)
        tt = torch.get((f"torch_add_{dtype}", n, mode))
        vs_torch = tt / t if tt else None
        vs_cub = cub / t if cub else None
        pct = 100 * float(best["bandwidth_bytes_per_second"]) / DATASHEET_BYTES_PER_SECOND
        fmt = lambda x: f"{x:.3f}" if x is not None else "-"
        if vs_torch is None or vs_cub is None:
            unevaluated += 1
            verdict = " (not evaluated: no torch.add or CUB figure)"
        else:
            ok = (vs_torch >= 1.0 and vs_cub >= 1.0 and (n < (256 << 20) or pct >= 92) and
                  not (n == 16 << 20 and mode == "hot" and dtype != "f32" and
                       float(best["bandwidth_bytes_per_second"]) < HOT_16MI_16BIT_GOAL))
            misses += not ok
            verdict = "" if ok else " **miss**"
        print(f"| {dtype} | {human(n)} | {mode} | {best['kernel']} | {launch(best)} | {t * 1e6:.2f} us | "
              f"{fmt(vs_torch)} | {fmt(vs_cub)} | {pct:.1f}%{verdict} |")
    print(f"\n{misses} of {len(keys) - unevaluated} evaluated cases miss the goal (ratio >= 1.00 vs "
          f"both; >= 92% at 256Mi; >= 4.15 TB/s at 16Mi hot f16/bf16); {unevaluated} not evaluated")


if __name__ == "__main__":
    main()
