#!/usr/bin/env python3
"""Tables for issue #15's last goal from the raw files of bench/run_device_measure3.sh.

  bench/measure3_report.py RESULTS_DIR > RESULTS_DIR/report.md

Reads auto_K_N.json / events_K_N.json (gpubench run --format=json: a kernel-duration timer,
--timer=cupti (CUPTI activity) or --timer=gpu_time (the gpu__time_duration counter), and
--timer=events), ncu_time.csv + ncu_run_K_N.json (Nsight Compute
gpu__time_duration on the server in profile mode, 5 profile launches + 1 verification launch per
run, in run order) and rep_K_N_I.json (repeated default runs). Missing files leave rows out.
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
SIZES = {"1Mi": MI, "16Mi": 16 * MI, "256Mi": 256 * MI}
NCU_KERNELS = os.environ.get("NCU_KERNELS", "add_f32,add_f32x4,add_f16x8_pack,add_f32_tuned").split(",")
KERNELS = os.environ.get("KERNELS", "add_f32,add_f32x4,add_f16x8_pack,add_f32_tuned,copy_d2d").split(",")
NCU_LIMIT = 0.01  # the goal: within 1% of ncu
REP_LIMIT = {"1Mi": 0.02, "16Mi": 0.005, "256Mi": 0.005}  # the repeatability goal


def path(name):
    return os.path.join(D, name)


def result(name):
    """The RunResult JSON of a gpubench run, or None (missing, empty or an error)."""
    try:
        with open(path(name)) as f:
            r = json.load(f)
        return r if float(r["timing"]["medianSeconds"]) > 0 else None
    except (OSError, ValueError, KeyError):
        return None


def median_of(r):
    return float(r["timing"]["medianSeconds"]) if r else None


def us(seconds):
    return f"{seconds * 1e6:.2f} us" if seconds is not None else "-"


def rel(a, b):
    return a / b - 1 if a is not None and b else None


def pct(x):
    return f"{100 * x:+.2f}%" if x is not None else "-"


def ncu_medians():
    """(kernel, size name) -> (median gpu__time_duration seconds, launches), runs in order."""
    times = []
    if os.path.exists(path("ncu_time.csv")):
        rows = list(csv.reader(open(path("ncu_time.csv"))))
        start = next((i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r), None)
        if start is not None:
            col = rows[start].index("gpu__time_duration.sum")
            name_col = rows[start].index("Kernel Name") if "Kernel Name" in rows[start] else None
            unit = rows[start + 1][col]
            scale = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3,
                     "msecond": 1e-3}.get(unit, 1e-9)
            for r in rows[start + 2:]:
                if len(r) > col and r[col]:
                    name = r[name_col] if name_col is not None else ""
                    times.append((float(r[col].replace(",", "")) * scale, name))
    out, i = {}, 0
    for k in NCU_KERNELS:
        for n in ("16Mi", "256Mi"):
            r = result(f"ncu_run_{k}_{n}.json")
            if r is None:
                continue
            launches = int(r["timing"]["samples"]) + 1  # profile launches + verification
            chunk = times[i:i + launches]
            i += launches
            # One run's launches are one kernel: another name in the chunk means the launches of
            # the runs are misaligned (a run that failed after ncu saw some of its launches).
            if chunk and len({name for _, name in chunk}) == 1:
                out[(k, n)] = (statistics.median(t for t, _ in chunk), len(chunk))
            elif chunk:
                print(f"note: ncu launches for {k} {n} mix kernels "
                      f"{sorted({name for _, name in chunk})}; left out\n")
    return out


def main():
    for name, title in (("machine.txt", "Machine"), ("steps.txt", "Steps (rc, wall seconds)")):
        if os.path.exists(path(name)):
            print(f"## {title}\n\n```\n{open(path(name)).read().strip()}\n```\n")
    if os.path.exists(path("gpu_test.log")):
        lines = [l.rstrip() for l in open(path("gpu_test.log"))
                 if re.match(r"^\[ +(OK|FAILED|SKIPPED|PASSED) ", l)]
        print("## gpu_test TimerGpuTest.*\n\n```\n" + "\n".join(lines) + "\n```\n")

    ncu = ncu_medians()
    print("## Cold medians: the kernel-duration timer vs CUDA events vs Nsight Compute\n")
    print("gpubench at the server's defaults, cold. `durations` = the `--timer=cupti` or "
          "`--timer=gpu_time` run and the timer it reports; `events (same samples)` = "
          "MeasurementSummary.event_median_seconds of "
          "that run; `--timer=events` = a separate run; ncu = median gpu__time_duration of the "
          "profile-mode launches (--cache-control all, clocks not locked).\n")
    print("| kernel | N | timer | durations | events (same samples) | --timer=events | ncu | "
          "durations vs ncu | events vs ncu | within 1% |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    met = {}
    for k in KERNELS:
        for n in ("16Mi", "256Mi"):
            a, e = result(f"auto_{k}_{n}.json"), result(f"events_{k}_{n}.json")
            if a is None and e is None:
                continue
            timer = a["measurement"].get("timer", "?") if a else "-"
            same = a["measurement"].get("eventMedianSeconds") if a else None
            nc = ncu.get((k, n), (None, 0))[0]
            c_vs, e_vs = rel(median_of(a), nc), rel(median_of(e), nc)
            ok = "-" if c_vs is None else ("yes" if abs(c_vs) <= NCU_LIMIT else "NO")
            if c_vs is not None:
                met.setdefault(k, []).append(
                    abs(c_vs) <= NCU_LIMIT and timer in ("cupti_activity", "gpu_time_duration"))
            print(f"| {k} | {n} | {timer} | {us(median_of(a))} | {us(same)} | "
                  f"{us(median_of(e))} | {us(nc)} | {pct(c_vs)} | {pct(e_vs)} | {ok} |")
    good = [k for k, v in met.items() if len(v) == 2 and all(v)]
    print(f"\n**Goal (cold within 1% of ncu at 16Mi and 256Mi, >= 3 kernels, duration timer): "
          f"{'MET' if len(good) >= 3 else 'NOT MET'}** — {len(good)} kernel(s) within 1% at both "
          f"sizes: {', '.join(good) or 'none'} (of {len(met)} measured by ncu).\n")

    hot = [(f, f.replace("hot_before_", "hot_after_"))
           for f in sorted(glob.glob(path("hot_before_*.json")))]
    if hot:
        print("## Hot (timer auto = CUDA events over the batch): before and after CUPTI recording "
              "in the same server\n")
        print("| run | timer | before | after | after/before - 1 |")
        print("|---|---|---|---|---|")
        for b, a in hot:
            rb, ra = result(os.path.basename(b)), result(os.path.basename(a))
            timer = rb["measurement"].get("timer", "?") if rb else "-"
            print(f"| {os.path.basename(b)[len('hot_before_'):-5]} | {timer} | "
                  f"{us(median_of(rb))} | {us(median_of(ra))} | "
                  f"{pct(rel(median_of(ra), median_of(rb)))} |")
        print()

    print("## Repeatability: default runs (cold, timer auto)\n")
    print("| kernel | N | timer(s) | medians | max/min - 1 | limit | ok |")
    print("|---|---|---|---|---|---|---|")
    all_ok, rows = True, 0
    firsts = glob.glob(path("rep_*_1.json"))
    order = {n: i for i, n in enumerate(SIZES)}
    firsts.sort(key=lambda f: (re.sub(r"_(1Mi|16Mi|256Mi)_1\.json$", "", f),
                               order.get(f.rsplit("_", 2)[-2], 9)))
    for f in firsts:
        m = re.match(r"rep_(.+)_(1Mi|16Mi|256Mi)_1\.json", os.path.basename(f))
        if not m:
            continue
        k, n = m.groups()
        runs = [result(os.path.basename(g)) for g in sorted(glob.glob(path(f"rep_{k}_{n}_*.json")))]
        meds = [median_of(r) for r in runs if r]
        timers = sorted({r["measurement"].get("timer", "?") for r in runs if r})
        if len(meds) < 2:
            continue
        spread = max(meds) / min(meds) - 1
        ok = spread <= REP_LIMIT[n]
        all_ok &= ok
        rows += 1
        print(f"| {k} | {n} | {','.join(timers)} | {' '.join(f'{v * 1e6:.2f}' for v in meds)} us | "
              f"{100 * spread:.2f}% | {100 * REP_LIMIT[n]:.1f}% | {'yes' if ok else 'NO'} |")
    print(f"\n**Repeatability (within 0.5% at 16Mi/256Mi, 2% at 1Mi): "
          f"{'MET' if all_ok and rows else 'NOT MET'}** over {rows} item(s).")


main()
