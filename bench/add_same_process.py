"""gpubench's add kernels and torch.add timed in ONE process, on the SAME buffers (bench/results/2026-11-30-h200-session7.md).

The server and bench/torch_add.py are two processes with their own allocations, stream holds and
flushes. Here every difference between them is a factor that can be switched on its own:
  kernel   torch.add, or a gpubench launcher (libgpubench_add_probe.so, the server's own code)
  hold     "sleep": torch.cuda._sleep (--hold_ms, bench/torch_add.py's 2 ms), or "blocking":
           the server's blocking kernel, released by the host once the sample is queued
  flush    "sum": torch's sum over 2 x L2 bytes of zeros (torch_add.py), or "read": the server's
           L2ReadFlushKernel over the same bytes
  buffers  "torch": tensors from torch's caching allocator, or "cudamalloc": one cudaMalloc each
           (as the server allocates), used by torch.add too through __cuda_array_interface__;
           KIND#I names the I-th distinct set of a kind (cudamalloc#0, cudamalloc#1, ...)
  stream   "default": the legacy default stream (torch's, torch_add.py's); "nonblocking": made
           with cudaStreamNonBlocking (the server's); "blocking": cudaStreamCreate's default
           flags; "per_thread": cudaStreamPerThread. Everything of a sample runs on it.
Cold samples: flush, hold, start event, one launch, stop event (the server's order). Hot: hold,
start, --batch launches, stop; per-launch time = window / batch. Contenders alternate within each
round, rounds repeat (--rounds), so drift between them shows as spread, not as a difference.

Prints CSV: experiment,dtype,elements,mode,kernel,hold,flush,buffers,stream,round,samples,
median_seconds,clock_hz (the blocking kernel's SM clock median; 0 under the sleep hold).
Ratio tables from it: bench/results/2026-11-30-h200-session7.md.

  python3 bench/add_same_process.py --lib .bundle/lib/libgpubench_add_probe.so small
  python3 bench/add_same_process.py --lib ... large --kernels=add_f32_bulk_pdl,cub_add_f32
"""
import argparse
import ctypes
import statistics
import sys

import torch

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
HOLD_CYCLES_PER_SECOND = 2.0e9


class RawBuffer:
    """A cudaMalloc'd buffer that torch can wrap (torch.as_tensor reads this interface)."""

    def __init__(self, lib, count, dtype):
        self.lib = lib
        self.bytes = count * torch.tensor([], dtype=DTYPES[dtype]).element_size()
        self.ptr = lib.gpubench_probe_malloc(self.bytes)
        if not self.ptr:
            raise RuntimeError(f"cudaMalloc of {self.bytes} bytes failed")
        # Wrapped as bytes, then viewed as the dtype: __cuda_array_interface__ has no bf16.
        self.__cuda_array_interface__ = {"shape": (self.bytes,), "typestr": "|u1",
                                         "data": (self.ptr, False), "version": 2, "strides": None}
        self.tensor = torch.as_tensor(self, device="cuda").view(DTYPES[dtype])

    def free(self):
        self.lib.gpubench_probe_free(ctypes.c_void_p(self.ptr))


def load(path):
    lib = ctypes.CDLL(path)
    lib.gpubench_probe_launch.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int,
                                          ctypes.c_int, ctypes.c_void_p]
    lib.gpubench_probe_malloc.argtypes = [ctypes.c_longlong]
    lib.gpubench_probe_malloc.restype = ctypes.c_void_p
    lib.gpubench_probe_free.argtypes = [ctypes.c_void_p]
    lib.gpubench_probe_stream_create.argtypes = [ctypes.c_int]
    lib.gpubench_probe_stream_create.restype = ctypes.c_void_p
    lib.gpubench_probe_hold.argtypes = [ctypes.c_void_p]
    lib.gpubench_probe_clock_hz.restype = ctypes.c_double
    lib.gpubench_probe_flush.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p,
                                         ctypes.c_void_p]
    return lib


class Harness:
    def __init__(self, lib, hold_ms):
        self.lib = lib
        self.hold_ms = hold_ms
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.flush_bytes = 2 * l2
        self.zeros = torch.zeros(self.flush_bytes + 256, dtype=torch.uint8, device="cuda")
        self.stream = torch.cuda.current_stream().cuda_stream
        self.streams = {}
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def torch_stream(self, kind):
        """The torch stream object of a stream factor, made once. KIND#I names the I-th distinct
        stream of a kind that can be made more than once (nonblocking#0, nonblocking#1, ...)."""
        if kind not in self.streams:
            base = kind.partition("#")[0]
            if base == "default":
                self.streams[kind] = torch.cuda.default_stream()
            elif base == "per_thread":
                self.streams[kind] = torch.cuda.ExternalStream(2)  # cudaStreamPerThread
            elif base in ("nonblocking", "blocking"):
                handle = self.lib.gpubench_probe_stream_create(1 if base == "nonblocking" else 0)
                if not handle:
                    raise RuntimeError(f"cudaStreamCreateWithFlags for {kind} failed")
                self.streams[kind] = torch.cuda.ExternalStream(handle)
            else:
                raise ValueError(f"unknown stream kind {kind}")
        return self.streams[kind]

    def flush(self, kind):
        if kind == "sum":
            self.zeros[: self.flush_bytes].sum()
        else:
            p = self.zeros.data_ptr()
            check(self.lib.gpubench_probe_flush(ctypes.c_void_p(p), self.flush_bytes,
                                                ctypes.c_void_p(p + self.flush_bytes),
                                                ctypes.c_void_p(self.stream)), "flush")

    def hold(self, kind):
        if kind == "sleep":
            torch.cuda._sleep(int(self.hold_ms * 1e-3 * HOLD_CYCLES_PER_SECOND))
        else:
            check(self.lib.gpubench_probe_hold(ctypes.c_void_p(self.stream)), "hold")

    def sample(self, launch, mode, hold, flush, batch):
        if mode == "cold":
            self.flush(flush)
        self.hold(hold)
        self.start.record()
        for _ in range(batch if mode == "hot" else 1):
            launch()
        self.stop.record()
        if hold == "blocking":
            self.lib.gpubench_probe_release()
        self.stop.synchronize()
        clock = self.lib.gpubench_probe_clock_hz() if hold == "blocking" else 0.0
        per_launch = self.start.elapsed_time(self.stop) * 1e-3 / (batch if mode == "hot" else 1)
        return per_launch, clock


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: CUDA error {rc}")


def launcher(lib, name, a, b, c, n, block, items, stream):
    if name == "torch":
        return lambda: torch.add(a, b, out=c)
    bname = name.encode()
    args = (ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()),
            ctypes.c_void_p(c.data_ptr()), n, block, items, ctypes.c_void_p(stream))

    def go():
        check(lib.gpubench_probe_launch(bname, *args), name)
    return go


def geometry(name, dtype):
    """The catalog's geometry (kernels/families/elementwise_add.cc) for the sizes used here."""
    size = torch.tensor([], dtype=DTYPES[dtype]).element_size()
    packet = 16 // size
    base, _, shape = name.partition("@")
    if shape:  # name@BLOCK or name@BLOCKxPACKETS: another geometry for the same launcher
        block, _, packets = shape.partition("x")
        return int(block), packet * int(packets or 1)
    if "bulk" in base:
        return 256, 12 // size
    return 256, packet


def make_buffers(lib, kind, n, dtype):
    """KIND#I: the I-th distinct set of that kind (each set is allocated anew, so the sets sit at
    different addresses)."""
    kind = kind.partition("#")[0]
    if kind == "torch":
        t = [torch.rand(n, device="cuda").to(DTYPES[dtype]) for _ in range(2)]
        return t + [torch.empty(n, dtype=DTYPES[dtype], device="cuda")], []
    raws = [RawBuffer(lib, n, dtype) for _ in range(3)]
    raws[0].tensor.copy_(torch.rand(n, device="cuda").to(DTYPES[dtype]))
    raws[1].tensor.copy_(torch.rand(n, device="cuda").to(DTYPES[dtype]))
    return [r.tensor for r in raws], raws


def run(args, lib, experiment, dtypes, n, modes, kernels, holds, flushes, buffer_kinds, streams):
    h = Harness(lib, args.hold_ms)
    print("experiment,dtype,elements,mode,kernel,hold,flush,buffers,stream,round,samples,"
          "median_seconds,clock_hz", flush=True)
    for dtype in dtypes:
        sets = {kind: make_buffers(lib, kind, n, dtype) for kind in buffer_kinds}
        for kind, (tensors, _) in sets.items():
            a, b, c = tensors
            torch.add(a, b, out=c)
            expected = c.clone()
            for name in kernels[dtype]:
                if name == "torch":
                    continue
                block, items = geometry(name, dtype)
                c.zero_()
                launcher(lib, name.split("@")[0], a, b, c, n, block, items, h.stream)()
                torch.cuda.synchronize()
                if not torch.equal(c, expected):
                    # Reported, not fatal: the timing of the others is still worth having.
                    print(f"MISMATCH: {name} {dtype} {kind}: output differs from torch.add",
                          file=sys.stderr, flush=True)
        for r in range(1, args.rounds + 1):
            for mode in modes:
                for kind in buffer_kinds:
                    a, b, c = sets[kind][0]
                    for stream_kind in streams:
                        try:
                            stream = h.torch_stream(stream_kind)
                            with torch.cuda.stream(stream):  # usable by torch and by the library
                                torch.cuda._sleep(1000)
                                h.stream = stream.cuda_stream
                                h.hold("blocking")
                                lib.gpubench_probe_release()
                                torch.cuda.current_stream().synchronize()
                        except Exception as e:  # a stream kind this torch cannot wrap: skip it
                            print(f"stream {stream_kind} skipped: {e}", file=sys.stderr, flush=True)
                            continue
                        torch.cuda.synchronize()
                        with torch.cuda.stream(stream):
                            h.stream = stream.cuda_stream
                            for hold in holds:
                                for flush in (flushes if mode == "cold" else ["none"]):
                                    order = (kernels[dtype] if r % 2
                                             else list(reversed(kernels[dtype])))
                                    for name in order:
                                        row = measure(args, lib, h, name, dtype, n, a, b, c, mode,
                                                      hold, flush)
                                        print(f"{experiment},{dtype},{n},{mode},{name},{hold},"
                                              f"{flush},{kind},{stream_kind},{r},{row}",
                                              flush=True)
                        torch.cuda.synchronize()
        for _, raws in sets.values():
            for raw in raws:
                raw.free()


def measure(args, lib, h, name, dtype, n, a, b, c, mode, hold, flush):
    """Warms `name` up on h.stream, then times its samples; returns 'samples,median,clock'."""
    block, items = geometry(name, dtype)
    go = launcher(lib, name.split("@")[0], a, b, c, n, block, items, h.stream)
    for _ in range(3):
        go()
    torch.cuda.current_stream().synchronize()
    times, clocks = [], []
    reps = args.cold_reps if mode == "cold" else args.hot_reps
    for _ in range(reps):
        t, clk = h.sample(go, mode, hold, flush, args.batch)
        times.append(t)
        clocks.append(clk)
    return f"{reps},{statistics.median(times):.6e},{statistics.median(clocks):.4e}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", required=True, help="path of libgpubench_add_probe.so")
    p.add_argument("experiment", choices=("small", "large"),
                   help="small: 1Mi cold, every factor; large: 256Mi f32 hot and cold, "
                        "catalog and probe bulk kernels beside CUB and torch.add")
    p.add_argument("--elements", type=int, default=0, help="default 1Mi (small), 256Mi (large)")
    p.add_argument("--dtypes", default="")
    p.add_argument("--kernels", default="", help="comma list; 'torch' is torch.add; {d} stands "
                   "for the dtype (add_{d}_tuned); name@BLOCK[xPACKETS] runs a launcher with "
                   "another geometry (one-pass kernels: PACKETS 16-byte packets per thread)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cold_reps", type=int, default=300)
    p.add_argument("--hot_reps", type=int, default=30)
    p.add_argument("--batch", type=int, default=10, help="launches per hot sample")
    p.add_argument("--hold_ms", type=float, default=2.0, help="the sleep hold's length")
    p.add_argument("--holds", default="sleep,blocking")
    p.add_argument("--flushes", default="sum,read")
    p.add_argument("--buffers", default="torch,cudamalloc")
    p.add_argument("--streams", default="default",
                   help="comma list of default, nonblocking, blocking, per_thread; "
                        "nonblocking#I / blocking#I: distinct streams of one kind")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("add_same_process.py: torch has no CUDA device")
    global HOLD_CYCLES_PER_SECOND
    clock_khz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 0)
    if clock_khz:
        HOLD_CYCLES_PER_SECOND = clock_khz * 1e3
    lib = load(args.lib)
    split = lambda s: [x for x in s.split(",") if x]
    if args.experiment == "small":
        dtypes = split(args.dtypes) or ["f16", "bf16", "f32"]
        n = args.elements or (1 << 20)
        modes = ["cold"]
        default = lambda d: ["torch", f"add_{d}_tuned", f"add_{d}_tuned@128",
                             f"add_{d}_tuned@512", f"add_{d}_tuned@256x2"]
    else:
        dtypes = split(args.dtypes) or ["f32"]
        n = args.elements or (1 << 28)
        modes = ["hot", "cold"]
        default = lambda d: (["torch", f"cub_add_{d}", f"add_{d}_bulk_pdl",
                              f"probe_{d}_bulk_plain_stores"] +
                             (["add_f32_bulk", "probe_f32_bulk_late_trigger"]
                              if d == "f32" else []))
    kernels = {d: [k.replace("{d}", d) for k in split(args.kernels)] or default(d) for d in dtypes}
    run(args, lib, args.experiment, dtypes, n, modes, kernels, split(args.holds),
        split(args.flushes), split(args.buffers), split(args.streams))


if __name__ == "__main__":
    main()
