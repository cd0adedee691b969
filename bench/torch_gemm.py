"""torch.matmul / torch._scaled_mm (cuBLAS) timed with CUDA events under gpubench's hot discipline.

The GEMM is gpubench's: D (M x N) = A (M x K, row-major) . B^T, B stored N x K row-major (the
"TN" layout of nn.Linear and the layout torch._scaled_mm requires: its second operand is
column-major), alpha 1, beta 0, FLOPs = 2 M N K per launch. Inputs uniform in [-1, 1) like
gpubench's (data values change tensor-core power, so the distribution must match).
  f16, bf16: torch.matmul(a, b.t()) in that dtype (f32 accumulation, output in the dtype)
  tf32:      torch.matmul on float32 with torch.backends.cuda.matmul.allow_tf32 = True
  f8e4m3:    torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16) with e4m3
             inputs quantized over [-8, 8) and per-tensor scales 1/8 (as gpubench), fast
             accumulation off (its default, and gpubench's)

Discipline (gpubench's hot mode, server/engine/measurement.cc): warm-up launches, then the batch
size that makes one sample about 2 ms (ceil(2 ms / one launch), at most 256: gpubench's
kHotBatchTargetSeconds), then samples back to back until --seconds of timed device time (gpubench's
run reports this as measurement.measuredSeconds; pass that value). Each sample: the
stream held by a spinning kernel (torch.cuda._sleep) while Python queues the start event, BATCH
launches and the stop event — as gpubench's blocking kernel holds it until the host has queued
them; the spin lasts 1.5 x the previous sample's queuing time + 20 us, so no launch latency lands
inside the window; per-launch time = window / BATCH; the median is reported. The SM clock is read
through NVML after every sample (min, median, max reported). --batch N fixes the batch
(gpubench's measurement.hotBatchSize). duty = timed seconds / wall seconds of the sampling loop:
Python's per-sample overhead idles the GPU more than gpubench's loop does (H200, 2026-11-30: about
0.75 here against 0.9 for gpubench at 4096^3), which matters on a power-capped GPU: --max_duty D
paces this loop to at most D, as gpubench's --max_duty D paces its own, so both sides can run at
the same duty (bench/results/2026-11-30-h200-session4.md, call D).
Prints CSV: impl,precision,m,n,k,mode,samples,batch,median_seconds,flops_per_second,
measured_seconds,clock_min_mhz,clock_median_mhz,clock_max_mhz,kernel,started_unix,finished_unix,
duty

    python3 bench/torch_gemm.py [--sizes 4096,8192] [--precisions f16,bf16,tf32,f8e4m3]
        [--seconds S[,S...]] [--batch N[,N...]] [--max_duty D] [--kernel_names] [--no_header]
"""
import argparse
import ctypes
import math
import statistics
import sys
import time

import torch

HOLD_CYCLES_PER_SECOND = 2.0e9  # set from the device's clock in main()
HOT_BATCH_TARGET_SECONDS = 2e-3  # gpubench's kHotBatchTargetSeconds
MAX_HOT_BATCH = 256  # gpubench's kMaxHotBatch
HOLD_SECONDS = 20e-6  # gpubench's kClockWindowNs


class Nvml:
    """The SM clock of one GPU through libnvidia-ml (ctypes; absent library: no readings)."""

    def __init__(self, index):
        self.handle = None
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            if self.lib.nvmlInit_v2() != 0:
                return
            handle = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
                self.handle = handle
        except OSError:
            pass

    def sm_clock_mhz(self):
        if self.handle is None:
            return None
        mhz = ctypes.c_uint()
        # NVML_CLOCK_SM = 1
        if self.lib.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(mhz)) != 0:
            return None
        return mhz.value


def hold_stream(seconds):
    torch.cuda._sleep(max(1, int(seconds * HOLD_CYCLES_PER_SECOND)))


def make_inputs(precision, m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.rand(m, k, device="cuda", generator=g).mul_(2).sub_(1)
    b = torch.rand(n, k, device="cuda", generator=g).mul_(2).sub_(1)
    if precision == "f16":
        return a.half(), b.half(), None
    if precision == "bf16":
        return a.bfloat16(), b.bfloat16(), None
    if precision == "tf32":
        return a, b, None
    if precision == "f8e4m3":
        scale = torch.tensor(0.125, device="cuda")
        return (a * 8).to(torch.float8_e4m3fn), (b * 8).to(torch.float8_e4m3fn), scale
    raise ValueError(precision)


def gemm_fn(precision, a, b, scale):
    bt = b.t()  # K x N, column-major
    if precision == "f8e4m3":
        def scaled_mm():
            out = torch._scaled_mm(a, bt, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
            return out[0] if isinstance(out, tuple) else out  # torch < 2.4 also returned amax
        return scaled_mm
    return lambda: torch.matmul(a, bt)


def check(precision, a, b, scale, out):
    """A few rows against a float64 reference: the benchmark must compute the right product."""
    rows = slice(0, 8)
    ref = a[rows].double() @ b.double().t()
    if scale is not None:
        ref = ref * float(scale) * float(scale)
    err = (out[rows].double() - ref).abs().max().item()
    tol = {"f16": 0.05, "bf16": 0.5, "tf32": 0.1, "f8e4m3": 0.5}[precision] * (a.shape[1] / 4096) ** 0.5 + 0.05
    if not err <= tol:
        raise AssertionError(f"torch {precision} result off by {err} (> {tol})")


def time_window(fn, batch, start, stop, hold_seconds):
    """(device seconds of `batch` launches between two events, host seconds spent queuing them).

    The stream is first held by a spinning kernel for `hold_seconds`, which must outlast Python's
    queuing of the start event and the launches (else launch latency lands inside the window)."""
    hold_stream(hold_seconds)
    queued = time.perf_counter()
    start.record()
    for _ in range(batch):
        fn()
    stop.record()
    queued = time.perf_counter() - queued
    stop.synchronize()
    return start.elapsed_time(stop) * 1e-3, queued


def kernel_names(fn):
    """The CUDA kernels one call launches, through torch.profiler (names only)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type):
            if e.name not in names:
                names.append(e.name)
    return " | ".join(names)


def measure(fn, seconds, batch, nvml, max_duty=0.0):
    """gpubench's hot discipline: returns (median per-launch s, samples, batch, measured s, clocks,
    wall s of the sampling loop).

    gpubench's blocking kernel holds the stream until the host has queued the batch; here the
    spin lasts 1.5 x the previous sample's queuing time + HOLD_SECONDS, for the same effect.
    max_duty > 0 paces the loop as gpubench's measurement.max_duty does: after each sample the
    host sleeps until the timed seconds are at most max_duty x the loop's wall seconds."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(3):  # gpubench's default warmup_launches
        fn()
    torch.cuda.synchronize()
    hold = 1e-3
    if batch <= 0:
        one, queued = time_window(fn, 1, start, stop, hold)
        batch = int(min(max(math.ceil(HOT_BATCH_TARGET_SECONDS / max(one, 1e-9)), 1), MAX_HOT_BATCH))
    times, clocks = [], []
    measured = 0.0
    loop_start = time.perf_counter()
    while measured < seconds or len(times) < 10:
        window, queued = time_window(fn, batch, start, stop, hold)
        hold = 1.5 * queued + HOLD_SECONDS
        measured += window
        times.append(window / batch)
        clock = nvml.sm_clock_mhz()
        if clock is not None:
            clocks.append(clock)
        if max_duty > 0:
            idle = measured / max_duty - (time.perf_counter() - loop_start)
            if idle > 0:
                time.sleep(idle)
    return (statistics.median(times), len(times), batch, measured, clocks,
            time.perf_counter() - loop_start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--precisions", default="f16,bf16,tf32,f8e4m3")
    parser.add_argument("--seconds", default="2.0",
                        help="timed device seconds per case (gpubench's measuredSeconds); one "
                             "value, or one per size")
    parser.add_argument("--batch", default="0",
                        help="launches per sample (0: ~2 ms, as gpubench); one value, or one per "
                             "size")
    parser.add_argument("--max_duty", type=float, default=0.0,
                        help="pace the sampling loop to at most this duty (timed / wall seconds), "
                             "as gpubench's --max_duty; 0: as fast as Python goes")
    parser.add_argument("--kernel_names", action="store_true", help="name the launched kernels")
    parser.add_argument("--no_header", action="store_true")
    args = parser.parse_args()
    global HOLD_CYCLES_PER_SECOND
    props = torch.cuda.get_device_properties(0)
    clock_khz = getattr(props, "clock_rate", 0)
    if clock_khz:
        HOLD_CYCLES_PER_SECOND = clock_khz * 1e3
    torch.backends.cuda.matmul.allow_tf32 = True
    nvml = Nvml(torch.cuda.current_device())
    if not args.no_header:
        print("impl,precision,m,n,k,mode,samples,batch,median_seconds,flops_per_second,"
              "measured_seconds,clock_min_mhz,clock_median_mhz,clock_max_mhz,kernel,"
              "started_unix,finished_unix,duty", flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]

    def per_size(text, convert):
        values = [convert(v) for v in text.split(",")]
        return values if len(values) == len(sizes) else [values[0]] * len(sizes)

    seconds_of = dict(zip(sizes, per_size(args.seconds, float)))
    batch_of = dict(zip(sizes, per_size(args.batch, int)))
    for precision in args.precisions.split(","):
        for size in sizes:
            m = n = k = size
            try:
                a, b, scale = make_inputs(precision, m, n, k, seed=size)
                fn = gemm_fn(precision, a, b, scale)
                out = fn()
                torch.cuda.synchronize()
                check(precision, a, b, scale, out)
                names = kernel_names(fn) if args.kernel_names else ""
                started = time.time()
                t, samples, batch, measured, clocks, wall = measure(fn, seconds_of[size],
                                                                   batch_of[size], nvml,
                                                                   args.max_duty)
                finished = time.time()
                impl = "torch._scaled_mm" if precision == "f8e4m3" else "torch.matmul"
                c = (f"{min(clocks)},{statistics.median(clocks):.0f},{max(clocks)}" if clocks
                     else ",,")
                print(f"{impl},{precision},{m},{n},{k},hot,{samples},{batch},{t:.9g},"
                      f"{2.0 * m * n * k / t:.6g},{measured:.3f},{c},\"{names}\","
                      f"{started:.3f},{finished:.3f},{measured / wall:.3f}", flush=True)
                del a, b, out
                torch.cuda.empty_cache()
            except Exception as e:  # one failing case must not hide the others
                print(f"torch {precision} {size}: {type(e).__name__}: {e}", file=sys.stderr,
                      flush=True)


if __name__ == "__main__":
    main()
