"""The table of bench/run_device_l2keep.sh: add_*_l2keep through the server (placement pads,
default and event timers) against bench/l2_probe's copy of the kernel and torch.add.

    python3 bench/l2keep_report.py RESULTS_DIR

Reads RESULTS_DIR/server_pad{PAD}_{default|events}_{dtype}_{mode}_r{N}.json (gpubench run
--format=json), probe_r{N}.csv and probe_exact_r{N}.csv (l2_probe: variant,elements,mode,
median_us,tb_per_s,check) and torch_r{N}.csv (bench/torch_add.py: kernel,elements,mode,reps,
median_seconds,bytes_per_second). Prints markdown: per dtype and mode the median of each round,
their median, TB/s (3 x N x element bytes / time), and the ratios probe time / this and
torch.add time / this (>= 1.00: this is as fast or faster).
"""
import collections
import csv
import glob
import json
import os
import re
import statistics
import sys

ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
GOAL_TB_PER_S = 4.15  # issue #19: 16Mi hot f16/bf16
PAD_NAMES = {"0": "0", "2097152": "2 MiB", "33554432": "32 MiB"}


def read_results(folder):
    """{(source, dtype, mode): {round: seconds}}, elements, and problems (failed checks)."""
    times = collections.defaultdict(dict)
    elements = None
    problems = []
    for path in sorted(glob.glob(os.path.join(folder, "server_pad*_r*.json"))):
        m = re.match(r"server_pad(\d+)_(default|events)_(\w+?)_(hot|cold)_r(\d+)\.json$",
                     os.path.basename(path))
        if not m:
            continue
        pad, timer, dtype, mode, rnd = m.groups()
        try:
            result = json.load(open(path))
        except (OSError, ValueError):
            problems.append(f"{os.path.basename(path)}: no result")
            continue
        timer_name = "default timer" if timer == "default" else "--timer=events"
        source = f"server, pad {PAD_NAMES.get(pad, pad)}, {timer_name}"
        times[(source, dtype, mode)][int(rnd)] = float(result["timing"]["medianSeconds"])
        elements = int(result["request"]["elements"])
        if not result.get("verification", {}).get("passed", False):
            problems.append(f"{os.path.basename(path)}: verification did not pass")
        # The result echoes the pad the run got (int64: a JSON string, absent when 0).
        echoed = int(result["request"].get("placementPadBytes", 0))
        if echoed != int(pad):
            problems.append(f"{os.path.basename(path)}: the run's placement pad was {echoed}, "
                            f"not {pad}")
    for kind, label in (("probe", "l2_probe keep25_768x1 (buffers of 4 N + 64 B)"),
                        ("probe_exact", "l2_probe keep25_768x1 (exact-size buffers)")):
        for path in sorted(glob.glob(os.path.join(folder, f"{kind}_r*.csv"))):
            rnd = int(re.search(r"_r(\d+)\.csv$", path).group(1))
            for row in csv.DictReader(open(path)):
                if not row.get("median_us"):
                    continue
                dtype = row["variant"].split("_")[0]
                times[(label, dtype, row["mode"])][rnd] = float(row["median_us"]) * 1e-6
                elements = elements or int(row["elements"])
                if row.get("check") != "ok":
                    problems.append(f"{os.path.basename(path)} {row['variant']}: check {row.get('check')}")
    for path in sorted(glob.glob(os.path.join(folder, "torch_r*.csv"))):
        rnd = int(re.search(r"_r(\d+)\.csv$", path).group(1))
        for line in open(path):
            parts = line.strip().split(",")
            if len(parts) != 6 or not parts[0].startswith("torch_add_"):
                continue
            dtype = parts[0][len("torch_add_"):]
            times[("torch.add", dtype, parts[2])][rnd] = float(parts[4])
            elements = elements or int(parts[1])
    return times, elements, problems


def main():
    folder = sys.argv[1]
    times, elements, problems = read_results(folder)
    if elements is None:
        print("No results in", folder)
        return
    rounds = sorted({r for by_round in times.values() for r in by_round})
    print(f"# add_*_l2keep vs bench/l2_probe vs torch.add, {elements} elements\n")
    print("Per round: the median of that run's samples; `median`: of the rounds. Ratios: the "
          "other's time / this time (>= 1.00: this is as fast or faster).\n")
    header = ["dtype", "mode", "source"] + [f"r{r} us" for r in rounds] + [
        "median us", "TB/s", "vs probe", "vs torch"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    median = lambda by_round: statistics.median(by_round.values())
    goal_lines = []
    for dtype in ("f16", "bf16", "f32"):
        for mode in ("hot", "cold"):
            rows = sorted((s for (s, d, m) in times if d == dtype and m == mode),
                          key=lambda s: (not s.startswith("server"), s))
            probe = times.get(("l2_probe keep25_768x1 (buffers of 4 N + 64 B)", dtype, mode))
            torch = times.get(("torch.add", dtype, mode))
            for source in rows:
                by_round = times[(source, dtype, mode)]
                t = median(by_round)
                tb = 3 * elements * ELEMENT_BYTES[dtype] / t / 1e12
                cells = [dtype, mode, source] + [
                    f"{by_round[r] * 1e6:.2f}" if r in by_round else "-" for r in rounds]
                cells += [f"{t * 1e6:.2f}", f"{tb:.3f}",
                          f"{median(probe) / t:.3f}" if probe else "-",
                          f"{median(torch) / t:.3f}" if torch else "-"]
                print("| " + " | ".join(cells) + " |")
                if (elements == 16 << 20 and mode == "hot" and dtype in ("f16", "bf16")
                        and source == "server, pad 0, default timer"):
                    verdict = "met" if tb >= GOAL_TB_PER_S else f"missed by {GOAL_TB_PER_S / tb - 1:.1%}"
                    goal_lines.append(f"- {dtype} hot, server defaults: {tb:.3f} TB/s "
                                      f"(goal {GOAL_TB_PER_S}): {verdict}")
    if goal_lines:
        print("\nGoal (issue #19, 16Mi hot f16/bf16 >= 4.15 TB/s):")
        print("\n".join(goal_lines))
    if problems:
        print("\nProblems:")
        print("\n".join(f"- {p}" for p in problems))


if __name__ == "__main__":
    main()
