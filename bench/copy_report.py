"""The copy families' table from one device run (bench/run_device_copies.sh).

    python3 bench/copy_report.py torch.csv server_*.json

server_*.json: `gpubench sweep --format=json` output (a JSON array of results and item errors).
torch.csv: bench/torch_copy.py output (op,bytes,mode,reps,median_seconds,bandwidth_bytes_per_second).
Ratio = gpubench bandwidth / torch bandwidth for the same direction, host memory and size:
gpubench hot against torch "batch" (back-to-back copies, stream held), gpubench cold against
torch "single" (one copy, stream held). Goal (issue #17): pinned H2D and D2H within 3% (0.97 to
1.03) at 64 MiB and 1 GiB.
"""
import csv
import json
import sys

GOAL = 0.03


def gib(b):
    return f"{b / (1 << 30):g} GiB" if b >= (1 << 30) else f"{b / (1 << 20):g} MiB"


def main():
    torch = {}
    try:
        with open(sys.argv[1]) as f:
            for row in csv.DictReader(f):
                torch[(row["op"], int(row["bytes"]), row["mode"])] = float(row["bandwidth_bytes_per_second"])
    except (OSError, KeyError, ValueError) as e:
        print(f"(torch results unreadable: {e})\n")
    results, errors = [], []
    for path in sys.argv[2:]:
        try:
            with open(path) as f:
                items = json.load(f)
        except (OSError, ValueError) as e:
            print(f"({path} unreadable: {e})\n")
            continue
        if isinstance(items, dict):  # `gpubench run --format=json`: one result
            items = [items]
        for item in items:
            (results if "request" in item else errors).append(item)
    print("| kernel | size | mode | median | GB/s | link | % of link | verified | torch GB/s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    goal_rows = []
    for r in sorted(results, key=lambda r: (r["request"]["kernel"], int(r["request"]["elements"]),
                                             r["request"]["cacheMode"], r["request"]["deviceIndex"])):
        q = r["request"]
        d = r.get("device", {})
        kernel = q["kernel"]
        nbytes = int(q["elements"]) * 4
        mode = q["cacheMode"].lower()
        bw = r["throughput"]["bandwidthBytesPerSecond"]
        op = kernel.removeprefix("copy_")  # h2d_pinned, d2h_pageable, ...
        ref = torch.get((op, nbytes, "batch" if mode == "hot" else "single"))
        ratio = bw / ref if ref else None
        if kernel.startswith("copy_peer"):
            report = r.get("launchReport", "")
            path = report[report.find("peer path:"):] if "peer path:" in report else report
            link = f'{q.get("deviceIndex", 0)} -> {q.get("peerDeviceIndex", "?")}: {path}'
        elif d.get("pcieLinkRateSource"):
            src = d["pcieLinkRateSource"]
            link = (f'PCIe Gen{d.get(f"pcieLink{src.capitalize()}Generation")} '
                    f'x{d.get(f"pcieLink{src.capitalize()}Width")} ({src}; '
                    f'Gen{d.get("pcieLinkCurrentGeneration")} x{d.get("pcieLinkCurrentWidth")} when read)')
        else:
            link = "PCIe link unknown (no NVML)"
        pct = r["throughput"].get("percentOfPeakBandwidth")
        verified = "pass" if r["verification"].get("passed") else (
            "skipped" if not r["verification"].get("requested") else "FAIL")
        print(f'| {kernel} | {gib(nbytes)} | {mode} | {r["timing"]["medianSeconds"] * 1e3:.3f} ms '
              f'| {bw / 1e9:.2f} | {link} | {"" if pct is None else f"{pct:.1f}"} | {verified} '
              f'| {"" if ref is None else f"{ref / 1e9:.2f}"} | {"" if ratio is None else f"{ratio:.3f}"} |')
        if op in ("h2d_pinned", "d2h_pinned"):
            goal_rows.append((kernel, nbytes, mode, ratio))
    for e in errors:
        print(f'| {e.get("kernel")} | {gib(int(e.get("elements", 0)) * 4)} | ERROR | {e.get("message", "")} |')
    print("\nGoal table (pinned H2D/D2H within 3% of torch copy_(non_blocking=True)):\n")
    print("| kernel | size | mode | ratio | goal |")
    print("|---|---|---|---|---|")
    for kernel, nbytes, mode, ratio in goal_rows:
        verdict = "not evaluated (no torch figure)" if ratio is None else (
            "met" if abs(ratio - 1) <= GOAL else ("outside 3% (gpubench faster)" if ratio > 1 else "MISSED"))
        print(f'| {kernel} | {gib(nbytes)} | {mode} | {"" if ratio is None else f"{ratio:.3f}"} | {verdict} |')


if __name__ == "__main__":
    main()
