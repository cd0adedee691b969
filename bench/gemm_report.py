"""The GEMM proof's report (bench/run_device_gemm.sh): gpubench's runs beside torch's, as markdown.

gpubench's FLOP/s is recomputed here from the run's median seconds and its shape (2 M N K / median)
and compared with the server's own figure (throughput.operationsPerSecond) when present, so the
report does not take the server's arithmetic on trust. Goal: gpubench >= 0.97 x torch, hot.

    python3 bench/gemm_report.py RESULTS_DIR      (reads run_*.json and torch.csv there)
"""
import csv
import glob
import json
import os
import re
import sys

GOAL = 0.97


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
    size = int(re.search(r"_(\d+)(?:_cold)?$", name).group(1))
    return size, size, size


def load_runs(directory):
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "run_*.json"))):
        name = os.path.basename(path)[4:-5]
        precision = name.split("_")[0]
        try:
            with open(path) as f:
                result = json.load(f)
        except (OSError, ValueError) as e:
            err = f"no JSON ({e})"
            if os.path.exists(path[:-5] + ".err"):
                with open(path[:-5] + ".err") as f:
                    lines = f.read().strip().splitlines()
                err = lines[-1] if lines else err
            rows.append({"name": name, "precision": precision, "error": err})
            continue
        m, n, k = shape_of(name, result)
        median = float(find(result, "medianSeconds") or 0)
        flops = 2.0 * m * n * k / median if median > 0 else 0
        rows.append({
            "name": name, "precision": precision, "m": m, "n": n, "k": k,
            "mode": "cold" if name.endswith("_cold") else "hot",
            "median": median, "flops": flops,
            "server_flops": find(result, "operationsPerSecond"),
            "percent": find(result, "percentOfPeak", "percentOfPeakOperations"),
            "verified": find(result, "passed"),
            "checked": find(result, "checkedElements"),
            "algorithm": find(result, "launchReport") or "",
            "clock": find(result, "maxSmClockHz"),
        })
    return rows


def load_torch(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for row in csv.reader(f):
            if not row or row[0] == "impl" or len(row) < 10:
                continue
            impl, precision, m, n, k, mode, _, _, median, flops = row[:10]
            out[(precision, int(m), int(n), int(k), mode)] = (impl, float(median), float(flops))
    return out


def main():
    directory = sys.argv[1]
    runs = load_runs(directory)
    torch = load_torch(os.path.join(directory, "torch.csv"))
    print("# GEMM: gpubench (cuBLASLt) vs torch (cuBLAS), hot\n")
    print("| precision | M x N x K | mode | gpubench TFLOP/s | server's figure | torch TFLOP/s | "
          "ratio | goal | % of peak | verified | algorithm |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    goals = []
    for r in runs:
        if "error" in r:
            print(f"| {r['precision']} | {r['name']} | | FAILED: {r['error']} | | | | | | | |")
            if re.fullmatch(r"(f16|bf16|tf32|f8e4m3)_(4096|8192)", r["name"]):
                goals.append(False)
            continue
        key = (r["precision"], r["m"], r["n"], r["k"], r["mode"])
        t = torch.get(key)
        ratio = r["flops"] / t[2] if t and t[2] > 0 else None
        is_goal = r["mode"] == "hot" and r["m"] == r["n"] == r["k"] and r["m"] in (4096, 8192) \
            and r["precision"] in ("f16", "bf16", "tf32", "f8e4m3")
        goal = ""
        if is_goal:
            met = ratio is not None and ratio >= GOAL and r["verified"] is True
            goals.append(met)
            goal = "met" if met else ("no torch figure" if ratio is None else "MISSED")
        server = r["server_flops"]
        server_text = f"{float(server) / 1e12:.1f}" if server else "-"
        percent = f"{float(r['percent']):.1f}%" if r["percent"] is not None else "-"
        torch_text = f"{t[2] / 1e12:.1f} ({t[0]})" if t else "-"
        ratio_text = f"{ratio:.3f}" if ratio is not None else "-"
        print(f"| {r['precision']} | {r['m']}x{r['n']}x{r['k']} | {r['mode']} | "
              f"{r['flops'] / 1e12:.1f} | {server_text} | {torch_text} | {ratio_text} | {goal} | "
              f"{percent} | {r['verified']} ({r['checked']} sampled) | "
              f"{str(r['algorithm']).replace('|', '/')} |")
    print()
    print(f"Goal cases met: {sum(goals)} of {len(goals)} (gpubench >= {GOAL} x torch, verified)")


if __name__ == "__main__":
    main()
