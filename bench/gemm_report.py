"""The GEMM proof's report (bench/run_device_gemm.sh): gpubench's runs beside torch's, as markdown.

gpubench's FLOP/s is recomputed here from each run's median seconds and its shape (2 M N K /
median) and compared with the server's own figure (throughput.operationsPerSecond), so the report
does not take the server's arithmetic on trust. The goal cases (f16, bf16, tf32, f8e4m3 at
4096^3 and 8192^3, hot) ran in ABBA rounds (run_<p>_<S>_r<i>.json, torch_r<i>.csv); each side's
figure is the mean over its rounds, and the goal is gpubench >= 0.97 x torch with every gpubench
round verified. The goal runs keep every sample (--throttle_threshold=0), as the torch script
does; run_<p>_<S>_t75.json, where present, is one more gpubench run under its default rule
(samples under 75% of the default SM clock discarded), shown beside them. Both sides' discipline (launches per sample, timed seconds) and SM clocks are shown
so a gap can be told apart from a clock difference; the ncu section names the kernels. With
MAX_DUTY set, run_device_gemm.sh passes --max_duty to the goal runs and to bench/torch_gemm.py (both
sides pace their sampling loops to that duty cycle; the report's discipline line says so, and each
gpubench run's achieved duty is measurement.dutyCycle, torch's its CSV's duty column).

    python3 bench/gemm_report.py RESULTS_DIR
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

GOAL = 0.97
GOAL_PRECISIONS = ("f16", "bf16", "tf32", "f8e4m3")
GOAL_SIZES = (4096, 8192)


def find(obj, *keys):
    """The first of `keys` found anywhere in a nested dict (protobuf JSON is camelCase)."""
    if isinstance(obj, dict):
        for k in keys:
            if k in obj:
                return obj[k]
        for v in obj.values():
            r = find(v, *keys)
            if r is not None:
                return r
    return None


def shape_of(name, result):
    shape = find(result, "shape")
    if isinstance(shape, dict) and all(k in shape for k in ("m", "n", "k")):
        return int(shape["m"]), int(shape["n"]), int(shape["k"])
    m = re.search(r"_m(\d+)_n(\d+)_k(\d+)", name)
    if m:
        return tuple(int(x) for x in m.groups())
    size = int(re.search(r"_(\d+)(?:_cold|_r\d+|_t\d+)?$", name).group(1))
    return size, size, size


def mhz(hz):
    return f"{float(hz) / 1e6:.0f}" if hz else "?"


def load_runs(directory):
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "run_*.json"))):
        name = os.path.basename(path)[4:-5]
        precision = name.split("_")[0]
        rnd = re.search(r"_r(\d+)$", name)
        base = {"name": name, "precision": precision, "round": int(rnd.group(1)) if rnd else 0,
                "default_rule": re.search(r"_t\d+$", name) is not None}
        try:
            with open(path) as f:
                result = json.load(f)
        except (OSError, ValueError) as e:
            err = f"no JSON ({e})"
            if os.path.exists(path[:-5] + ".err"):
                with open(path[:-5] + ".err") as f:
                    lines = f.read().strip().splitlines()
                err = lines[-1] if lines else err
            size = re.search(r"_(\d+)(?:_r\d+|_t\d+)?$", name)
            s = int(size.group(1)) if size else 0
            rows.append(dict(base, error=err, m=s, n=s, k=s, mode="hot"))
            continue
        m, n, k = shape_of(name, result)
        median = float(find(result, "medianSeconds") or 0)
        rows.append(dict(
            base, m=m, n=n, k=k,
            mode="cold" if name.endswith("_cold") else "hot",
            median=median, flops=2.0 * m * n * k / median if median > 0 else 0,
            server_flops=find(result, "operationsPerSecond"),
            # proto: percent_of_peak_bandwidth is of the metric's peak (FLOP/s for gemm)
            percent=find(result, "percentOfPeak", "percentOfPeakOperations",
                         "percentOfPeakBandwidth"),
            verified=find(result, "passed"),
            checked=find(result, "checkedElements"),
            algorithm=find(result, "launchReport") or "",
            clock=f"{mhz(find(result, 'minSmClockHz'))}-{mhz(find(result, 'maxSmClockHz'))}",
            batch=find(result, "hotBatchSize"),
            seconds=find(result, "measuredSeconds"),
            samples=find(result, "samples"),
            throttled=find(result, "throttledSamples") or 0,
            low_clock=find(result, "lowClockSamples") or 0,
            wall=find(result, "samplingWallSeconds"),
            threshold=find(result, "throttleThreshold"),
            max_duty=find(result, "maxDuty"),
            duty=find(result, "dutyCycle")))
    return rows


def load_torch(directory):
    """{(precision, m, n, k): {round: row}} from torch_r<i>.csv (bench/torch_gemm.py's CSV)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "torch_r*.csv"))):
        rnd = int(re.search(r"torch_r(\d+)\.csv$", path).group(1))
        with open(path) as f:
            for row in csv.reader(f):
                if not row or row[0] == "impl" or len(row) < 15:
                    continue
                (impl, precision, m, n, k, _mode, samples, batch, median, flops, measured,
                 cmin, cmed, cmax, kernel) = row[:15]
                out.setdefault((precision, int(m), int(n), int(k)), {})[rnd] = {
                    "impl": impl, "samples": samples, "batch": batch, "median": float(median),
                    "flops": float(flops), "seconds": measured,
                    "clock": f"{cmin}/{cmed}/{cmax}" if cmed else "?", "kernel": kernel,
                    "duty": row[17] if len(row) > 17 else None}
    return out


def short_algorithm(report):
    """'algo 66, tile 256x128, cluster 1x2x1; #0 of 8, fastest of 8 timed' from a launch report."""
    algo = re.search(r"algo (\d+), tile (\S+?),", report)
    cluster = re.search(r"cluster (\S+?),", report)
    rank = re.search(r"the heuristic's #(\d+) of (\d+)", report)
    timed = re.search(r"fastest of (\d+) timed", report)
    if not algo:
        return report[:80]
    text = f"algo {algo.group(1)}, tile {algo.group(2)}"
    if cluster:
        text += f", cluster {cluster.group(1)}"
    if rank:
        text += f"; #{rank.group(1)} of {rank.group(2)}"
    text += f", fastest of {timed.group(1)} timed" if timed else ", not timed"
    return text


def ncu_summary(directory):
    """Kernel name, duration and clock per ncu_*.csv (ncu --csv: one metric per row)."""
    lines = []
    for path in sorted(glob.glob(os.path.join(directory, "ncu_*.csv"))):
        side = os.path.basename(path)[4:-4]
        metrics, kernel = {}, None
        with open(path, errors="replace") as f:
            rows = [r for r in csv.reader(f) if len(r) > 12]
        header = next((r for r in rows if "Kernel Name" in r and "Metric Name" in r), None)
        if header is None:
            lines.append(f"| {side} | (no ncu data: see {os.path.basename(path)}) | | | | |")
            continue
        ki, mi, vi, ui = (header.index("Kernel Name"), header.index("Metric Name"),
                          header.index("Metric Value"), header.index("Metric Unit"))
        for r in rows:
            if r is header:
                continue
            kernel = r[ki]
            metrics[r[mi]] = f"{r[vi]} {r[ui]}".strip()
        lines.append(
            f"| {side} | `{kernel}` | {metrics.get('Duration', metrics.get('gpu__time_duration.sum', '?'))} | "
            f"{metrics.get('SM Frequency', '?')} | {metrics.get('Compute (SM) Throughput', '?')} | "
            f"{metrics.get('Memory Throughput', '?')} |")
    return lines


def main():
    directory = sys.argv[1]
    runs = load_runs(directory)
    torch = load_torch(directory)
    print("# GEMM: gpubench (cuBLASLt, setup trials) vs torch (cuBLAS), hot, ABBA rounds\n")
    print("Each side under gpubench's hot discipline: samples of `batch` back-to-back launches "
          "behind a short spin, for `s` timed seconds; median per-launch time. SM clock MHz: "
          "gpubench min-max over its samples (read by its blocking kernel; with "
          "--throttle_threshold=0 none discarded, the count under 75% of the default clock "
          "shown), torch min/median/max (NVML after each sample, none discarded). duty: timed "
          "seconds / wall seconds of the sampling loop (gpubench's includes any recovery pause "
          "after a discarded sample); the GPU idles the rest, which on a power-capped GPU raises "
          "the clock the kernels run at.\n")
    paced = sorted({float(r["max_duty"] or 0) for r in runs
                    if r["round"] > 0 and "error" not in r})
    if any(paced):
        print("gpubench's goal runs: --throttle_threshold=0 --max_duty="
              + ",".join(f"{d:g}" for d in paced)
              + " (MAX_DUTY: the sampling loop paced so its timed seconds stay <= max_duty x "
              "its wall seconds); torch: the same --max_duty (bench/torch_gemm.py paces its "
              "loop by the same rule), so both sides run at the same duty.\n")
    else:
        print("gpubench's goal runs: --throttle_threshold=0, max_duty unset (not paced; "
              "MAX_DUTY=<fraction> paces them); torch: not paced.\n")
    print("| precision | M=N=K | gpubench TFLOP/s (rounds) | torch TFLOP/s (rounds) | ratio of "
          "means | goal | gpubench clock / batch / s / duty | torch clock / batch / s / duty | "
          "verified | "
          "gpubench algorithm | torch kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    goals = []
    reports = []
    default_rule = []
    cases = sorted({(r["precision"], r["m"]) for r in runs if r["round"] > 0} |
                   {(key[0], key[1]) for key in torch},
                   key=lambda c: (GOAL_PRECISIONS.index(c[0]) if c[0] in GOAL_PRECISIONS
                                  else len(GOAL_PRECISIONS), c[0], c[1]))
    for p, size in cases:
        mine = [r for r in runs if r["precision"] == p and r["round"] > 0 and r["m"] == size
                and r["n"] == size and r["k"] == size]
        theirs = torch.get((p, size, size, size), {})
        ok = [r for r in mine if "error" not in r]
        errors = [r["error"] for r in mine if "error" in r]
        mean_mine = statistics.mean(r["flops"] for r in ok) if ok else None
        mean_theirs = (statistics.mean(t["flops"] for t in theirs.values()) if theirs
                       else None)
        ratio = mean_mine / mean_theirs if mean_mine and mean_theirs else None
        verified = bool(ok) and not errors and all(r["verified"] is True for r in ok)
        goal = ""
        if p in GOAL_PRECISIONS and size in GOAL_SIZES:
            met = ratio is not None and ratio >= GOAL and verified
            goals.append(met)
            goal = "met" if met else ("no torch figure" if mean_theirs is None and not errors
                                      else "MISSED")
        mine_text = (" / ".join(f"{r['flops'] / 1e12:.1f}" for r in sorted(ok, key=lambda r: r["round"]))
                     + (f" (mean {mean_mine / 1e12:.1f})" if len(ok) > 1 else "")) if ok else ""
        if errors:
            mine_text += f" FAILED: {errors[0]}"
        theirs_text = (" / ".join(f"{theirs[i]['flops'] / 1e12:.1f}" for i in sorted(theirs))
                       + (f" (mean {mean_theirs / 1e12:.1f})" if len(theirs) > 1 else "")
                       ) if theirs else "-"
        if theirs:
            theirs_text += f" ({next(iter(theirs.values()))['impl']})"
        mine_disc = "; ".join(f"{r['clock']} / {r['batch']} / {float(r['seconds'] or 0):.2f}"
                              + (f" / duty {float(r['duty']):.2f}" if r["duty"] else
                                 f" / duty {float(r['seconds'] or 0) / float(r['wall']):.2f}"
                                 if r["wall"] else "")
                              + (f" ({r['throttled']} throttled, discarded)" if r["throttled"]
                                 else "")
                              + (f" ({r['low_clock'] - r['throttled']} under 75%, kept)"
                                 if r["low_clock"] > r["throttled"] else "")
                              for r in sorted(ok, key=lambda r: r["round"])) or "-"
        theirs_disc = "; ".join(f"{theirs[i]['clock']} / {theirs[i]['batch']} / "
                                f"{float(theirs[i]['seconds'] or 0):.2f}"
                                + (f" / duty {theirs[i]['duty']}" if theirs[i]["duty"] else "")
                                for i in sorted(theirs)) or "-"
        checked = ", ".join(str(r["checked"]) for r in ok)
        algorithm = short_algorithm(str(ok[0]["algorithm"])) if ok else "-"
        kernel = next((t["kernel"] for t in theirs.values() if t["kernel"]), "-")
        print(f"| {p} | {size} | {mine_text} | {theirs_text} | "
              f"{f'{ratio:.3f}' if ratio is not None else '-'} | {goal} | {mine_disc} | "
              f"{theirs_disc} | {verified} ({checked} sampled) | {algorithm} | "
              f"{kernel.replace('|', '/')} |")
        for r in ok:
            reports.append(f"- {p} {size}^3 round {r['round']}: {r['algorithm']}")
        for r in runs:
            if (r["default_rule"] and "error" not in r and r["precision"] == p and r["m"] == size
                    and r["n"] == size and r["k"] == size):
                every = f"{mean_mine / 1e12:.1f}" if mean_mine else "-"
                to_torch = f"{r['flops'] / mean_theirs:.3f}" if mean_theirs else "-"
                default_rule.append(
                    f"| {p} | {size} | {r['flops'] / 1e12:.1f} | {every} | {to_torch} | "
                    f"{r['throttled']} of {r['throttled'] + int(r['samples'] or 0)} | "
                    f"{r['clock']} |")
    print()
    print(f"Goal cases met: {sum(goals)} of {len(goals)} (mean gpubench >= {GOAL} x mean torch, "
          f"every gpubench round verified)\n")
    if default_rule:
        print("## gpubench under its default rule (samples under 75% of the default clock "
              "discarded), one run\n")
        print("| precision | M=N=K | TFLOP/s, default rule | TFLOP/s, every sample (mean) | "
              "ratio to torch's mean | discarded | clock MHz |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(default_rule))
        print()

    others = [r for r in runs if r["round"] == 0 and not r["default_rule"]]
    if others:
        print("## The rest of the family (gpubench only)\n")
        print("| precision | M x N x K | mode | gpubench TFLOP/s | server's figure | % of peak | "
              "clock MHz | verified | algorithm |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in others:
            if "error" in r:
                print(f"| {r['precision']} | {r['name']} | | FAILED: {r['error']} | | | | | |")
                continue
            server = r["server_flops"]
            server_text = f"{float(server) / 1e12:.1f}" if server else "-"
            percent = f"{float(r['percent']):.1f}%" if r["percent"] is not None else "-"
            print(f"| {r['precision']} | {r['m']}x{r['n']}x{r['k']} | {r['mode']} | "
                  f"{r['flops'] / 1e12:.1f} | {server_text} | {percent} | {r['clock']} | "
                  f"{r['verified']} ({r['checked']} sampled) | "
                  f"{short_algorithm(str(r['algorithm']))} |")
        print()

    ncu = ncu_summary(directory)
    if ncu:
        print("## ncu: one launch of each side (bf16, the largest size; ncu locks clocks to base)\n")
        print("| side | kernel | duration | SM frequency | compute (SM) throughput | memory throughput |")
        print("|---|---|---|---|---|---|")
        print("\n".join(ncu))
        print()
    probe = os.path.join(directory, "probe_fp8.txt")
    if os.path.exists(probe):
        with open(probe, errors="replace") as f:
            fp8 = [line.rstrip() for line in f if line.startswith("fp8 ")]
        if fp8:
            print("## cuBLASLt's fp8 requirements (bench/gemm_lt_probe.cc)\n")
            print("\n".join(f"- {line}" for line in fp8))
            print()
    if reports:
        print("## gpubench launch reports (algorithm chosen by the setup trials)\n")
        print("\n".join(reports))


if __name__ == "__main__":
    main()
