"""torch.matmul / torch._scaled_mm (cuBLAS) timed with CUDA events under gpubench's hot discipline.

The GEMM is gpubench's: D (M x N) = A (M x K, row-major) . B^T, B stored N x K row-major (the
"TN" layout of nn.Linear and the layout torch._scaled_mm requires: its second operand is
column-major), alpha 1, beta 0, FLOPs = 2 M N K per launch.
  f16, bf16: torch.matmul(a, b.t()) in that dtype (f32 accumulation, output in the dtype)
  tf32:      torch.matmul on float32 with torch.backends.cuda.matmul.allow_tf32 = True
  f8e4m3:    torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16) with e4m3
             inputs quantized over [-8, 8) and per-tensor scales 1/8 (as gpubench), fast
             accumulation off (its default, and gpubench's)
hot: like gpubench, the stream is first held by a spinning kernel (torch.cuda._sleep) while
Python queues the start event, BATCH back-to-back launches and the stop event, so no Python launch
latency lands inside the timed window; per-launch time = window / BATCH; the median of SAMPLES
windows is reported. One warm-up second per case first (clocks and power settle, cuBLAS loads its
kernels).
Prints CSV: impl,precision,m,n,k,mode,samples,batch,median_seconds,flops_per_second

    python3 bench/torch_gemm.py [--sizes 4096,8192] [--precisions f16,bf16,tf32,f8e4m3]
"""
import argparse
import statistics
import sys
import time

import torch

HOLD_CYCLES_PER_SECOND = 2.0e9  # set from the device's clock in main()


def hold_stream(seconds):
    torch.cuda._sleep(int(seconds * HOLD_CYCLES_PER_SECOND))


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


def time_hot(fn, batch, samples):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples):
        hold_stream(0.003)
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3 / batch)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--precisions", default="f16,bf16,tf32,f8e4m3")
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--warmup_seconds", type=float, default=1.0)
    args = parser.parse_args()
    global HOLD_CYCLES_PER_SECOND
    props = torch.cuda.get_device_properties(0)
    clock_khz = getattr(props, "clock_rate", 0)
    if clock_khz:
        HOLD_CYCLES_PER_SECOND = clock_khz * 1e3
    torch.backends.cuda.matmul.allow_tf32 = True
    print("impl,precision,m,n,k,mode,samples,batch,median_seconds,flops_per_second", flush=True)
    for precision in args.precisions.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            m = n = k = size
            try:
                a, b, scale = make_inputs(precision, m, n, k, seed=size)
                fn = gemm_fn(precision, a, b, scale)
                out = fn()
                torch.cuda.synchronize()
                check(precision, a, b, scale, out)
                deadline = time.time() + args.warmup_seconds
                while time.time() < deadline:
                    for _ in range(10):
                        fn()
                    torch.cuda.synchronize()
                # About 2-20 ms per window: 20 launches at 4096^3, 5 at 8192^3.
                batch = 20 if size <= 4096 else 5
                t = time_hot(fn, batch, args.samples)
                impl = "torch._scaled_mm" if precision == "f8e4m3" else "torch.matmul"
                print(f"{impl},{precision},{m},{n},{k},hot,{args.samples},{batch},{t:.9g},"
                      f"{2.0 * m * n * k / t:.6g}", flush=True)
                del a, b, out
                torch.cuda.empty_cache()
            except Exception as e:  # one failing case must not hide the others
                print(f"torch {precision} {size}: {type(e).__name__}: {e}", file=sys.stderr,
                      flush=True)


if __name__ == "__main__":
    main()
