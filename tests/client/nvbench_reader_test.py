#!/usr/bin/env python3
"""gpubench's --format=nvbench-json read by an independent reader of nvbench's format.

The reader below is this test's own code, written from nvbench's schema (json_printer.cu) and
its compare scripts' rules (scripts/nvbench_compare.py): device sections must be equal;
benchmarks pair by name and equal axes; states pair by name within a device, minus the
"Device=N " prefix, with equal counts per name; the compared figures are the nv/cold/* tags
(mean, relative noise; min/q1/median/q3 and nv/cold/sm_clock_rate/mean for the robust rule);
sample times live in the nv/json/bin:nv/cold/sample_times side file (little-endian float32).
It runs real servers (CPU backend, fixed launch times) and the real client:

  cold, hot    a run on a server whose launches take twice as long must pair every state and
               report each one SLOW (a hot file used to pair nothing: "Total Matches: 0");
  multi-device a one-device file and an all-devices file of one server have equal device
               sections and pair the common device's states;
  skipped      failed items are states with is_skipped and skip_reason (the unit test
               client_test renders them; here: every state is either skipped or complete).

Usage: nvbench_reader_test.py GPUBENCH_SERVER GPUBENCH
"""
import json
import math
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

SERVER, CLIENT = sys.argv[1], sys.argv[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *flags):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [SERVER, "--backend=cpu", f"--listen=127.0.0.1:{self.port}",
             "--metrics_listen=127.0.0.1:0", *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not start: " + self.proc.stderr.read().decode())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def bench(server, out, *flags):
    cmd = [CLIENT, "sweep", f"--target=127.0.0.1:{server.port}", "--format=nvbench-json",
           f"--output_file={out}", "--progress=false", "--kernels=add_f32",
           "--sizes=4096,8192", "--min_samples=8", "--max_samples=8", "--min_time=0",
           "--warmup=1", *flags]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, (cmd, p.returncode, p.stderr)
    return out


# ---- the independent reader -----------------------------------------------------------------

def summary(state, tag):
    for s in state.get("summaries") or []:
        if s["tag"] == tag:
            return s
    return None


def value(s, name="value", kind="float64"):
    for d in s["data"]:
        if d["name"] == name:
            assert d["type"] == kind, (s["tag"], d)
            assert isinstance(d["value"], str), d  # nvbench writes numbers as strings
            return d["value"]
    raise AssertionError(f"{s['tag']} has no {name}")


def fvalue(state, tag):
    s = summary(state, tag)
    return None if s is None else float(value(s))


def check_schema(path):
    root = json.load(open(path))
    assert root["meta"]["version"]["json"]["string"] == "1.0.0"
    ids = [d["id"] for d in root["devices"]]
    for b in root["benchmarks"]:
        for field in ("name", "index", "devices", "axes", "states"):
            assert field in b, field
        axis_names = [a["name"] for a in b["axes"]]
        for st in b["states"]:
            assert st["device"] in ids, (st["device"], ids)
            assert st["device"] in b["devices"]
            assert [a["name"] for a in st["axis_values"]] == axis_names
            expect = " ".join([f"Device={st['device']}"] +
                              [f"{a['name']}={a['value']}" for a in st["axis_values"]])
            assert st["name"] == expect, (st["name"], expect)
            if st["is_skipped"]:
                assert st["skip_reason"] and not st.get("summaries"), st
                continue
            for tag in ("nv/cold/time/gpu/mean", "nv/cold/time/gpu/stdev/relative",
                        "nv/cold/sample_size"):
                assert summary(st, tag) is not None, (b["name"], st["name"], tag)
            q = [fvalue(st, "nv/cold/time/gpu/" + t) for t in ("min", "q1", "median", "q3")]
            assert None not in q and q == sorted(q), q
            bin_s = summary(st, "nv/json/bin:nv/cold/sample_times")
            assert bin_s is not None, st["name"]
            n = int(value(bin_s, "size", "int64"))
            f = os.path.join(os.path.dirname(path), value(bin_s, "filename", "string"))
            raw = open(f, "rb").read()
            assert len(raw) == 4 * n, (f, len(raw), n)
            samples = sorted(struct.unpack(f"<{n}f", raw))
            # nvbench's quantile rule: the sample at rank round(p * (n - 1)).
            def rank(p):
                return samples[int(math.floor(p * (n - 1) + 0.5))]
            for got, p in zip(q[1:], (0.25, 0.5, 0.75)):
                assert math.isclose(got, rank(p), rel_tol=1e-6), (got, rank(p), p)
    return root


def compare(ref_path, cmp_path):
    """nvbench_compare.py's pairing and its noise rule; returns (matches, statuses)."""
    ref, cmp = check_schema(ref_path), check_schema(cmp_path)
    if ref["devices"] != cmp["devices"]:
        raise AssertionError("Device sections do not match.")
    statuses = []
    for cb in cmp["benchmarks"]:
        rb = next((b for b in ref["benchmarks"]
                   if b["name"] == cb["name"] and b["axes"] == cb["axes"]), None)
        if rb is None:
            continue
        for cd in cb["devices"]:
            if cd not in rb["devices"]:
                continue
            key = lambda s: s["name"][len(f"Device={s['device']} "):]
            rs = {key(s): s for s in rb["states"] if s["device"] == cd}
            cs = [s for s in cb["states"] if s["device"] == cd]
            assert sorted(rs) == sorted(key(s) for s in cs), (sorted(rs), [key(s) for s in cs])
            for c in cs:
                r = rs[key(c)]
                if not r.get("summaries") or not c.get("summaries"):
                    continue
                rt, ct = fvalue(r, "nv/cold/time/gpu/mean"), fvalue(c, "nv/cold/time/gpu/mean")
                rn = fvalue(r, "nv/cold/time/gpu/stdev/relative")
                cn = fvalue(c, "nv/cold/time/gpu/stdev/relative")
                if None in (rt, ct, rn, cn):
                    continue
                frac = (ct - rt) / rt
                noise = min(rn, cn)
                status = ("????" if not math.isfinite(noise) else
                          "SAME" if abs(frac) <= noise else "FAST" if frac < 0 else "SLOW")
                statuses.append((cb["name"], c["name"], status))
    return len(statuses), statuses


def main():
    tmp = tempfile.mkdtemp(prefix="nvbench_reader_")
    fast = Server("--cpu_devices=2", "--cpu_min_launch_seconds=0.002")
    slow = Server("--cpu_devices=2", "--cpu_min_launch_seconds=0.004")
    try:
        for mode in ("cold", "hot"):
            a = bench(fast, os.path.join(tmp, f"{mode}-ref.json"), f"--mode={mode}")
            b = bench(slow, os.path.join(tmp, f"{mode}-cmp.json"), f"--mode={mode}")
            matches, statuses = compare(a, b)
            print(mode, statuses)
            assert matches == 2, (mode, matches, statuses)
            assert all(s == "SLOW" for _, _, s in statuses), (mode, statuses)
            names = {n for n, _, _ in statuses}
            assert names == ({"add_f32"} if mode == "cold" else {"add_f32 (hot)"}), names
        one = bench(fast, os.path.join(tmp, "one.json"), "--device=1")
        every = bench(fast, os.path.join(tmp, "all.json"), "--all_devices")
        root = check_schema(every)
        assert [d["id"] for d in root["devices"]] == [0, 1], root["devices"]
        assert root["benchmarks"][0]["devices"] == [0, 1]
        matches, statuses = compare(one, every)
        assert matches == 2, statuses  # device 1's states pair; device 0 is not in `one`
    finally:
        fast.stop()
        slow.stop()
    print("ok")


if __name__ == "__main__":
    main()
