#!/usr/bin/env python3
"""The default fleet health plan (deploy/kubernetes/base/configmap.yaml) end to end on the CPU
backend:

1. The plan is a Plan of sweeps (plan.proto) covering every family a fleet is judged by:
   elementwise add, SAXPY, GEMM, H2D and D2H, peer copies (multi-device sweeps only), and the
   memory latency at three footprints (L1, L2 and beyond L2).
2. `gpubench fleet --plan` runs it (sizes scaled down for CI, latency footprints as shipped)
   against a CPU server with two simulated devices: every row verified, every family present,
   latency in seconds per load.
3. The server's scheduler runs the same plan: one pass, every item ok; on a one-device server the
   multi-device sweeps are left out (logged), not failed.

Every kernel of the plan must exist in the build (TOLERATED_MISSING names prefixes that may be
absent while a family is landing; empty now).

    health_plan_test.py SERVER_BINARY CLI_BINARY SOURCE_DIR
"""
import copy
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

# The PASS/FAIL bookkeeping of the metrics stack test.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "metrics"))
from prometheus_stack_test import check, failures  # noqa: E402

# Every kernel of the plan must exist (gemm and copies have landed): nothing is tolerated.
TOLERATED_MISSING = ()


def wait_file(path, proc, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and open(path).read().strip():
            return open(path).read().strip()
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before serving")
        time.sleep(0.1)
    raise RuntimeError(f"{path} not written")


def start_server(server_bin, tmp, name, extra):
    port_file = os.path.join(tmp, f"{name}.port")
    log = os.path.join(tmp, f"{name}.log")
    proc = subprocess.Popen([server_bin, "--listen=127.0.0.1:0", f"--port_file={port_file}",
                             "--backend=cpu", "--metrics_listen=", "--shutdown_grace_seconds=5"]
                            + extra, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    return proc, port_file, log


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def families_of(plan):
    kernels = [k for s in plan["sweeps"] for k in s["kernels"]]
    peer = [k for s in plan.get("multiDeviceSweeps", []) for k in s["kernels"]]
    return kernels, peer


def main():
    server_bin, cli_bin, src = sys.argv[1:4]
    cm = yaml.safe_load(open(os.path.join(src, "deploy/kubernetes/base/configmap.yaml")))
    plan = json.loads(cm["data"]["plan.json"])
    kernels, peer = families_of(plan)
    check(set(plan) <= {"sweeps", "multiDeviceSweeps"}, f"the plan is a Plan of sweeps: {sorted(plan)}")
    want = {"elementwise add": lambda k: k.startswith("add_"), "SAXPY": lambda k: k.startswith("saxpy"),
            "GEMM": lambda k: k.startswith("gemm"), "H2D": lambda k: k.startswith("copy_h2d"),
            "D2H": lambda k: k.startswith("copy_d2h"), "latency": lambda k: k == "latency_chase"}
    for family, match in want.items():
        check(any(match(k) for k in kernels), f"the plan covers {family}")
    check(any(k.startswith("copy_peer") for k in peer), "peer copies in multiDeviceSweeps only")
    footprints = sorted(int(x) for s in plan["sweeps"] if "latency_chase" in s["kernels"]
                        for x in s["sizes"])
    check(len(footprints) == 3 and footprints[0] <= 256 << 10 and
          (1 << 20) <= footprints[1] <= (32 << 20) and footprints[2] >= (256 << 20),
          f"latency at an L1, an L2 and a beyond-L2 footprint: {footprints}")
    latency_sweeps = [s for s in plan["sweeps"] if "latency_chase" in s["kernels"]]
    check(all(s.get("measurement", {}).get("cacheMode") == "HOT" for s in latency_sweeps),
          "latency runs hot (a cold chase would flush L2 and hide the L2 plateau)")
    sdc_sweeps = [s for s in plan["sweeps"] if "seed" in s and s.get("verify") and
                  any(k.startswith("add_") for k in s["kernels"])]
    check(len(sdc_sweeps) == 1, "a fixed-seed, verified elementwise sweep (the fleet's SDC check)")
    # Every GPU gets a verdict: device-local sweeps run on all devices; host copies stay on one
    # (several GPUs' copies at once share PCIe switches and host memory).
    host_copies = [s for s in plan["sweeps"] if any(k.startswith("copy_h2d") for k in s["kernels"])]
    check(all(s.get("allDevices") for s in plan["sweeps"] if s not in host_copies) and
          not any(s.get("allDevices") for s in host_copies),
          "every device-local sweep runs on all devices, host copies on one")

    tmp = tempfile.mkdtemp(prefix="gpubench_plan_")
    procs = []
    try:
        server, port_file, log = start_server(server_bin, tmp, "two", ["--cpu_devices=2"])
        procs.append(server)
        target = f"127.0.0.1:{wait_file(port_file, server)}"
        r = subprocess.run([cli_bin, "kernels", f"--target={target}", "--format=csv"],
                           capture_output=True, text=True, timeout=60)
        available = {row["kernel"] if "kernel" in row else row["name"]
                     for row in csv.DictReader(io.StringIO(r.stdout))}
        check(r.returncode == 0 and "latency_chase" in available,
              f"`gpubench kernels` lists the catalog ({len(available)} kernels)")
        missing = sorted(set(kernels + peer) - available)
        tolerated = [k for k in missing if TOLERATED_MISSING and k.startswith(TOLERATED_MISSING)]
        check(missing == tolerated, f"every kernel of the plan exists: missing {missing}")
        if tolerated:
            print(f"SKIP {', '.join(tolerated)}: not in this build yet (the copy families are "
                  f"still landing, TOLERATED_MISSING)")

        # The plan as CI can afford it: the kernels of this build, elementwise/GEMM/copy sizes
        # divided by 4096 (at least 1024); latency footprints as shipped (cheap on a host).
        scaled = copy.deepcopy(plan)
        for key in ("sweeps", "multiDeviceSweeps"):
            kept = []
            for s in scaled.get(key, []):
                s["kernels"] = [k for k in s["kernels"] if k in available]
                if not s["kernels"]:
                    continue
                if "latency_chase" not in s["kernels"]:
                    s["sizes"] = [str(max(int(x) // 4096, 64 if any(k.startswith("gemm") for k in
                                                                  s["kernels"]) else 1024))
                                  for x in s["sizes"]]
                s.setdefault("measurement", {}).update({"minTimeSeconds": 0.001, "minSamples": 3,
                                                        "timeoutSeconds": 2})
                kept.append(s)
            scaled[key] = kept
        plan_file = os.path.join(tmp, "plan.json")
        json.dump(scaled, open(plan_file, "w"))

        started = time.time()
        r = subprocess.run([cli_bin, "fleet", f"--plan={plan_file}", f"--targets={target}",
                            "--format=json", "--progress=false"], capture_output=True, text=True,
                           timeout=240)
        check(r.returncode == 0, f"gpubench fleet runs the plan (exit {r.returncode}, "
                                 f"{time.time() - started:.1f} s): {r.stderr.strip()[:300]}")
        report = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
        rows = [row for t in report.get("targets", []) for row in t.get("rows", [])]
        ran = {row["kernel"] for row in rows}
        expected = {k for s in scaled["sweeps"] + scaled["multiDeviceSweeps"] for k in s["kernels"]}
        check(ran == expected, f"every kernel of the plan ran, peer sweeps included on two "
                               f"devices: {sorted(ran)}")
        check(rows and all(row.get("verified") for row in rows),
              f"every row verified ({len(rows)} rows)")
        seeded = [row for row in rows if sdc_sweeps and row["kernel"] in sdc_sweeps[0]["kernels"]
                  and row.get("seed") == sdc_sweeps[0]["seed"]]
        check(seeded and all(row.get("outputHash") for row in seeded),
              f"the fixed-seed rows carry the plan's seed and an output hash: "
              f"{[(row['kernel'], row.get('seed'), row.get('outputHash')) for row in seeded]}")
        latency = [row for row in rows if row["kernel"] == "latency_chase"]
        check(len(latency) == 3 * 2 and all(row.get("metric") == "seconds_per_operation" and
                                        0 < row.get("value", 0) < 1e-5 for row in latency),
              f"latency rows in seconds per load: "
              f"{[(row['elements'], row.get('value')) for row in latency]}")
        stop(server)
        procs.remove(server)

        # The scheduler: one pass of the same plan, every item ok; peer sweeps on two devices.
        for name, devices, left_out in (("sched2", 2, False), ("sched1", 1, True)):
            server, port_file, log = start_server(
                server_bin, tmp, name, [f"--cpu_devices={devices}", f"--schedule_plan={plan_file}",
                                        "--schedule_interval_seconds=3600"])
            procs.append(server)
            wait_file(port_file, server)
            end = time.time() + 240
            text = ""
            while time.time() < end and "scheduled pass done" not in text:
                time.sleep(0.5)
                text = open(log).read()
            items = sum(len(s["kernels"]) * len(s["sizes"]) * (devices if s.get("allDevices") else 1)
                        for s in scaled["sweeps"])
            if not left_out:
                items += len([k for s in scaled["multiDeviceSweeps"] for k in s["kernels"]
                              for _ in s["sizes"]])
            check(f"scheduled pass done: {items} ok, 0 failed" in text,
                  f"the scheduler runs the plan on {devices} device(s): {items} items ok "
                  f"({[l for l in text.splitlines() if 'scheduled pass' in l][-1:]})")
            if left_out and scaled["multiDeviceSweeps"]:
                check("multi-device sweep(s) left out" in text,
                      "one device: the multi-device sweeps are left out, not failed")
            stop(server)
            procs.remove(server)
    finally:
        for p in procs:
            stop(p)
        if failures:
            for name in os.listdir(tmp):
                if name.endswith(".log"):
                    print(f"--- {name} (tail)\n" + "".join(open(os.path.join(tmp, name)).readlines()[-20:]))
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'FAILED' if failures else 'OK'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
