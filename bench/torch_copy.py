"""Host<->device copies timed by an independent program: torch copy_(non_blocking=True).

For each size (bytes) and each direction between a PINNED host tensor and a device tensor, the
copy is timed with CUDA events, median over the repetitions, two ways:
  single: one copy between the events, the stream first held by a spinning kernel
          (torch.cuda._sleep) so Python's launch latency stays out of the window; compare with
          gpubench's cold mode (one copy per sample behind its blocking kernel).
  batch:  10 back-to-back copies between the events (stream held), per-copy time = window / 10;
          compare with gpubench's hot mode.
  eager:  one copy between the events with nothing holding the stream: what a PyTorch user sees.
Pageable host tensors (not pinned) are timed eager only (the copy synchronizes the host).
Prints CSV: op,bytes,mode,reps,median_seconds,bandwidth_bytes_per_second

    python3 bench/torch_copy.py 67108864 1073741824
    python3 bench/torch_copy.py --ops=h2d_pageable --reps=50 67108864 1073741824

--ops narrows the operations (comma-separated op names); --reps sets the repetitions per size
(default 30 up to 256 MiB, 10 above).
"""
import argparse
import statistics

import torch

HOLD_CYCLES_PER_SECOND = 2.0e9
BATCH = 10


def hold_stream(seconds):
    torch.cuda._sleep(int(seconds * HOLD_CYCLES_PER_SECOND))


def time_copy(dst, src, mode, reps):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    batch = BATCH if mode == "batch" else 1
    samples = []
    for _ in range(reps):
        if mode != "eager":
            hold_stream(0.001)
        start.record()
        for _ in range(batch):
            dst.copy_(src, non_blocking=True)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3 / batch)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, help="bytes per copy")
    parser.add_argument("--ops", default="", help="comma-separated ops (default: all)")
    parser.add_argument("--reps", type=int, default=0, help="repetitions per size (0: 30/10)")
    args = parser.parse_args()
    sizes = args.sizes or [64 << 20, 1 << 30]
    wanted = set(filter(None, args.ops.split(",")))
    global HOLD_CYCLES_PER_SECOND
    clock_khz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 0)
    if clock_khz:
        HOLD_CYCLES_PER_SECOND = clock_khz * 1e3
    print("op,bytes,mode,reps,median_seconds,bandwidth_bytes_per_second")
    for nbytes in sizes:
        device = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        pageable = torch.empty(nbytes, dtype=torch.uint8)
        pinned.fill_(7)
        pageable.fill_(7)
        reps = args.reps or (30 if nbytes <= (256 << 20) else 10)
        cases = [("h2d_pinned", device, pinned, ("single", "batch", "eager")),
                 ("d2h_pinned", pinned, device, ("single", "batch", "eager")),
                 ("h2d_pageable", device, pageable, ("eager",)),
                 ("d2h_pageable", pageable, device, ("eager",))]
        unknown = wanted - {case[0] for case in cases}
        if unknown:
            parser.error(f"unknown --ops: {','.join(sorted(unknown))}")
        for op, dst, src, modes in cases:
            if wanted and op not in wanted:
                continue
            for _ in range(3):  # warm-up
                dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize()
            for mode in modes:
                t = time_copy(dst, src, mode, reps)
                print(f"{op},{nbytes},{mode},{reps},{t:.9g},{nbytes / t:.6g}", flush=True)
        del device, pinned, pageable
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
