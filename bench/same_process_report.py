"""Ratio tables from bench/add_same_process.py's CSV (one or more files, concatenated).

For every discipline (dtype, size, mode, hold, flush, buffers, stream): each kernel's median time over the
rounds, and its ratio to each reference (torch.add; CUB where it ran) as the median and range of
the per-round ratios reference time / kernel time (> 1: the kernel is faster).

    python3 bench/same_process_report.py small.csv [large.csv ...]
"""
import csv
import statistics
import sys
from collections import defaultdict


def read(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [r for r in csv.DictReader(line for line in f if not line.startswith("#"))
                     if r.get("median_seconds")]
    return rows


def main():
    rows = read(sys.argv[1:])
    if not rows:
        sys.exit("same_process_report.py: no rows")
    # discipline -> kernel -> round -> seconds
    table = defaultdict(lambda: defaultdict(dict))
    clocks = defaultdict(list)
    order = []
    for r in rows:
        key = (r["dtype"], int(r["elements"]), r["mode"], r["hold"], r["flush"], r["buffers"],
               r.get("stream") or "default")
        if key not in table:
            order.append(key)
        table[key][r["kernel"]][int(r["round"])] = float(r["median_seconds"])
        if float(r["clock_hz"]) > 0:
            clocks[key].append(float(r["clock_hz"]))
    print("| dtype | N | mode | hold | flush | buffers | stream | kernel | median µs | vs torch.add "
          "| vs CUB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in order:
        kernels = table[key]
        dtype = key[0]
        refs = {"torch": kernels.get("torch"), "cub": kernels.get(f"cub_add_{dtype}")}

        def ratio(ref, times):
            if not ref:
                return ""
            per_round = [ref[r] / times[r] for r in times if r in ref]
            if not per_round:
                return ""
            return (f"{statistics.median(per_round):.3f} "
                    f"({min(per_round):.3f}–{max(per_round):.3f})")
        for name, times in kernels.items():
            med = statistics.median(times.values())
            print(f"| {dtype} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {key[5]} | {key[6]} | "
                  f"{name} | "
                  f"{med * 1e6:.3f} | {'' if name == 'torch' else ratio(refs['torch'], times)} | "
                  f"{'' if name.startswith('cub_') else ratio(refs['cub'], times)} |")
    if clocks:
        print()
        print("SM clock read by the blocking kernel (median of the samples' medians), MHz:")
        for key in order:
            if clocks[key]:
                print(f"- {' '.join(str(k) for k in key)}: {statistics.median(clocks[key]) / 1e6:.0f}")


if __name__ == "__main__":
    main()
