"""torch.add timed with CUDA events under the same cold/hot discipline as gpubench.

cold: L2 flushed (a buffer of twice the L2 size zeroed) before each sample, one add per sample.
hot:  100 back-to-back adds between one pair of events, per-add time = batch time / 100.
Prints CSV: kernel,elements,mode,reps,median_seconds,bandwidth_bytes_per_second
(bytes = 3 x N x element size, as gpubench counts).

    python3 bench/torch_add.py 1048576 16777216 268435456
"""
import statistics
import sys

import torch

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def time_add(a, b, c, cold, reps, flush):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    batch = 1 if cold else 100
    samples = []
    for _ in range(reps):
        if cold:
            flush.zero_()
        start.record()
        for _ in range(batch):
            torch.add(a, b, out=c)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3 / batch)
    return statistics.median(samples)


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [1 << 20, 16 << 20, 256 << 20]
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 64 << 20)
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    for name, dtype in DTYPES.items():
        for n in sizes:
            g = torch.Generator(device="cuda").manual_seed(n)
            a = torch.rand(n, device="cuda", dtype=torch.float32, generator=g).mul_(2).sub_(1).to(dtype)
            b = torch.rand(n, device="cuda", dtype=torch.float32, generator=g).mul_(2).sub_(1).to(dtype)
            c = torch.empty_like(a)
            for _ in range(5):
                torch.add(a, b, out=c)
            ref = (a.double() + b.double()).to(dtype)
            assert torch.equal(c, ref) or dtype == torch.bfloat16, "torch.add result mismatch"
            for mode in ("cold", "hot"):
                reps = 200 if n <= (16 << 20) else 60
                t = time_add(a, b, c, mode == "cold", reps, flush)
                print(f"torch_add_{name},{n},{mode},{reps},{t:.9g},{3 * n * a.element_size() / t:.6g}",
                      flush=True)
            del a, b, c, ref
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
