#!/usr/bin/env python3
"""A fleet in CI, end to end, on loopback only:

1. Eight gpubench_server processes (CPU backend) on 127.0.0.2 ... 127.0.0.9, one gRPC port and one
   metrics port for all, as pods of a DaemonSet; two simulated GPU models (--cpu_device_name, and
   --cpu_threads 2 vs 1); each has a node name (--node_name) and so a stable device UUID, and a
   scheduled plan feeding its metrics.
2. One DNS name resolving to all of them: a hosts file bind-mounted over /etc/hosts inside this
   test's own private mount namespace (unshare), so the machine's resolver is never touched.
3. A real Prometheus scraping every server through file-based service discovery (the `node`
   target label, as the ServiceMonitor sets it), with deploy/prometheus/rules.yml and a test-only
   copy of the no-fresh-results and down alerts with shortened thresholds.
4. `gpubench fleet --dns`: a baseline; then half of the servers restarted on *different*
   addresses with the same identities: no regression, no missing row; then one server killed and
   one made slow (throttled): the dead one FAILED, the others complete, the slow one an outlier
   of its model and a regression against the baseline, exit code 5, all in the JSON report.
5. Every dashboard and alert expression returns data per node from that Prometheus; the
   no-fresh-results alert fires for the killed node and for no other (restarted nodes included).

Every process is started and stopped by PID.

    fleet_stack_test.py SERVER_BINARY CLI_BINARY SOURCE_DIR
Exit codes: 0 pass, 1 fail, 77 skipped (not root: no private mount namespace for the hosts file).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml

# The Prometheus helpers of the single-server stack test (free port, HTTP GET, instant query).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "metrics"))
from prometheus_stack_test import free_port, http_get, query, selected_kernels  # noqa: E402

NAME = "gpubench.fleet.test"
NODES = 8
# Node i (1-based): address 127.0.0.(i+1); nodes 1-4 model A (2 threads), 5-8 model B (1 thread).
MODEL_A, MODEL_B = "Simulated GPU A", "Simulated GPU B"
GPU_ONLY = ("gpubench_run_peak_bandwidth_ratio", "gpubench_run_theoretical_occupancy_ratio",
            "gpubench_run_achieved_occupancy_ratio", "gpubench_run_peak_flops_ratio")
# The kernels the nodes run here (schedule and fleet plans), by family: a dashboard row of another
# family (GEMM, copies) has no data in this test; prometheus_stack_test.py checks those rows.
FED = {"copy_d2d": "copy", "latency_chase": "latency", "add_f32": "elementwise_add"}
# Shortened copies of rules.yml's thresholds for the live test (the real ones are tested with
# promtool test rules, tests/metrics/rules_test.yml).
SHORT_FRESH_SECONDS = 20
# The simulated models' speeds: every launch takes at least this long (--cpu_min_launch_seconds;
# the work itself, 16Ki elements, takes well under a millisecond). Thread counts alone (2 vs 1)
# give at most 2x on CI's 2 cores and move by tens of percent with the host's load (measured here:
# a node's median moved by up to 60-80% between passes on a busy 2-core machine), so the verdicts
# would be a coin toss; fixed launch floors make the models and the throttled node stand clear of
# that noise while everything else (threads, verification, the real CPU work) stays as it is.
MIN_LAUNCH = {MODEL_A: 0.010, MODEL_B: 0.020}
SLOW_MIN_LAUNCH = 0.040  # the throttled node: 4x its model's launch time, 75% under its median
THRESHOLD = 0.25

failures = []
started = time.time()


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def log(what):
    print(f"[{time.time() - started:6.1f} s] {what}", flush=True)


def nodes_of(res):
    return {s["metric"].get("node", "") for s in res.get("data", {}).get("result", [])}


class Fleet:
    """The servers: node name -> process, address, threads, model."""

    def __init__(self, tmp, server_bin, grpc_port, metrics_port, schedule_plan):
        self.tmp, self.server_bin = tmp, server_bin
        self.grpc_port, self.metrics_port = grpc_port, metrics_port
        self.schedule_plan = schedule_plan
        self.nodes = {}  # name -> dict(proc, address, threads, model)

    def start(self, name, address, model, threads, extra_min_launch=None):
        port_file = os.path.join(self.tmp, f"{name}.{address}.port")
        logf = open(os.path.join(self.tmp, f"{name}.log"), "a")
        proc = subprocess.Popen(
            [self.server_bin, f"--listen={address}:{self.grpc_port}", f"--port_file={port_file}",
             "--backend=cpu", f"--metrics_listen={address}:{self.metrics_port}",
             f"--node_name={name}", f"--cpu_device_name={model}", f"--cpu_threads={threads}",
             f"--cpu_min_launch_seconds={extra_min_launch or MIN_LAUNCH[model]}",
             f"--schedule_plan={self.schedule_plan}", "--schedule_interval_seconds=4",
             "--default_min_time_seconds=0.01", "--default_timeout_seconds=1",
             "--shutdown_grace_seconds=2"],
            stdout=logf, stderr=subprocess.STDOUT)
        self.nodes[name] = {"proc": proc, "address": address, "model": model, "threads": threads}
        return port_file

    def wait_ready(self, port_files, timeout=30):
        end = time.time() + timeout
        pending = set(port_files)
        while pending and time.time() < end:
            pending = {p for p in pending if not (os.path.exists(p) and open(p).read().strip())}
            time.sleep(0.1)
        return not pending

    def stop(self, name, sig=signal.SIGTERM):
        proc = self.nodes[name]["proc"]
        proc.send_signal(sig)
        try:
            return proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(timeout=10)

    def stop_all(self):
        for node in self.nodes.values():
            if node["proc"].poll() is None:
                node["proc"].send_signal(signal.SIGTERM)
        for node in self.nodes.values():
            try:
                node["proc"].wait(timeout=20)
            except subprocess.TimeoutExpired:
                node["proc"].kill()
                node["proc"].wait(timeout=10)

    def write_hosts(self, hosts_path, original):
        # Same inode (truncate and write): the bind mount over /etc/hosts follows it.
        with open(hosts_path, "w") as f:
            f.write(original.rstrip("\n") + "\n")
            for node in self.nodes.values():
                if node["proc"].poll() is None or node.get("dead_but_listed"):
                    f.write(f"{node['address']} {NAME}\n")

    def write_file_sd(self, path):
        groups = [{"targets": [f"{n['address']}:{self.metrics_port}"], "labels": {"node": name}}
                  for name, n in sorted(self.nodes.items())]
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(groups, f)
        os.replace(tmp, path)  # Prometheus sees whole files only


def run_fleet(cli_bin, tmp, grpc_port, plan, report, extra=()):
    args = [cli_bin, "fleet", f"--plan={plan}", f"--dns={NAME}:{grpc_port}", "--parallelism=1",
            "--retries=1", "--target_timeout=60", f"--outlier_threshold={THRESHOLD}",
            f"--regression_threshold={THRESHOLD}", f"--report_file={report}", *extra]
    t0 = time.time()
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    log(f"gpubench fleet {' '.join(extra)}: exit {r.returncode} in {time.time() - t0:.1f} s")
    print(r.stdout, flush=True)
    with open(report) as f:
        text = f.read()
    return r, json.loads(text), text


def rows_by_key(report):
    out = {}
    for t in report.get("targets", []):
        for row in t.get("rows", []):
            key = (row["nodeName"], row["gpuUuid"], row["kernel"], row["elements"],
                   row["cacheMode"], row["blockSize"], row["itemsPerThread"])
            out[key] = row
    return out


def strip_comparison(expr):
    """An alert's expression without its final threshold: the quantity it watches."""
    m = re.match(r"^(.*?)\s*(==|!=|>=|<=|>|<)\s*[-0-9.e]+\s*$", expr.strip(), re.S)
    return m.group(1) if m else expr


def main():
    server_bin, cli_bin, src = sys.argv[1:4]
    if os.environ.get("GPUBENCH_FLEET_SANDBOX") != "1":
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            print("SKIP: needs root and unshare(1) for a private mount namespace (the test's own "
                  "/etc/hosts); CI runs as root")
            return 77
        probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "true"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"SKIP: no private mount namespace here ({probe.stderr.strip()}); the test's "
                  "own /etc/hosts needs one")
            return 77
        env = dict(os.environ, GPUBENCH_FLEET_SANDBOX="1")
        return subprocess.call(["unshare", "--mount", "--propagation", "private", "--",
                                sys.executable, *sys.argv], env=env)
    for tool in ("promtool", "prometheus"):
        if shutil.which(tool) is None:
            print(f"FAIL {tool} not installed (Debian package 'prometheus')")
            return 1

    tmp = tempfile.mkdtemp(prefix="gpubench_fleet_")
    original_hosts = open("/etc/hosts").read()
    hosts = os.path.join(tmp, "hosts")
    with open(hosts, "w") as f:
        f.write(original_hosts)
    subprocess.run(["mount", "--bind", hosts, "/etc/hosts"], check=True)

    grpc_port, metrics_port = free_port(), free_port()
    schedule_plan = os.path.join(tmp, "schedule.json")
    with open(schedule_plan, "w") as f:  # small: it feeds the metrics, not the comparison
        quick = {"minSamples": 3, "maxSamples": 3, "minTimeSeconds": 0.001, "timeoutSeconds": 0.05}
        json.dump({"sweeps": [{"kernels": ["copy_d2d"], "sizes": ["4096"], "measurement": quick},
                              {"kernels": ["latency_chase"], "sizes": ["16384"],
                               "measurement": dict(quick, cacheMode="HOT", warmupLaunches=1)}]}, f)
    plan = os.path.join(tmp, "plan.json")
    with open(plan, "w") as f:  # two block sizes: two rows per GPU, never merged
        json.dump({"kernels": ["add_f32"], "sizes": ["16384"], "blockSizes": [128, 256],
                   "measurement": {"cacheMode": "HOT", "minSamples": 5, "minTimeSeconds": 0.2,
                                   "timeoutSeconds": 1}}, f)
    fleet = Fleet(tmp, server_bin, grpc_port, metrics_port, schedule_plan)
    prom_proc = None
    try:
        names = [f"fleet-node-{i}" for i in range(1, NODES + 1)]
        port_files = [fleet.start(name, f"127.0.0.{i + 1}", MODEL_A if i <= 4 else MODEL_B,
                                  2 if i <= 4 else 1)
                      for i, name in enumerate(names, start=1)]
        check(fleet.wait_ready(port_files), f"{NODES} servers listen on 127.0.0.2-9:{grpc_port}")
        fleet.write_hosts(hosts, original_hosts)
        resolved = sorted({a[4][0] for a in socket.getaddrinfo(NAME, grpc_port, socket.AF_INET,
                                                               socket.SOCK_STREAM)})
        check(resolved == [f"127.0.0.{i}" for i in range(2, 10)],
              f"{NAME} resolves to every server inside the sandbox: {resolved}")

        # Prometheus with file_sd and the alert rules (real ones + a shortened test-only copy).
        file_sd = os.path.join(tmp, "targets.json")
        fleet.write_file_sd(file_sd)
        rules_file = os.path.join(src, "deploy/prometheus/rules.yml")
        rules = yaml.safe_load(open(rules_file))
        shutil.copy(rules_file, os.path.join(tmp, "rules.yml"))
        short = {"groups": [{"name": "gpubench-test-shortened", "rules": []}]}
        for rule in rules["groups"][0]["rules"]:
            if rule["alert"] == "GpubenchNoFreshResults":
                r = dict(rule, expr=rule["expr"].replace("> 1800", f"> {SHORT_FRESH_SECONDS}")
                         .replace("[2h]", "[10m]"), **{"for": "2s"})
                check(r["expr"] != rule["expr"], f"test-only rule derived from: {rule['expr']}")
                short["groups"][0]["rules"].append(r)
            if rule["alert"] == "GpubenchDown":
                short["groups"][0]["rules"].append(dict(rule, **{"for": "2s"}))
        with open(os.path.join(tmp, "rules_short.yml"), "w") as f:
            yaml.safe_dump(short, f)
        prom = free_port()
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                            "rule_files": ["rules.yml", "rules_short.yml"],
                            "scrape_configs": [{"job_name": "gpubench", "file_sd_configs": [
                                {"files": [file_sd], "refresh_interval": "1s"}]}]}, f)
        prom_proc = subprocess.Popen(
            ["prometheus", f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/data",
             f"--web.listen-address=127.0.0.1:{prom}"],
            stdout=open(f"{tmp}/prometheus.log", "w"), stderr=subprocess.STDOUT)

        # 1. Baseline.
        base_path = os.path.join(tmp, "baseline.json")
        r, base, base_text = run_fleet(cli_bin, tmp, grpc_port, plan, base_path)
        check(r.returncode == 0, f"baseline run exits 0 (got {r.returncode}; {r.stderr[-500:]})")
        check(base.get("targetsCompleted") == NODES and base.get("targetsTotal") == NODES,
              f"all {NODES} targets complete")
        base_rows = rows_by_key(base)
        check(len(base_rows) == 2 * NODES, f"{2 * NODES} distinct rows (node x GPU x block size): "
                                            f"{len(base_rows)}")
        check({k[0] for k in base_rows} == set(names), "every row names its node")
        check(all(k[1].startswith("CPU-") for k in base_rows), "rows carry stable device UUIDs")
        models = {s["gpuModel"]: s for s in base.get("summaries", [])}
        check(set(models) == {MODEL_A, MODEL_B} and len(base.get("summaries", [])) == 4,
              f"summaries per model and block size: {[(s['gpuModel'], s['blockSize'], s['gpus']) for s in base.get('summaries', [])]}")
        check(all(s["gpus"] == 4 for s in base.get("summaries", [])), "4 GPUs in each group")
        check('"gpuUuid"' in base_text and '"gpu_uuid"' not in base_text and '"targetsCompleted"' in base_text,
              "the report is protobuf JSON (lowerCamelCase)")
        print("baseline outliers:", base.get("outliers", []), flush=True)

        # 2. Half of the nodes recreated on new addresses (127.0.0.10-13), same identities.
        moved = names[:4]
        for i, name in enumerate(moved):
            rc = fleet.stop(name)
            check(rc == 0, f"{name} stopped by PID {fleet.nodes[name]['proc'].pid} (exit {rc})")
        port_files = [fleet.start(name, f"127.0.0.{10 + i}", MODEL_A, 2)
                      for i, name in enumerate(moved)]
        check(fleet.wait_ready(port_files), "restarted servers listen on 127.0.0.10-13")
        fleet.write_hosts(hosts, original_hosts)
        fleet.write_file_sd(file_sd)
        after_path = os.path.join(tmp, "after_restart.json")
        r, after, _ = run_fleet(cli_bin, tmp, grpc_port, plan, after_path,
                                [f"--baseline={base_path}"])
        check(r.returncode == 0, f"after the restart: exit 0, no false regression (got "
                                 f"{r.returncode}; {r.stderr[-800:]})")
        check(after.get("regressions", []) == [],
              f"no regressions and no missing rows: {[g.get('description') for g in after.get('regressions', [])]}")
        check(set(rows_by_key(after)) == set(base_rows), "the same row keys as the baseline")
        targets_now = {t["target"] for t in after.get("targets", [])}
        check({f"127.0.0.{10 + i}:{grpc_port}" for i in range(4)} <= targets_now,
              f"the moved nodes were reached at their new addresses: {sorted(targets_now)}")

        # 3. One node killed (still listed in DNS and service discovery), one made slow.
        dead, slow = names[7], names[0]  # fleet-node-8 (model B), fleet-node-1 (model A)
        rc = fleet.stop(dead, signal.SIGKILL)
        check(rc == -signal.SIGKILL, f"{dead} killed by PID (exit {rc})")
        fleet.nodes[dead]["dead_but_listed"] = True
        rc = fleet.stop(slow)
        check(rc == 0, f"{slow} stopped by PID (exit {rc})")
        port_files = [fleet.start(slow, fleet.nodes[slow]["address"], MODEL_A, 2, SLOW_MIN_LAUNCH)]
        check(fleet.wait_ready(port_files), f"{slow} restarted throttled (launches of at least "
                                            f"{SLOW_MIN_LAUNCH} s instead of {MIN_LAUNCH[MODEL_A]})")
        fleet.write_hosts(hosts, original_hosts)
        final_path = os.path.join(tmp, "final.json")
        r, final, _ = run_fleet(cli_bin, tmp, grpc_port, plan, final_path,
                                [f"--baseline={base_path}"])
        check(r.returncode == 5, f"a dead and a slow node: exit 5 (got {r.returncode})")
        dead_target = f"{fleet.nodes[dead]['address']}:{grpc_port}"
        check([f["target"] for f in final.get("failures", [])] == [dead_target],
              f"exactly the killed node failed: {final.get('failures')}")
        check(final.get("targetsCompleted") == NODES - 1, "the other 7 targets complete")
        kinds = {}
        for g in final.get("regressions", []):
            kinds.setdefault(g["kind"], []).append(g)
        check([g["target"] for g in kinds.get("FAILED", [])] == [dead_target],
              f"FAILED regression for the killed node's address: {kinds.get('FAILED')}")
        check({g["nodeName"] for g in kinds.get("MISSING", [])} == {dead}
              and len(kinds.get("MISSING", [])) == 2,
              f"its two rows are MISSING, named by node: {[g.get('description') for g in kinds.get('MISSING', [])]}")
        check({g["nodeName"] for g in kinds.get("SLOWER", [])} == {slow},
              f"the slow node, and only it, is SLOWER: {[g.get('description') for g in kinds.get('SLOWER', [])]}")
        outliers = final.get("outliers", [])
        check(outliers and {o["nodeName"] for o in outliers} == {slow}
              and all(o["gpuModel"] == MODEL_A for o in outliers),
              f"the slow node is an outlier of its model only: "
              f"{[(o['nodeName'], o['gpuModel'], round(o['fractionUnderMedian'], 2)) for o in outliers]}")
        check(slow in r.stderr and "REGRESSIONS" in r.stderr, "stderr names the regression")

        # 4. Prometheus: every expression per node, and the alerts. First one failed run on every
        # live node (the deadline passes while it measures), so the failure panels have data.
        live = set(names) - {dead}
        def fail_runs(nodes):  # concurrently; each exits 3 when its deadline passes
            procs = [subprocess.Popen(
                [cli_bin, "run", "add_f32", "--size=1Mi", "--min_samples=100000",
                 "--max_samples=100000", "--timeout=60", "--rpc_timeout_seconds=2",
                 f"--target={fleet.nodes[n]['address']}:{grpc_port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for n in sorted(nodes)]
            return [p.wait(timeout=60) for p in procs]

        codes = fail_runs(live)
        check(codes == [3] * len(live), f"a run past its deadline on every live node exits 3: {codes}")
        end = time.time() + 60
        retried = False
        while time.time() < end:
            try:
                failed_nodes = nodes_of(query(prom, 'gpubench_runs_total{outcome!="ok"}'))
                if nodes_of(query(prom, "gpubench_build_info")) >= live and failed_nodes >= live:
                    break
                if not retried and time.time() > end - 40:
                    # A call whose deadline passed before its server saw it counts nowhere: again.
                    log(f"no failed run recorded yet on {sorted(live - failed_nodes)}: once more")
                    fail_runs(live - failed_nodes)
                    retried = True
            except OSError:
                pass
            time.sleep(0.5)
        check(time.time() < end, "Prometheus scrapes every live node through file_sd, failed runs "
                                 "included")
        time.sleep(3)
        dashboard = json.load(open(os.path.join(src, "deploy/grafana/gpubench-dashboard.json")))
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                expr = (target["expr"].replace("$__rate_interval", "1m")
                        .replace("$instance", ".*").replace("$gpu_model", ".*")
                        .replace("$node", ".*"))
                res = query(prom, expr)
                got = nodes_of(res)
                selected = selected_kernels(expr, FED)
                if any(name in expr for name in GPU_ONLY):
                    check(res.get("status") == "success",
                          f"panel '{panel['title']}': {expr} evaluates (GPU-only)")
                elif selected is not None and not selected:
                    check(res.get("status") == "success",
                          f"panel '{panel['title']}': {expr} evaluates (a family this test "
                          f"does not run)")
                elif "DCGM_" in expr:
                    # No dcgm-exporter here; prometheus_stack serves one and checks the joins' data.
                    check(res.get("status") == "success",
                          f"panel '{panel['title']}': {expr} evaluates (DCGM join)")
                else:
                    check(got >= live, f"panel '{panel['title']}': {expr} has data for every "
                                       f"node (missing: {sorted(live - got)})")
        for group in rules["groups"]:
            for rule in group["rules"]:
                expr = strip_comparison(rule["expr"])
                res = query(prom, expr)
                got = nodes_of(res)
                if "kube_" in expr:
                    # kube-state-metrics' series (the fleet CronJob's Jobs): none outside a
                    # cluster; tests/metrics/rules_test.yml tests the alert.
                    check(res.get("status") == "success", f"alert {rule['alert']}: {expr} "
                                                          f"evaluates (kube-state-metrics)")
                elif any(name in expr for name in GPU_ONLY):
                    check(res.get("status") == "success", f"alert {rule['alert']}: {expr} "
                                                          f"evaluates (GPU-only)")
                else:
                    check(got >= live, f"alert {rule['alert']}: {expr} has data for every node "
                                       f"(missing: {sorted(live - got)})")
        # The no-fresh-results alert (test copy: > {SHORT_FRESH_SECONDS} s, for 2s) fires for the
        # killed node only; the restarted nodes' old addresses do not alert.
        firing = set()
        end = time.time() + 90
        while time.time() < end:
            alerts = json.loads(http_get(f"http://127.0.0.1:{prom}/api/v1/alerts"))["data"]["alerts"]
            firing = {(a["labels"]["alertname"], a["labels"].get("node", "")) for a in alerts
                      if a["state"] == "firing"}
            if ("GpubenchNoFreshResults", dead) in firing and ("GpubenchDown", dead) in firing:
                break
            time.sleep(1)
        log(f"firing alerts: {sorted(firing)}")
        check(("GpubenchNoFreshResults", dead) in firing, f"GpubenchNoFreshResults fires for {dead}")
        check({n for a, n in firing if a == "GpubenchNoFreshResults"} == {dead},
              "and for no other node (moved and restarted nodes included)")
        check({n for a, n in firing if a == "GpubenchDown"} == {dead},
              f"GpubenchDown fires for {dead} only")
        res = json.loads(http_get(f"http://127.0.0.1:{prom}/api/v1/rules"))
        health = [r.get("health") for g in res["data"]["groups"] for r in g["rules"]]
        check(health and all(h == "ok" for h in health), f"Prometheus rule health: {health}")
    finally:
        fleet.stop_all()
        if prom_proc is not None:
            prom_proc.send_signal(signal.SIGTERM)
            try:
                prom_proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                prom_proc.kill()
        if failures:
            for name in sorted(os.listdir(tmp)):
                if name.endswith(".log"):
                    print(f"--- {name} (tail)\n" + "".join(open(os.path.join(tmp, name)).readlines()[-15:]))
        subprocess.run(["umount", "/etc/hosts"], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"{'FAILED' if failures else 'OK'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
