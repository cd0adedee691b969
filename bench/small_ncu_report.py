#!/usr/bin/env python3
"""Table of bench/run_device_small_ncu.sh's Nsight Compute counters, one row per kernel.

  bench/small_ncu_report.py RESULTS_DIR > RESULTS_DIR/report.md

Reads ncu_torch.csv and ncu_server.csv (ncu --csv --page raw --print-units base: a header row, a
units row, one row per profiled launch) and prints the median of each counter per kernel name
(and grid), with the launch count.
"""
import csv
import os
import re
import statistics
import sys

D = sys.argv[1]
COLUMNS = [("gpu__time_duration.sum", "duration µs", 1e-3, "{:.3f}"),
           ("dram__bytes_read.sum", "DRAM read MB", 1e-6, "{:.2f}"),
           ("dram__bytes_write.sum", "DRAM write MB", 1e-6, "{:.2f}"),
           ("lts__t_sector_hit_rate.pct", "L2 hit %", 1, "{:.1f}"),
           ("launch__grid_size", "grid", 1, "{:.0f}"),
           ("launch__block_size", "block", 1, "{:.0f}"),
           ("launch__registers_per_thread", "regs", 1, "{:.0f}"),
           ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %", 1, "{:.1f}")]


def short(name):
    """A kernel name without `void `, the anonymous namespace and its argument list; 90 characters
    at most (torch's at::native:: dropped)."""
    name = re.sub(r"^void ", "", name).replace("(anonymous namespace)::", "").replace("at::native::", "")
    if name.endswith(")"):  # cut the parameter list: from its matching "(" to the end
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name[:90]


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        lines = [l for l in f if not l.startswith("==")]  # ncu's own messages
    table = list(csv.DictReader(lines))
    return table[1:]  # the units row


def number(text):
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def report(title, path):
    launches = rows(path)
    print(f"## {title}\n")
    if not launches:
        print(f"(no launches in {os.path.basename(path)})\n")
        return
    groups = {}
    for r in launches:
        key = (short(r.get("Kernel Name", "?")), r.get("launch__grid_size", ""))
        groups.setdefault(key, []).append(r)
    print("| kernel | launches | " + " | ".join(c[1] for c in COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for (name, _), group in sorted(groups.items()):
        cells = []
        for metric, _, scale, fmt in COLUMNS:
            values = [v for v in (number(r.get(metric)) for r in group) if v is not None]
            cells.append(fmt.format(statistics.median(values) * scale) if values else "-")
        print(f"| `{name}` | {len(group)} | " + " | ".join(cells) + " |")
    print()


print("# Nsight Compute, cold (--cache-control all --clock-control none), medians per kernel\n")
if os.path.exists(os.path.join(D, "machine.txt")):
    print("```\n" + open(os.path.join(D, "machine.txt")).read().strip() + "\n```\n")
report("torch.add (bench/torch_add.py --modes=cold)", os.path.join(D, "ncu_torch.csv"))
report("gpubench server, profile mode", os.path.join(D, "ncu_server.csv"))
