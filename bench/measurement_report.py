#!/usr/bin/env python3
"""Issue #15's goal tables from the raw files of bench/run_device_measurement.sh (archived in
bench/results/2026-11-30-h200-measurement-v2/).

  bench/measurement_report.py RESULTS_DIR > report.md

Reads steps.txt (wall times), ttr_new_*.json, repeat_new.csv, sweep_{new,old}_subset_*.csv,
sweep_new_all_*.json, ncu_run_*.json, ncu_raw.csv, ncu_fallback.json, nsys_nvtx.csv.
"""
import csv
import json
import os
import re
import statistics
import sys

D = sys.argv[1]
CSV_HEADER = ["kernel", "dtype", "elements", "block_size", "items_per_thread", "grid_size",
              "cache_mode", "samples", "median_seconds", "mean_seconds", "relative_noise",
              "bandwidth_bytes_per_second", "percent_of_peak", "verified", "backend", "device",
              "run_id", "error"]


def path(name):
    return os.path.join(D, name)


def exists(name):
    return os.path.exists(path(name)) and os.path.getsize(path(name)) > 0


def steps():
    out = {}
    if exists("steps.txt"):
        for line in open(path("steps.txt")):
            m = re.match(r"(\S+) rc=(-?\d+) wall_s=([\d.]+)", line)
            if m:
                out[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    return out


def read_csv(name, header=True):
    if not exists(name):
        return []
    with open(path(name)) as f:
        rows = list(csv.reader(f))
    if header:
        rows = rows[1:]
    return [dict(zip(CSV_HEADER, r)) for r in rows if r and r[0] != "kernel"]


def us(seconds):
    return f"{seconds * 1e6:.2f} us"


def main():
    st = steps()
    print("# Measurement v2 on the H200: raw-file report\n")
    if exists("machine.txt"):
        print("```\n" + open(path("machine.txt")).read().strip() + "\n```\n")

    print("## Time to a result at the server's defaults (goal: <= 2 s; v1: 15.0 s each)\n")
    print("| command | wall s (CLI) | samples | stop rule | median | noise |")
    print("|---|---|---|---|---|---|")
    for n in ["1000", "1Mi"]:
        name = f"ttr_new_{n}"
        if exists(name + ".json"):
            r = json.load(open(path(name + ".json")))
            t, m = r["timing"], r["measurement"]
            print(f"| run add_f32 --size={n} | {st.get(name, (0, float('nan')))[1]:.2f} | "
                  f"{t.get('samples')} | {m.get('stopRule')} | {us(t['medianSeconds'])} | "
                  f"{100 * t.get('relativeNoise', 0):.2f}% |")
    print()

    print("## Sweep wall time, default options (goal: new at least 4x faster)\n")
    print("| sweep | cold s | hot s | total s |")
    print("|---|---|---|---|")
    for label, key in [("subset, v1 (d8f0c84)", "sweep_old_subset"),
                       ("subset, v2", "sweep_new_subset"), ("all add/copy, v2", "sweep_new_all")]:
        c = st.get(key + "_cold", (None, float("nan")))[1]
        h = st.get(key + "_hot", (None, float("nan")))[1]
        print(f"| {label} | {c:.1f} | {h:.1f} | {c + h:.1f} |")
    old = sum(st.get("sweep_old_subset_" + m, (0, 0))[1] for m in ("cold", "hot"))
    new = sum(st.get("sweep_new_subset_" + m, (0, 0))[1] for m in ("cold", "hot"))
    if new > 0:
        print(f"\nSubset speedup v1 / v2: **{old / new:.1f}x**\n")

    print("## Medians v2 vs v1 (goal: within 0.5% at 16Mi and 256Mi)\n")
    print("| kernel | elements | mode | v1 median | v1 samples | v2 median | v2 samples | v2 / v1 - 1 |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0
    for mode in ["cold", "hot"]:
        old_rows = {(r["kernel"], r["elements"]): r for r in read_csv(f"sweep_old_subset_{mode}.csv")}
        for r in read_csv(f"sweep_new_subset_{mode}.csv"):
            o = old_rows.get((r["kernel"], r["elements"]))
            if not o or not r["median_seconds"] or not o["median_seconds"]:
                continue
            d = float(r["median_seconds"]) / float(o["median_seconds"]) - 1
            if int(r["elements"]) >= 16 << 20:
                worst = max(worst, abs(d))
            print(f"| {r['kernel']} | {r['elements']} | {mode} | {us(float(o['median_seconds']))} | "
                  f"{o['samples']} | {us(float(r['median_seconds']))} | {r['samples']} | {100 * d:+.2f}% |")
    print(f"\nLargest |difference| at 16Mi/256Mi: **{100 * worst:.2f}%**\n")

    print("## Repeatability: 5 default runs, add_f32 cold (goal: 0.5% at 16Mi/256Mi, 2% at 1Mi)\n")
    print("| elements | medians | spread (max-min)/mean |")
    print("|---|---|---|")
    by = {}
    for r in read_csv("repeat_new.csv", header=False):
        by.setdefault(int(r["elements"]), []).append(float(r["median_seconds"]))
    for n in sorted(by):
        v = by[n]
        print(f"| {n} | {', '.join(us(x) for x in v)} | {100 * (max(v) - min(v)) / statistics.mean(v):.2f}% |")
    print()

    print("## Stop rules in the v2 full sweep\n")
    for mode in ["cold", "hot"]:
        name = f"sweep_new_all_{mode}.json"
        if not exists(name):
            continue
        items = json.load(open(path(name)))
        rules, errors = {}, []
        for r in items:
            if "message" in r:
                errors.append(r["message"])
                continue
            rules[r["measurement"].get("stopRule")] = rules.get(r["measurement"].get("stopRule"), 0) + 1
        print(f"- {mode}: {len(items) - len(errors)} results, rules {rules}, errors {len(errors)}")
        for e in errors:
            print(f"  - {e}")
    print()

    print("## Nsight Compute gpu__time_duration vs gpubench v2 cold median (goal: within 1%)\n")
    cold = {}
    if exists("sweep_new_all_cold.json"):
        for r in json.load(open(path("sweep_new_all_cold.json"))):
            if "request" in r:
                cold[(r["request"]["kernel"], int(r["request"]["elements"]))] = r["timing"]["medianSeconds"]
    ncu = []
    if exists("ncu_raw.csv"):
        rows = list(csv.reader(open(path("ncu_raw.csv"))))
        start = next((i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r), None)
        if start is not None:
            h = rows[start]
            units = rows[start + 1]
            col = h.index("gpu__time_duration.sum")
            scale = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3,
                     "ms": 1e-3, "second": 1}.get(units[col], 1e-9)
            for r in rows[start + 2:]:
                if len(r) > col:
                    ncu.append((r[h.index("Kernel Name")], float(r[col].replace(",", "")) * scale))
    runs = []
    for k in ["add_f32", "add_f32x4", "add_f16x8_pack"]:
        for n, el in [("16Mi", 16 << 20), ("256Mi", 256 << 20)]:
            if exists(f"ncu_run_{k}_{n}.json"):
                runs.append((k, el, json.load(open(path(f"ncu_run_{k}_{n}.json")))))
    print("| kernel | elements | ncu launches | ncu median | gpubench v2 cold median | ratio - 1 | profile-mode median |")
    print("|---|---|---|---|---|---|---|")
    i = 0
    for k, el, r in runs:
        launches = r["timing"]["samples"] + 1  # profile launches + the verification launch
        chunk = ncu[i:i + launches]
        i += launches
        if not chunk:
            continue
        med = statistics.median(t for _, t in chunk)
        g = cold.get((k, el))
        ratio = f"{100 * (g / med - 1):+.2f}%" if g else "-"
        print(f"| {k} | {el} | {len(chunk)} ({chunk[0][0][:40]}) | {us(med)} | {us(g) if g else '-'} | {ratio} | "
              f"{us(r['timing']['medianSeconds'])} |")
    if exists("ncu_fallback.json"):
        r = json.load(open(path("ncu_fallback.json")))
        print(f"\nDefault run under ncu: profile_mode={r['measurement'].get('profileMode')}, "
              f"stop rule {r['measurement'].get('stopRule')}, notes: {r['measurement'].get('notes')}")
    print()
    if exists("nsys_nvtx.csv"):
        print("## NVTX ranges seen by Nsight Systems\n\n```")
        print(open(path("nsys_nvtx.csv")).read().strip())
        print("```")


main()
