"""torch.add timed with CUDA events under gpubench's own cold/hot discipline.

Like gpubench, the stream is first held by a spinning kernel (torch.cuda._sleep) while Python
queues the flush, the start event, the adds and the stop event, so no Python launch latency lands
inside the timed window.
cold:      L2 flushed exactly as gpubench's server does it (--flush=clean, the default: a
           read-only pass over 2 x L2 bytes of zeros, here a sum, so the add starts with clean L2
           lines only; --flush=memset: a buffer of the L2's size set to a new byte value, which
           leaves the L2 full of dirty lines: gpubench's flush until 2026-11-30), then one add
           between the events.
hot:       100 back-to-back stream launches between the events, per-add time = window / 100
           (gpubench's hot mode, and nvbench's batch mode, do the same).
hot_graph: the 100 adds captured in one CUDA graph and replayed: the kernels with the smallest
           launch gaps, for reference.
hot_eager: the 100 adds launched from Python with nothing holding the stream: what a PyTorch
           user sees; at small N this is launch-bound.
Prints CSV: kernel,elements,mode,reps,median_seconds,bandwidth_bytes_per_second
(bytes = 3 x N x element size, as gpubench counts).

    python3 bench/torch_add.py 1048576 16777216 268435456
    python3 bench/torch_add.py 1048576 --dtypes=f32 --modes=cold,hot --flush=memset
"""
import argparse
import contextlib
import statistics

import torch

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# torch.cuda._sleep counts SM clock cycles; set from the device's clock in main().
HOLD_CYCLES_PER_SECOND = 2.0e9


def hold_stream(seconds):
    """Queues a spinning kernel that keeps the GPU busy while Python enqueues the timed work."""
    torch.cuda._sleep(int(seconds * HOLD_CYCLES_PER_SECOND))


def flush_l2(flush, kind, i):
    """Evicts L2 before a cold sample (see the module doc): clean reads, memset writes."""
    if kind == "memset":
        flush[: flush.numel() // 2].fill_((i + 1) & 0xFF)
    else:
        flush.sum()


def time_add(a, b, c, mode, reps, flush, flush_kind="clean", flush_order="after_hold",
             copies=()):
    """copies: more (a, b, c) sets that cold samples rotate over with the first (sample i on set
    i mod (1 + len(copies))), as gpubench's measurement.placements does."""
    sets = [(a, b, c)] + list(copies)
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    batch = 1 if mode == "cold" else 100
    graph = None
    if mode == "hot_graph":
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            torch.add(a, b, out=c)  # warm-up on the capture stream, as CUDA graphs require
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(batch):
                torch.add(a, b, out=c)
        graph.replay()
        torch.cuda.synchronize()
    samples = []
    for i in range(reps):
        if mode == "cold" and flush_order == "before_hold":
            flush_l2(flush, flush_kind, i)
        if mode != "hot_eager":
            # Long enough for Python to queue a flush, 100 launches and two events.
            hold_stream(0.002 if batch == 1 else 0.004)
        if mode == "cold" and flush_order == "after_hold":
            flush_l2(flush, flush_kind, i)
        x, y, z = sets[i % len(sets)] if mode == "cold" else sets[0]
        start.record()
        if graph is not None:
            graph.replay()
        else:
            for _ in range(batch):
                torch.add(x, y, out=z)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3 / batch)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1 << 20, 16 << 20, 256 << 20])
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--modes", default="cold,hot,hot_graph,hot_eager")
    parser.add_argument("--flush", choices=("clean", "memset"), default="clean")
    # Where the cold flush goes: after the hold (right before the timed add) or before it, as
    # gpubench's server does (flush, blocking kernel, timed launch; nvbench's order).
    parser.add_argument("--flush_order", choices=("after_hold", "before_hold"),
                        default="after_hold")
    parser.add_argument("--reps", type=int, default=0, help="samples per item (0: 200, 60 at 256Mi)")
    # Which stream everything runs on: the legacy default stream (what a plain PyTorch program
    # uses), or a stream of torch's pool (created cudaStreamNonBlocking, the kind gpubench's
    # server times on). On the H200 the event window of a 1Mi cold add differs by up to 2 ticks
    # (64 ns) between stream instances, the same for torch.add and gpubench's kernels
    # (bench/add_same_process.py --streams; bench/results/2026-11-30-h200-session7.md).
    parser.add_argument("--stream", choices=("default", "nonblocking"), default="default")
    # Cold samples rotate over this many separately allocated (a, b, c) sets, as gpubench's
    # --placements: where buffers sit moves a 1Mi cold add by up to 0.45 us on the H200
    # (bench/results/2026-11-30-h200-session7.md).
    parser.add_argument("--placements", type=int, default=1)
    args = parser.parse_args()
    with (torch.cuda.stream(torch.cuda.Stream()) if args.stream == "nonblocking"
          else contextlib.nullcontext()):
        run(args)


def run(args):
    global HOLD_CYCLES_PER_SECOND
    props = torch.cuda.get_device_properties(0)
    clock_khz = getattr(props, "clock_rate", 0)
    if clock_khz:
        HOLD_CYCLES_PER_SECOND = clock_khz * 1e3
    l2 = getattr(props, "L2_cache_size", 64 << 20)
    # 2 x L2 bytes of zeros (the clean flush reads all of it; memset writes the first half).
    flush = torch.zeros(2 * l2, dtype=torch.uint8, device="cuda")
    for name in args.dtypes.split(","):
        dtype = DTYPES[name]
        for n in args.sizes:
            g = torch.Generator(device="cuda").manual_seed(n)
            a = torch.rand(n, device="cuda", dtype=torch.float32, generator=g).mul_(2).sub_(1).to(dtype)
            b = torch.rand(n, device="cuda", dtype=torch.float32, generator=g).mul_(2).sub_(1).to(dtype)
            c = torch.empty_like(a)
            for _ in range(5):
                torch.add(a, b, out=c)
            ref = (a.double() + b.double()).to(dtype)
            assert torch.equal(c, ref) or dtype == torch.bfloat16, "torch.add result mismatch"
            # Each copy at addresses of its own (clone allocates new memory).
            copies = [(a.clone(), b.clone(), torch.empty_like(c))
                      for _ in range(max(args.placements, 1) - 1)]
            for mode in args.modes.split(","):
                reps = args.reps or (200 if n <= (16 << 20) else 60)
                t = time_add(a, b, c, mode, reps, flush, args.flush, args.flush_order, copies)
                print(f"torch_add_{name},{n},{mode},{reps},{t:.9g},{3 * n * a.element_size() / t:.6g}",
                      flush=True)
            del a, b, c, ref, copies
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
