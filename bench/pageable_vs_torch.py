"""Pageable host-to-device copies, gpubench against torch, in short alternating bursts.

A pageable copy runs at the host's copy bandwidth, and on shared hosts that drifts within seconds
(bench/results/2026-12-06-h100.md: one buffer 6.5 ms then 9.5 ms a second later). Whole runs
taken minutes apart cannot agree to a few percent, so this pairs short bursts instead: each
iteration runs every side once, in an order rotated every iteration. A gpubench side is one
`gpubench run copy_h2d_pageable` with exactly --samples samples. A torch side is --samples
`dst.copy_(src, non_blocking=True)` calls, each between CUDA events, after 3 warm-ups. Each side
reports its median. The ratio of two sides in the same iteration is one pair.

Sides:
  gpubench         `gpubench run` against --target (the server's stream: nonblocking by default)
  gpubench_legacy  against --legacy_target, a server started with --default_stream=legacy
                   (optional: leave the flag out and the side is skipped)
  torch_default    torch's default stream (the legacy one): what a PyTorch user gets
  torch_side       a torch.cuda.Stream() (nonblocking, the kind gpubench uses by default)

Ratios (torch / gpubench: above 1, gpubench read the copy faster):
  torch_side/gpubench, torch_default/gpubench_legacy: the same kind of stream on both sides;
  torch_default/gpubench: each tool as it comes; torch_side/torch_default: the stream's own cost.

    python3 bench/pageable_vs_torch.py --target=127.0.0.1:50051 --legacy_target=127.0.0.1:50052 \\
        --sizes=16Mi,256Mi --samples=15 --iterations=60 --budget_seconds=90

Sizes are gpubench's (f32 elements: 16Mi = 64 MiB); the byte count comes from the first run's
result. Prints one markdown table per size; --raw=FILE also writes every iteration as JSON Lines.
Pin the server and this script to the same cores (`taskset -c`) so the two share a host.
"""
import argparse
import contextlib
import json
import math
import random
import statistics
import subprocess
import sys
import time

RATIOS = (("torch_side", "gpubench"), ("torch_default", "gpubench_legacy"),
          ("torch_default", "gpubench"), ("torch_side", "torch_default"))
TORCH_WARMUPS = 3


def gpubench_run(args, target, size):
    """One `gpubench run`: (median seconds, bytes moved, method text); exits on a failed run."""
    command = [args.gpubench, f"--target={target}", "run", "copy_h2d_pageable", f"--size={size}",
               f"--mode={args.mode}", f"--min_samples={args.samples}",
               f"--max_samples={args.samples}", "--timeout=60", "--format=jsonl"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    record = json.loads(lines[0]) if lines else {}
    if done.returncode != 0 or "result" not in record:
        sys.exit(f"{' '.join(command)} failed (exit {done.returncode}): "
                 f"{done.stdout.strip()} {done.stderr.strip()}")
    result = record["result"]
    return (result["timing"]["medianSeconds"], int(result["throughput"]["bytesMoved"]),
            result["measurement"]["method"])


def torch_burst(torch, dst, src, stream, samples):
    """Median seconds of `samples` copies, each between events on `stream`."""
    with torch.cuda.stream(stream):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        for _ in range(TORCH_WARMUPS):
            dst.copy_(src, non_blocking=True)
        times = []
        for _ in range(samples):
            start.record()
            dst.copy_(src, non_blocking=True)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e-3)
    return statistics.median(times)


def bootstrap_interval(values, rounds=2000, seed=1):
    """95% bootstrap interval of the median (fixed seed: the same input prints the same bounds)."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choice(values) for _ in values)
                     for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds)]


def measure_size(torch, args, size, raw):
    _, nbytes, method = gpubench_run(args, args.target, size)  # also starts the worker
    sides = ["gpubench", "torch_default", "torch_side"]
    if args.legacy_target:
        sides.insert(1, "gpubench_legacy")
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    src = torch.empty(nbytes, dtype=torch.uint8)
    src.fill_(7)
    streams = {"torch_default": torch.cuda.default_stream(), "torch_side": torch.cuda.Stream()}
    rows, began = [], time.monotonic()
    for i in range(args.iterations):
        if rows and time.monotonic() - began > args.budget_seconds:
            break
        row = {"size": size, "bytes": nbytes, "iteration": i}
        for j in range(len(sides)):
            side = sides[(i + j) % len(sides)]
            if side.startswith("gpubench"):
                target = args.target if side == "gpubench" else args.legacy_target
                row[side] = gpubench_run(args, target, size)[0]
            else:
                row[side] = torch_burst(torch, dst, src, streams[side], args.samples)
        rows.append(row)
        if raw:
            raw.write(json.dumps(row) + "\n")
            raw.flush()
    print(f"\n### {size} ({nbytes} bytes), {len(rows)} iterations of {args.samples} samples a "
          f"side, {args.mode}\n")
    print(f"gpubench's method: {method}\n")
    print("| side | median of the burst medians | range |")
    print("|---|---|---|")
    for side in sides:
        values = [r[side] for r in rows]
        print(f"| {side} | {statistics.median(values) * 1e3:.3f} ms | "
              f"{min(values) * 1e3:.3f}–{max(values) * 1e3:.3f} ms |")
    print("\n| ratio | pairs | median | 95% interval | geometric mean | per-pair range |")
    print("|---|---|---|---|---|---|")
    for a, b in RATIOS:
        if a not in sides or b not in sides:
            continue
        ratios = [r[a] / r[b] for r in rows]
        low, high = bootstrap_interval(ratios)
        geomean = math.exp(statistics.mean(math.log(x) for x in ratios))
        print(f"| {a} / {b} | {len(ratios)} | {statistics.median(ratios):.3f} | "
              f"{low:.3f}–{high:.3f} | {geomean:.3f} | {min(ratios):.2f}–{max(ratios):.2f} |")
    sys.stdout.flush()
    del dst, src


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--target", required=True, help="gpubench server, HOST:PORT")
    parser.add_argument("--legacy_target", default="",
                        help="a second server started with --default_stream=legacy (optional)")
    parser.add_argument("--gpubench", default="build/gpubench", help="the gpubench CLI")
    parser.add_argument("--sizes", default="16Mi,256Mi", help="gpubench sizes, comma-separated")
    parser.add_argument("--mode", default="cold", choices=("cold", "hot"))
    parser.add_argument("--samples", type=int, default=15, help="samples per side per iteration")
    parser.add_argument("--iterations", type=int, default=60, help="iterations per size, at most")
    parser.add_argument("--budget_seconds", type=float, default=90,
                        help="stop a size's iterations after this long (at least one runs)")
    parser.add_argument("--raw", default="", help="write every iteration to this JSON Lines file")
    args = parser.parse_args()
    if args.samples < 1 or args.iterations < 1 or not args.budget_seconds > 0:
        parser.error("--samples and --iterations must be at least 1, --budget_seconds above 0")
    import torch  # after parsing, so --help and usage errors need no torch
    if not torch.cuda.is_available():
        sys.exit("torch sees no CUDA device")
    with open(args.raw, "a") if args.raw else contextlib.nullcontext() as raw:
        for size in filter(None, args.sizes.split(",")):
            measure_size(torch, args, size, raw)


if __name__ == "__main__":
    main()
