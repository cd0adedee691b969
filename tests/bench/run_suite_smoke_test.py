#!/usr/bin/env python3
"""bench/run_suite.sh and the bench/ tools on the CPU backend (ctest `run_suite_smoke`):

1. Every suite of bench/suites is a plan that validates and runs: the runner starts its own CPU
   server (two simulated devices, so multi-device sweeps run too), writes one FleetReport, every
   kernel of the suite has rows and every row is verified. Sizes are scaled down for a CPU.
2. The health suite is the DaemonSet's plan (deploy/kubernetes/base/configmap.yaml), not a copy
   that drifts.
3. Comparison goes through fleet's baseline: the same suite against its own report has no
   regression (huge threshold: CPU timings vary); a run missing a kernel exits 5 with MISSING rows.
4. An unknown suite is a usage error (exit 2) that lists the suites.
5. The kept tools still parse (bench/*.py need torch or a GPU to run; add_same_process.py runs
   end to end in add_same_process_fake) and loadtest, where built, survives 2 s of load.

    run_suite_smoke_test.py SOURCE_DIR BUILD_DIR
"""
import ast
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

src, build = sys.argv[1], sys.argv[2]
runner = os.path.join(src, "bench", "run_suite.sh")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def scaled(plan):
    """The plan with CPU-sized work: elements / 4096 (at least 1Ki), GEMM 64, latency <= 4 MiB."""
    for key in ("sweeps", "multiDeviceSweeps"):
        for sweep in plan.get(key, []):
            if any(k.startswith("gemm_") for k in sweep["kernels"]):
                sweep["sizes"] = ["64"]
            elif sweep["kernels"] == ["latency_chase"]:
                sweep["sizes"] = [s for s in sweep["sizes"] if int(s) <= 4 << 20]
            else:
                sweep["sizes"] = sorted({str(max(1024, int(s) // 4096)) for s in sweep["sizes"]})
            m = sweep.setdefault("measurement", {})
            m["timeoutSeconds"] = min(float(m.get("timeoutSeconds", 0.25)), 0.25)
            m["minTimeSeconds"] = 0.01
    return plan


def kernels(plan):
    return {k for key in ("sweeps", "multiDeviceSweeps") for s in plan.get(key, [])
            for k in s["kernels"]}


def run_suite(args, env_extra=None):
    env = dict(os.environ, BUILD_DIR=build,
               SERVER_FLAGS="--backend=cpu --cpu_devices=2 --default_min_time_seconds=0.01 "
                            "--default_timeout_seconds=0.25")
    env.update(env_extra or {})
    return subprocess.run(["bash", runner] + args, env=env, capture_output=True, text=True,
                          timeout=240)


def rows(report):
    return [r for t in report["targets"] for r in t.get("rows", [])]


with tempfile.TemporaryDirectory() as tmp:
    suites = sorted(glob.glob(os.path.join(src, "bench", "suites", "*.json")))
    check({"add", "copies", "gemm", "latency", "health"} <=
          {os.path.basename(s)[:-5] for s in suites}, f"suites: {[os.path.basename(s) for s in suites]}")
    reports = {}
    for suite in suites:
        name = os.path.basename(suite)[:-5]
        plan = json.load(open(suite))
        small = os.path.join(tmp, f"{name}.json")
        json.dump(scaled(plan), open(small, "w"))
        out = os.path.join(tmp, f"{name}-report.json")
        started = time.time()
        r = run_suite([small, out])
        if r.returncode != 0 or not os.path.exists(out):
            check(False, f"{name}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
            continue
        report = json.load(open(out))
        reports[name] = (small, out, report)
        got = {row["kernel"] for row in rows(report)}
        check(got == kernels(plan), f"{name}: rows for all {len(kernels(plan))} kernels "
              f"({time.time() - started:.1f} s), missing {sorted(kernels(plan) - got)}")
        check(all(row.get("verified") for row in rows(report)),
              f"{name}: all {len(rows(report))} rows verified")
        check(all(t["ok"] for t in report["targets"]), f"{name}: every target ok")

    configmap = yaml.safe_load(open(os.path.join(src, "deploy", "kubernetes", "base",
                                                 "configmap.yaml")))
    check(json.loads(configmap["data"]["plan.json"]) ==
          json.load(open(os.path.join(src, "bench", "suites", "health.json"))),
          "health.json is the configmap's plan")

    if "add" in reports:
        small, baseline, report = reports["add"]
        again = os.path.join(tmp, "again.json")
        r = run_suite([small, again, "--", f"--baseline={baseline}",
                       "--regression_threshold=1000"])
        check(r.returncode == 0 and not json.load(open(again)).get("regressions"),
              f"add against its own baseline: exit {r.returncode}, no regressions {r.stderr[-300:]}")
        plan = json.load(open(small))
        dropped = plan["sweeps"][0]["kernels"].pop()
        for sweep in plan["sweeps"]:
            sweep["kernels"] = [k for k in sweep["kernels"] if k != dropped]
        fewer = os.path.join(tmp, "fewer.json")
        json.dump(plan, open(fewer, "w"))
        missing = os.path.join(tmp, "missing.json")
        r = run_suite([fewer, missing, "--", f"--baseline={baseline}",
                       "--regression_threshold=1000"])
        kinds = {(g["kind"], g["kernel"]) for g in json.load(open(missing)).get("regressions", [])}
        check(r.returncode == 5 and kinds and all(k == ("MISSING", dropped) for k in kinds),
              f"without {dropped}: exit {r.returncode} (5), regressions {sorted(kinds)}")

    r = run_suite(["no_such_suite"])
    check(r.returncode == 2 and "health" in r.stderr, f"unknown suite: exit {r.returncode} (2)")

    for script in sorted(glob.glob(os.path.join(src, "bench", "*.py"))):
        try:
            ast.parse(open(script).read(), script)
            check(True, f"{os.path.relpath(script, src)} parses")
        except SyntaxError as e:
            check(False, f"{script}: {e}")

    loadtest = os.path.join(build, "loadtest")
    if os.path.exists(loadtest):
        port_file = os.path.join(tmp, "lt.port")
        server = subprocess.Popen([os.path.join(build, "gpubench_server"), "--backend=cpu",
                                   "--listen=127.0.0.1:0", f"--port_file={port_file}",
                                   "--metrics_listen=", "--default_timeout_seconds=0.25"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            for _ in range(300):
                if os.path.exists(port_file) and open(port_file).read().strip():
                    break
                time.sleep(0.1)
            port = open(port_file).read().strip()
            r = subprocess.run([loadtest, f"--target=127.0.0.1:{port}", "--clients=4",
                                "--seconds=2"], capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, f"loadtest 2 s x 4 clients: exit {r.returncode} "
                  f"{r.stdout[-200:]}{r.stderr[-300:]}")
        finally:
            server.terminate()
            server.wait(timeout=30)
    else:
        print(f"skip loadtest: {loadtest} not built (GPUBENCH_BUILD_BENCH=OFF)")

    # bench/rapid_reset.sh through the h2-proxy's nginx.conf: 2 connections for 2 s.
    h2flood = os.path.join(build, "h2flood")
    nginx = next((p for p in ("/usr/sbin/nginx", "/usr/bin/nginx") if os.path.exists(p)), None)
    if os.path.exists(h2flood) and nginx:
        r = subprocess.run(["bash", os.path.join(src, "bench", "rapid_reset.sh"), build, "nginx",
                            "2", "2", "0"], capture_output=True, text=True, timeout=120)
        try:
            out = json.loads(r.stdout.strip().splitlines()[-1])
            ok = (out["server_alive"] == "yes" and out["normal_calls_ok"] > 0
                  and out["flood"]["streams_sent"] > 0 and out["flood"]["peak_rss_bytes"] > 0)
        except (ValueError, IndexError, KeyError):
            out, ok = r.stdout[-300:] + r.stderr[-300:], False
        check(ok, f"rapid_reset.sh nginx 2 connections 2 s: {out}")
    else:
        print(f"skip rapid_reset.sh: needs {h2flood} (GPUBENCH_BUILD_BENCH) and nginx "
              f"(apt-get install nginx-light)")

print(f"\n{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
