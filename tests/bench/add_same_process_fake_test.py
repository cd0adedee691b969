"""Runs bench/add_same_process.py end to end without a GPU: a stand-in `torch` module (just the
calls the harness makes, on Python lists) and a stand-in for libgpubench_add_probe.so, so every
code path of both experiments (holds, flushes, buffers, streams, geometries) executes in CI. The
stand-in kernels write the right sums, so the harness's output check is exercised too; one
deliberately wrong kernel must be reported as a MISMATCH.

    python3 tests/bench/add_same_process_fake_test.py SOURCE_DIR
"""
import contextlib
import csv
import io
import sys
import types

src = sys.argv[1]
ELEMENT = {"f32": 4, "f16": 2, "bf16": 2, "u8": 1}
memory = {}  # pointer -> Tensor storage (list), for the stand-in library's launches
next_ptr = [4096]


class Dtype:
    def __init__(self, name):
        self.name = name


class Tensor:
    def __init__(self, values, dtype):
        self.values = values
        self.dtype = dtype
        self.ptr = next_ptr[0]
        next_ptr[0] += 4096 + len(values) * 8
        memory[self.ptr] = self

    def element_size(self):
        return ELEMENT[self.dtype.name]

    def data_ptr(self):
        return self.ptr

    def to(self, dtype):
        return Tensor(list(self.values), dtype)

    def view(self, dtype):
        return Tensor([0.0] * (len(self.values) // ELEMENT[dtype.name]), dtype)

    def copy_(self, other):
        self.values[:] = other.values

    def clone(self):
        return Tensor(list(self.values), self.dtype)

    def zero_(self):
        self.values[:] = [0.0] * len(self.values)

    def sum(self):
        return sum(self.values)

    def __getitem__(self, s):
        return Tensor(self.values[s], self.dtype)


class Event:
    clock = [0.0]

    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self):
        Event.clock[0] += 1.0
        self.t = Event.clock[0]

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e-3  # ms


class Stream:
    def __init__(self, handle):
        self.cuda_stream = handle

    def synchronize(self):
        pass


current = [Stream(0)]


@contextlib.contextmanager
def use_stream(s):
    saved = current[0]
    current[0] = s
    try:
        yield
    finally:
        current[0] = saved


def fake_torch():
    t = types.ModuleType("torch")
    t.float32, t.float16, t.bfloat16, t.uint8 = (Dtype("f32"), Dtype("f16"), Dtype("bf16"),
                                                 Dtype("u8"))
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        get_device_properties=lambda i: types.SimpleNamespace(L2_cache_size=1024,
                                                              clock_rate=1980000),
        current_stream=lambda: current[0], default_stream=lambda: Stream(0),
        ExternalStream=lambda h: Stream(h), stream=use_stream, Event=Event,
        synchronize=lambda: None, _sleep=lambda cycles: None)
    t.cuda = cuda
    t.tensor = lambda values, dtype: Tensor(list(values), dtype)
    t.rand = lambda n, device=None: Tensor([float(i % 7) for i in range(n)], t.float32)
    t.zeros = lambda n, dtype, device=None: Tensor([0.0] * n, dtype)
    t.empty = lambda n, dtype, device=None: Tensor([0.0] * n, dtype)
    t.as_tensor = lambda obj, device=None: Tensor([0] * obj.__cuda_array_interface__["shape"][0],
                                                  t.uint8)
    t.equal = lambda x, y: x.values == y.values

    def add(a, b, out):
        out.values[:] = [x + y for x, y in zip(a.values, b.values)]
    t.add = add
    return t


class FakeLib:
    """The probe library's C functions; launches add on the stand-in tensors."""

    def __init__(self):
        for name in ("gpubench_probe_launch", "gpubench_probe_malloc", "gpubench_probe_free",
                     "gpubench_probe_hold", "gpubench_probe_clock_hz", "gpubench_probe_flush",
                     "gpubench_probe_stream_create"):
            getattr(self, name).__func__.argtypes = None
        self.launched = set()
        self.streams_made = 0

    def gpubench_probe_launch(self, name, a, b, c, n, block, items, stream):
        name = name.decode()
        self.launched.add((name, block, items))
        ta, tb, tc = (memory[p.value] for p in (a, b, c))
        wrong = 1.0 if name == "probe_f32_bulk_store" else 0.0  # must be caught
        tc.values[:] = [x + y + wrong for x, y in zip(ta.values, tb.values)]
        return 0

    def gpubench_probe_malloc(self, nbytes):
        return 8 << 40

    def gpubench_probe_free(self, p):
        return 0

    def gpubench_probe_hold(self, stream):
        return 0

    def gpubench_probe_release(self):
        pass

    def gpubench_probe_clock_hz(self):
        return 1.98e9

    def gpubench_probe_flush(self, zeros, nbytes, sink, stream):
        return 0

    def gpubench_probe_stream_create(self, flags):
        self.streams_made += 1
        return 100 + self.streams_made


def main():
    sys.modules["torch"] = fake_torch()
    sys.path.insert(0, f"{src}/bench")
    import add_same_process as harness
    # cudaMalloc'd buffers: the stand-in hands out one address; give each its own tensor instead.
    def raw_init(self, lib, count, dtype):
        self.lib, self.ptr = lib, 0
        self.tensor = Tensor([0.0] * count, harness.DTYPES[dtype])
    harness.RawBuffer.__init__ = raw_init
    lib = FakeLib()
    harness.load = lambda path: lib
    failures = []
    for argv, expect_rows in (
            (["small", "--elements=64", "--rounds=2", "--cold_reps=3",
              "--streams=default,nonblocking#0,nonblocking#1,per_thread",
              "--buffers=torch,cudamalloc#0,cudamalloc#1"],
             3 * 5 * 2 * 2 * 3 * 4 * 2),  # dtypes x kernels x holds x flushes x buffers x streams x rounds
            (["large", "--elements=64", "--rounds=1", "--hot_reps=2", "--cold_reps=2",
              "--holds=blocking", "--flushes=read", "--buffers=cudamalloc",
              "--dtypes=f32", "--kernels=torch,cub_add_{d},add_{d}_bulk_pdl,probe_f32_bulk_store"],
             4 * 2)):  # kernels x modes
        sys.argv = ["add_same_process.py", "--lib", "fake.so"] + argv
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            harness.main()
        rows = list(csv.DictReader(io.StringIO(out.getvalue())))
        if len(rows) != expect_rows:
            failures.append(f"{argv[0]}: {len(rows)} rows, expected {expect_rows}")
        if any(float(r["median_seconds"]) <= 0 for r in rows):
            failures.append(f"{argv[0]}: a non-positive median")
        if argv[0] == "large" and "MISMATCH: probe_f32_bulk_store" not in err.getvalue():
            failures.append("the wrong stand-in kernel was not reported")
        if argv[0] == "small" and "MISMATCH" in err.getvalue():
            failures.append(f"small: unexpected mismatch: {err.getvalue()}")
    if ("add_f16_tuned", 128, 8) not in lib.launched or ("add_f32_tuned", 256, 8) not in lib.launched:
        failures.append(f"geometries: {sorted(lib.launched)}")
    if ("add_f32_bulk_pdl", 256, 3) not in lib.launched:
        failures.append("the bulk tile geometry (256 x 3) was not used")
    if lib.streams_made != 2:
        failures.append(f"{lib.streams_made} streams made, expected 2 (nonblocking#0, #1)")
    if failures:
        print("FAIL:", *failures, sep="\n  ")
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
