"""Joins gpubench's occupancy section with ncu's metrics for the same launches.

    python3 bench/occupancy_report.py occ_gpubench.jsonl occ_ncu.csv
"""
import csv
import json
import sys


def main():
    ours = {}
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                ours[r["request"]["kernel"]] = r
    ncu = {}
    with open(sys.argv[2]) as f:
        rows = list(csv.reader(f))
    header = None
    for row in rows:
        if len(row) > 1 and row[1] == "ID":
            header = row[1:]
            continue
        if header is None or len(row) < 2 or not row[1].isdigit():
            continue
        rec = dict(zip(header, row[1:]))
        ncu.setdefault(row[0], {})[rec["Metric Name"]] = float(rec["Metric Value"].replace(",", ""))
    print("| kernel | N | block | gpubench theoretical | ncu theoretical | limits W/R/S/B gpubench | "
          "limits W/R/S/B ncu | regs gpubench/ncu | achieved gpubench (CUPTI) | achieved ncu | Δ pp | "
          "DRAM % gpubench/ncu |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    big = 2147483647
    for kernel, r in ours.items():
        o = r.get("occupancy", {})
        m = ncu.get(kernel, {})
        lim = lambda v: "-" if v in (None, big) else str(v)
        ours_limits = "/".join(lim(o.get(k)) for k in (
            "blocksLimitWarps", "blocksLimitRegisters", "blocksLimitSharedMemory", "blocksLimitBlocks"))
        ncu_limits = "/".join(lim(int(m[k])) if k in m else "?" for k in (
            "launch__occupancy_limit_warps", "launch__occupancy_limit_registers",
            "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_blocks"))
        ach = o.get("achievedOccupancy")
        ach_ncu = m.get("sm__warps_active.avg.pct_of_peak_sustained_active")
        delta = f"{100 * ach - ach_ncu:+.1f}" if ach is not None and ach_ncu is not None else "-"
        print(f"| {kernel} | {r['request']['elements']} | {r['request']['blockSize']} | "
              f"{100 * o.get('theoreticalOccupancy', 0):.1f}% | "
              f"{m.get('sm__maximum_warps_per_active_cycle_pct', float('nan')):.1f}% | {ours_limits} | "
              f"{ncu_limits} | {o.get('registersPerThread')}/{int(m.get('launch__registers_per_thread', -1))} | "
              f"{'-' if ach is None else f'{100 * ach:.1f}%'} | "
              f"{'-' if ach_ncu is None else f'{ach_ncu:.1f}%'} | {delta} | "
              f"{o.get('dramThroughputPercent', float('nan')):.1f}/"
              f"{m.get('dram__throughput.avg.pct_of_peak_sustained_elapsed', float('nan')):.1f} |")
        if not o.get("achievedOccupancy"):
            print(f"|   ({kernel}: achieved unavailable: {o.get('achievedUnavailableReason')}) |")
    print()
    for kernel, r in ours.items():
        print(f"- {kernel}: {r.get('explanation')}")


if __name__ == "__main__":
    main()
