#!/usr/bin/env python3
"""Tables for issues #15/#19 ("measure round 3") from the raw files of bench/run_device_measure2.sh.

  bench/measure_round3_report.py RESULTS_DIR > RESULTS_DIR/report.md

Reads cold_{memset,clean}.csv (gpubench sweeps), ncu_time.csv + ncu_run_*.json (Nsight Compute on
the server, profile mode), torch_{clean,memset}.csv, ncu_flush_*.csv, alt_{gpubench,torch}.csv,
hot_server_*.json + hot_timers.csv, ncu_256_*.csv. Missing files leave their table out.
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

D = sys.argv[1]
MI = 1 << 20
NCU_KERNELS = ["add_f32", "add_f32x4", "add_f16x8_pack"]
SCALE = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
         "second": 1.0, "s": 1.0, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9,
         "%": 1.0, "byte/second": 1.0, "Kbyte/second": 1e3, "Mbyte/second": 1e6,
         "Gbyte/second": 1e9, "Tbyte/second": 1e12, "byte/s": 1.0, "Gbyte/s": 1e9, "Tbyte/s": 1e12}


def path(name):
    return os.path.join(D, name)


def exists(name):
    return os.path.exists(path(name)) and os.path.getsize(path(name)) > 0


def size_name(n):
    return f"{n // MI}Mi" if n % MI == 0 else str(n)


def us(seconds):
    return f"{seconds * 1e6:.2f} us" if seconds is not None else "-"


def pct(a, b):
    return f"{100 * (a / b - 1):+.2f}%" if a and b else "-"


def gpubench_csv(name):
    """(kernel, elements) -> row dict, from a gpubench --format=csv file (header lines skipped)."""
    out = {}
    if not exists(name):
        return out
    for r in csv.DictReader(line for line in open(path(name)) if line.strip()):
        if r.get("kernel") in (None, "kernel") or not r.get("median_seconds"):
            continue
        out[(r["kernel"], int(r["elements"]))] = r
    return out


def torch_csv(name, prefix_round=False):
    """(dtype, elements, mode) -> [median seconds, ...] from torch_add.py output."""
    out = {}
    if not exists(name):
        return out
    for r in csv.reader(open(path(name))):
        if prefix_round:
            r = r[1:]
        if len(r) < 6 or not r[0].startswith("torch_add_"):
            continue
        out.setdefault((r[0][len("torch_add_"):], int(r[1]), r[2]), []).append(float(r[4]))
    return out


def ncu_long(name):
    """Rows of an `ncu --csv` (details page) file: [(launch id, kernel, {metric: value})]."""
    if not exists(name):
        return []
    lines = [line for line in open(path(name)) if line.startswith('"')]
    launches = {}
    for r in csv.DictReader(lines):
        try:
            v = float(r["Metric Value"].replace(",", "")) * SCALE.get(r["Metric Unit"], 1.0)
        except (KeyError, ValueError):
            continue
        key = (int(r["ID"]), r["Kernel Name"])
        launches.setdefault(key, {})[r["Metric Name"]] = v
    return [(i, k, m) for (i, k), m in sorted(launches.items())]


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    if exists("machine.txt"):
        print("## Machine\n\n```\n" + open(path("machine.txt")).read().strip() + "\n```\n")
    if exists("steps.txt"):
        print("## Steps (rc, wall seconds)\n\n```\n" + open(path("steps.txt")).read().strip() + "\n```\n")

    # ---- cold: old flush vs new flush vs ncu -------------------------------------------------
    old, new = gpubench_csv("cold_memset.csv"), gpubench_csv("cold_clean.csv")
    ncu = []
    if exists("ncu_time.csv"):
        rows = list(csv.reader(open(path("ncu_time.csv"))))
        start = next((i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r), None)
        if start is not None:
            h, units = rows[start], rows[start + 1]
            col = h.index("gpu__time_duration.sum")
            scale = SCALE.get(units[col], 1e-9)
            for r in rows[start + 2:]:
                if len(r) > col and r[col]:
                    ncu.append(float(r[col].replace(",", "")) * scale)
    ncu_med = {}
    i = 0
    for k in NCU_KERNELS:
        for el in (16 * MI, 256 * MI):
            name = f"ncu_run_{k}_{size_name(el)}.json"
            if not exists(name):
                continue
            try:
                r = json.load(open(path(name)))
                launches = int(r["timing"]["samples"]) + 1  # profile launches + verification
            except (ValueError, KeyError):
                continue
            chunk = ncu[i:i + launches]
            i += launches
            if chunk:
                ncu_med[(k, el)] = (statistics.median(chunk), len(chunk))
    if old or new:
        print("## Cold: old flush (memset, dirty L2) vs new flush (clean read pass) vs Nsight Compute\n")
        print("gpubench cold medians from the same sweep options on two servers; ncu = median "
              "gpu__time_duration of the profiled launches (--cache-control all, clocks not locked).\n")
        print("| kernel | elements | memset flush | clean flush | clean/memset - 1 | ncu | memset vs ncu | clean vs ncu |")
        print("|---|---|---|---|---|---|---|---|")
        for key in sorted(set(old) | set(new), key=lambda k: (k[1], k[0])):
            o = float(old[key]["median_seconds"]) if key in old else None
            n = float(new[key]["median_seconds"]) if key in new else None
            nc = ncu_med.get(key)
            nct = nc[0] if nc else None
            print(f"| {key[0]} | {size_name(key[1])} | {us(o)} | {us(n)} | {pct(n, o)} | "
                  f"{us(nct) + f' ({nc[1]})' if nc else '-'} | {pct(o, nct)} | {pct(n, nct)} |")
        bad = [k for k, r in list(old.items()) + list(new.items()) if r.get("verified") != "pass"]
        if bad:
            print(f"\nNot verified: {bad}")
        print()

    # ---- torch.add under each flush and the cold goal rows -----------------------------------
    tc, tm = torch_csv("torch_clean.csv"), torch_csv("torch_memset.csv")
    if tc or tm:
        print("## torch.add (bench/torch_add.py), cold with each flush, hot\n")
        print("| dtype | elements | cold, memset flush | cold, clean flush | hot |")
        print("|---|---|---|---|---|")
        for key in sorted({(d, n) for d, n, _ in list(tc) + list(tm)}, key=lambda k: (k[0], k[1])):
            print(f"| {key[0]} | {size_name(key[1])} | {us(med(tm.get(key + ('cold',), [])))} | "
                  f"{us(med(tc.get(key + ('cold',), [])))} | {us(med(tc.get(key + ('hot',), [])))} |")
        print()
    for label, sweep, torch in (("clean flush (new)", new, tc), ("memset flush (old)", old, tm)):
        if not sweep:
            continue
        print(f"## Cold goal rows (#19), {label}: best gpubench variant vs torch.add and CUB\n")
        print("ratio = their time / ours (>= 1.00: ours at least as fast)\n")
        print("| dtype | N | best gpubench variant | time | vs torch.add | vs CUB | % of 4.8 TB/s |")
        print("|---|---|---|---|---|---|---|")
        for dtype in ("f32", "f16", "bf16"):
            for el in sorted({k[1] for k in sweep}):
                cands = [(float(r["median_seconds"]), k[0], r) for k, r in sweep.items()
                         if k[1] == el and r["dtype"] == dtype and not k[0].startswith("cub_")
                         and r.get("verified") == "pass"]
                if not cands:
                    continue
                t, name, r = min(cands)
                cub = sweep.get((f"cub_add_{dtype}", el))
                th = med(torch.get((dtype, el, "cold"), []))
                bytes_moved = 3 * el * (4 if dtype == "f32" else 2)
                vs_torch = f"{th / t:.3f}" if th else "-"
                vs_cub = f"{float(cub['median_seconds']) / t:.3f}" if cub else "-"
                print(f"| {dtype} | {size_name(el)} | {name} | {us(t)} | {vs_torch} | {vs_cub} | "
                      f"{100 * bytes_moved / t / 4.8e12:.1f}% |")
        print()

    # ---- the flush's own counters ------------------------------------------------------------
    files = sorted(glob.glob(path("ncu_flush_*_16Mi.csv")))
    if files:
        print("## What the timed cold launch finds in L2 (ncu --cache-control none, event_timer, 16Mi)\n")
        print("| flush | kernel | launches | time | DRAM read | DRAM write | L2 read hit | L2 write hit |")
        print("|---|---|---|---|---|---|---|---|")
        for f in files:
            m = re.match(r"ncu_flush_(\w+?)_(.+)_16Mi\.csv", os.path.basename(f))
            rows = ncu_long(os.path.basename(f))
            if not m or not rows:
                continue
            g = lambda name: med(x[2].get(name) for x in rows)
            print(f"| {m.group(1)} | {m.group(2)} | {len(rows)} | {us(g('gpu__time_duration.sum'))} | "
                  f"{g('dram__bytes_read.sum') / 1e6:.1f} MB | {g('dram__bytes_write.sum') / 1e6:.1f} MB | "
                  f"{g('lts__t_sector_op_read_hit_rate.pct'):.2f}% | {g('lts__t_sector_op_write_hit_rate.pct'):.2f}% |")
        print()

    # ---- #19(c): f32 1Mi alternating -----------------------------------------------------------
    if exists("alt_gpubench.csv") or exists("alt_torch.csv"):
        print("## f32 1Mi, gpubench and torch.add alternating (#19 c)\n")
        ag = {}
        if exists("alt_gpubench.csv"):
            for r in csv.reader(open(path("alt_gpubench.csv"))):
                if len(r) > 10 and r[9]:
                    ag[(int(r[0]), r[7])] = (r[1], float(r[9]))
        at = {}
        if exists("alt_torch.csv"):
            for r in csv.reader(open(path("alt_torch.csv"))):
                if len(r) >= 6 and r[1].startswith("torch_add_"):
                    at[(int(r[0]), r[3])] = float(r[5])
        print("| round | mode | gpubench (kernel) | torch.add | torch / gpubench |")
        print("|---|---|---|---|---|")
        ratios = {"cold": [], "hot": []}
        for rnd in sorted({k[0] for k in list(ag) + list(at)}):
            for mode in ("cold", "hot"):
                g, t = ag.get((rnd, mode)), at.get((rnd, mode))
                if g and t:
                    ratios[mode].append(t / g[1])
                print(f"| {rnd} | {mode} | {us(g[1]) + f' ({g[0]})' if g else '-'} | {us(t)} | "
                      f"{f'{t / g[1]:.3f}' if g and t else '-'} |")
        for mode, rs in ratios.items():
            if rs:
                gs = [v[1] for k, v in ag.items() if k[1] == mode]
                ts = [v for k, v in at.items() if k[1] == mode]
                print(f"\n{mode}: ratio min {min(rs):.3f} / median {statistics.median(rs):.3f} / max "
                      f"{max(rs):.3f} over {len(rs)} rounds; gpubench {us(min(gs))}..{us(max(gs))}, "
                      f"torch {us(min(ts))}..{us(max(ts))}")
        print()

    # ---- #19(b): the hot loop ------------------------------------------------------------------
    servers = sorted(glob.glob(path("hot_server_*.json")))
    if servers or exists("hot_timers.csv"):
        print("## 16Mi hot f16, add_f16_l2keep: server vs standalone timers (#19 b)\n")
        print("| timer | batch | blocking kernel | median per launch | TB/s |")
        print("|---|---|---|---|---|")
        for f in servers:
            try:
                r = json.load(open(f))
                t = float(r["timing"]["medianSeconds"])
                print(f"| server ({os.path.basename(f)}) | {r['measurement'].get('hotBatchSize')} | yes | "
                      f"{us(t)} | {3 * 16 * MI * 2 / t / 1e12:.3f} |")
            except (ValueError, KeyError):
                pass
        if exists("hot_timers.csv"):
            for r in csv.reader(open(path("hot_timers.csv"))):
                if len(r) < 8:
                    continue
                batch, block = r[1].split("=")[1], r[2].split("=")[1]
                if r[0] == "event_timer":
                    t = float(r[7])
                else:  # l2_probe: variant,elements,mode,median_us,...
                    t = float(r[6]) * 1e-6
                print(f"| {r[0]} ({r[3]}) | {batch} | {'yes' if block == '1' else 'no'} | {us(t)} | "
                      f"{3 * 16 * MI * 2 / t / 1e12:.3f} |")
        print()

    # ---- #19(a): 256Mi counters ------------------------------------------------------------------
    files = sorted(glob.glob(path("ncu_256_*.csv")))
    if files:
        print("## 256Mi counters (ncu --cache-control all, clocks not locked) (#19 a)\n")
        print("| source | elements | kernel (ncu) | time | DRAM read | DRAM write | DRAM rate | DRAM % of peak | L2 read hit | L2 write hit |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for f in files:
            src = os.path.basename(f)[len("ncu_256_"):-len(".csv")]
            rows = ncu_long(os.path.basename(f))
            by_kernel = {}
            for _, k, m in rows:
                by_kernel.setdefault(k, []).append(m)
            for k, ms in by_kernel.items():
                g = lambda name: med(m.get(name) for m in ms)
                t = g("gpu__time_duration.sum")
                rate = g("dram__bytes.sum.per_second")
                rd, wr = g("dram__bytes_read.sum"), g("dram__bytes_write.sum")
                print(f"| {src} | | {k[:60]} ({len(ms)}) | {us(t)} | {rd / 1e6:.1f} MB | {wr / 1e6:.1f} MB | "
                      f"{f'{rate / 1e12:.3f} TB/s' if rate else '-'} | "
                      f"{g('dram__throughput.avg.pct_of_peak_sustained_elapsed'):.1f}% | "
                      f"{g('lts__t_sector_op_read_hit_rate.pct'):.2f}% | "
                      f"{g('lts__t_sector_op_write_hit_rate.pct'):.2f}% |")
        print()


if __name__ == "__main__":
    main()
