"""Runs bench/pageable_vs_torch.py end to end without a GPU: two real CPU-backend servers (one
started with --default_stream=legacy) answer the gpubench side; a stand-in `torch` whose copies
cost a fixed time per stream (1.0 ms on the default stream, 0.9 ms on a side stream) answers the
torch side. The torch-only ratio must come out exactly 0.900, every table must be there, and a
usage error and an unreachable server must fail with their messages.

    python3 tests/bench/pageable_vs_torch_fake_test.py SOURCE_DIR GPUBENCH_SERVER GPUBENCH
"""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
import types

src, server_bin, cli_bin = sys.argv[1:4]
COPY_MS = {"default": 1.0, "side": 0.9}


class Stream:
    def __init__(self, kind):
        self.kind = kind


current = [Stream("default")]
clock_ms = [0.0]


@contextlib.contextmanager
def use_stream(stream):
    saved = current[0]
    current[0] = stream
    try:
        yield
    finally:
        current[0] = saved


class Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = clock_ms[0]

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


class Tensor:
    def __init__(self, nbytes, device):
        self.nbytes, self.device = nbytes, device

    def fill_(self, value):
        return self

    def copy_(self, other, non_blocking=False):
        assert (self.device, other.device) == ("cuda", None) and self.nbytes == other.nbytes
        clock_ms[0] += COPY_MS[current[0].kind]


def fake_torch():
    t = types.ModuleType("torch")
    t.uint8 = "uint8"
    t.empty = lambda n, dtype, device=None: Tensor(n, device)
    t.cuda = types.SimpleNamespace(is_available=lambda: True,
                                   default_stream=lambda: Stream("default"),
                                   Stream=lambda: Stream("side"), stream=use_stream, Event=Event)
    return t


def start_server(extra, workdir, name):
    port_file = os.path.join(workdir, name)
    proc = subprocess.Popen([server_bin, "--backend=cpu", "--listen=127.0.0.1:0",
                             f"--port_file={port_file}", "--metrics_listen="] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return proc, f"127.0.0.1:{open(port_file).read().strip()}"
        time.sleep(0.1)
    proc.kill()
    sys.exit(f"{name}: the server did not start")


def run_tool(argv):
    """main() with argv; (exit code, stdout, stderr)."""
    sys.argv = ["pageable_vs_torch.py"] + argv
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            tool.main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            err.write("" if isinstance(e.code, int) or e.code is None else str(e.code))
    return code, out.getvalue(), err.getvalue()


sys.modules["torch"] = fake_torch()
sys.path.insert(0, os.path.join(src, "bench"))
import pageable_vs_torch as tool  # noqa: E402

failures = []
with tempfile.TemporaryDirectory() as workdir:
    nonblocking, target = start_server([], workdir, "port")
    legacy, legacy_target = start_server(["--default_stream=legacy"], workdir, "port2")
    try:
        raw = os.path.join(workdir, "raw.jsonl")
        code, out, err = run_tool([f"--target={target}", f"--legacy_target={legacy_target}",
                                   f"--gpubench={cli_bin}", "--sizes=4Ki,8Ki", "--samples=3",
                                   "--iterations=4", f"--raw={raw}"])
        if code != 0:
            failures.append(f"exit {code}: {err}")
        for size, nbytes in (("4Ki", 16384), ("8Ki", 32768)):
            if f"### {size} ({nbytes} bytes), 4 iterations of 3 samples a side, cold" not in out:
                failures.append(f"no {size} heading with the byte count from the result")
        if out.count("| torch_side / torch_default | 4 | 0.900 | 0.900–0.900 | 0.900 |") != 2:
            failures.append("the torch-only ratio is not 0.900 at both sizes")
        for ratio in ("torch_side / gpubench", "torch_default / gpubench_legacy",
                      "torch_default / gpubench |"):
            if out.count(f"| {ratio}") != 2:
                failures.append(f"no '{ratio}' row at both sizes")
        if "gpubench's method: cold:" not in out:
            failures.append("gpubench's method is not printed")
        rows = [line for line in open(raw)]
        if len(rows) != 8 or any('"gpubench_legacy"' not in r for r in rows):
            failures.append(f"--raw has {len(rows)} rows, expected 8 with every side")
        # Without a legacy server: no legacy side and no ratio that needs it.
        code, out, err = run_tool([f"--target={target}", f"--gpubench={cli_bin}", "--sizes=4Ki",
                                   "--samples=2", "--iterations=2"])
        if code != 0 or "gpubench_legacy" in out or "| torch_side / gpubench | 2 |" not in out:
            failures.append(f"without --legacy_target: exit {code}, output {out!r}")
        code, out, err = run_tool([f"--target={target}", "--samples=0"])
        if code != 2 or "--samples and --iterations must be at least 1" not in err:
            failures.append(f"--samples=0: exit {code}, {err!r}")
        code, out, err = run_tool(["--target=127.0.0.1:1", f"--gpubench={cli_bin}",
                                   "--sizes=4Ki"])
        if code == 0 or "failed (exit" not in err:
            failures.append(f"an unreachable server: exit {code}, {err!r}")
    finally:
        for proc in (nonblocking, legacy):
            proc.terminate()
            proc.wait(timeout=30)

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASSED: pageable_vs_torch.py against two CPU servers and a stand-in torch")
