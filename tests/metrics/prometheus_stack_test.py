#!/usr/bin/env python3
"""The metrics story end to end, against real processes on loopback:

1. gpubench_server (CPU backend) with a scheduled plan and metrics on an ephemeral port; runs made
   through the CLI (successes, a sweep, a deadline-exceeded failure).
2. `promtool check metrics` on a real scrape; `promtool check rules` on deploy/prometheus/rules.yml.
3. A real Prometheus server scraping it; every PromQL expression of the Grafana dashboard and of
   the alert rules evaluated through the HTTP API without error, the dashboard ones returning data
   (except the GPU-only panels, which the CPU backend cannot feed: reported, not hidden).
4. Every YAML and JSON file under deploy/ parses; the PrometheusRule embeds rules.yml's and
   health_rules.yml's groups.

    prometheus_stack_test.py SERVER_BINARY CLI_BINARY SOURCE_DIR
"""
import glob
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
import urllib.parse
import urllib.request

import yaml

import dcgm_exporter

# Panels that only a GPU backend can feed (no theoretical peak or SMs on the CPU backend).
GPU_ONLY = ("gpubench_run_peak_bandwidth_ratio", "gpubench_run_theoretical_occupancy_ratio",
            "gpubench_run_achieved_occupancy_ratio", "gpubench_run_peak_flops_ratio")
# Families a build may lack while they land (their panels must then evaluate; with the family in
# the catalog they need data). Empty: every family has landed.
TOLERATED_MISSING_FAMILIES = ()

failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


# dcgm-exporter's labels, documented beside the metrics table (on every device and result series).
DCGM_LABELS = {"UUID", "gpu", "pci_bus_id", "modelName", "Hostname"}


def readme_metric_labels(readme):
    """{metric: (required label names, optional ones)} from docs/metrics.md's metrics table ("as above"
    repeats the row before; parentheses are notes, not labels; "+ x for ..." is a label only some
    of the row's metrics have). Rows whose labels are prose are left out."""
    documented, previous, in_table = {}, (set(), set()), False
    for line in readme.splitlines():
        if line.startswith("| metric | labels | what |"):
            in_table = True
            continue
        if not in_table or line.startswith("|---"):
            continue
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = re.findall(r"`(\w+)`", cells[0])
        text = re.sub(r"\([^)]*\)", "", cells[1]).replace("`", "")
        if text.startswith("as above"):
            labels = previous
        elif "/" in text:
            continue  # prose (info metrics: "device facts / version, ...")
        else:
            parts = [l.strip() for l in re.split(r"[,;]", text) if l.strip()]
            labels = ({l.split(" ")[0] for l in parts if not l.startswith("+")},
                      {l.strip("+ ").split(" ")[0] for l in parts if l.startswith("+")})
        previous = labels
        for name in names:
            documented[name] = labels
    return documented


def scraped_labels(scrape):
    """{metric: label names seen} (histogram series under their family name, without `le`)."""
    seen = {}
    for line in scrape.splitlines():
        m = re.match(r"(\w+?)(_bucket|_sum|_count)?\{(.*)\} ", line)
        if m and not line.startswith("#"):
            labels = set(re.findall(r'(\w+)="', m.group(3))) - {"le"}
            seen.setdefault(m.group(1), set()).update(labels)
    return seen


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_file(path, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and open(path).read().strip():
            return open(path).read().strip()
        time.sleep(0.1)
    raise RuntimeError(f"{path} not written")


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def query(prom, expr):
    url = f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        return json.loads(http_get(url))
    except urllib.error.HTTPError as e:
        # Prometheus answers a query while it is still starting with 503 and a plain-text body
        # ("Service Unavailable"): not JSON. Seen in clean-clone CI (session 7), where the
        # readiness loop below then died on the JSON error instead of trying again.
        body = e.read().decode()
        try:
            return json.loads(body)
        except ValueError:
            return {"status": "error", "error": f"HTTP {e.code}: {body.strip()}"}


def selected_kernels(expr, catalog):
    """The kernels of `catalog` (name -> family) that an expression's family / kernel matchers
    select (a panel of one family needs a run of it to have data); None when it has neither."""
    fam = re.search(r'family=~?"([^"]*)"', expr)
    ker = re.search(r'kernel=~?"([^"]*)"', expr)
    if not fam and not ker:
        return None
    return {k for k, f in catalog.items()
            if (not fam or re.fullmatch(fam.group(1), f)) and (not ker or re.fullmatch(ker.group(1), k))}


def catalog_of(cli_bin, target):
    """name -> family of every kernel the server lists."""
    r = subprocess.run([cli_bin, "kernels", target, "--format=csv"], capture_output=True, text=True)
    lines = [l.split(",") for l in r.stdout.strip().splitlines()]
    return {row[0]: row[1] for row in lines[1:] if len(row) > 1}


def serve_file(port, path):
    """A process serving the file at `path` as /metrics (a stand-in dcgm-exporter), read on every
    request so that a test can switch what the exporter serves."""
    code = ("import http.server, sys\n"
            "class H(http.server.BaseHTTPRequestHandler):\n"
            "    def do_GET(self):\n"
            "        body = open(sys.argv[1], 'rb').read()\n"
            "        self.send_response(200)\n"
            "        self.send_header('Content-Type', 'text/plain; version=0.0.4')\n"
            "        self.end_headers()\n"
            "        self.wfile.write(body)\n"
            "    def log_message(self, *a):\n"
            "        pass\n"
            f"http.server.HTTPServer(('127.0.0.1', {port}), H).serve_forever()\n")
    return subprocess.Popen([sys.executable, "-c", code, path])


def check_dcgm_panels(prom, style, dashboard, notes):
    """With dcgm-exporter serving `style` (dcgm_exporter.STYLES): every DCGM panel of the
    dashboard and every query of docs/deploy-notes.md returns data whose legend labels are all
    set; on a stock install (no clock-event counter) the clock-event ones evaluate, empty."""
    clock = (dcgm_exporter.CLOCK_EVENTS, dcgm_exporter.CLOCK_EVENTS_LEGACY)
    queries = [(f"panel '{p['title']}'", t["expr"], t.get("legendFormat", ""))
               for p in dashboard["panels"] for t in p.get("targets", []) if "DCGM_" in t["expr"]]
    queries += [("docs/deploy-notes.md", q, "{{hostname}}" if '"hostname"' in q else "")
                for q in notes]
    check(len(queries) >= 5, f"{len(queries)} DCGM queries (dashboard, docs/deploy-notes.md)")
    for what, expr, legend in queries:
        expr = (expr.replace("$__rate_interval", "1m").replace("$node", ".*")
                .replace("$instance", ".*").replace("$gpu_model", ".*"))
        res = query(prom, expr)
        series = res.get("data", {}).get("result", []) if res.get("status") == "success" else []
        if style == "stock" and any(c in expr for c in clock):
            check(res.get("status") == "success" and not series,
                  f"[{style} dcgm-exporter] {what}: {expr} evaluates, no data without the "
                  f"clock-event counter line ({res.get('error', '')})")
            continue
        unset = sorted({l for s in series for l in dcgm_exporter.legend_labels(legend)
                        if not s["metric"].get(l)})
        check(bool(series) and not unset,
              f"[{style} dcgm-exporter] {what}: {expr} returns data, legend {legend!r} set "
              f"({len(series)} series; unset: {unset}; {res.get('error', '')})")


def serve_dcgm_style(prom, dcgm_file, text, style):
    """Switches the stand-in exporter to `style` and waits until Prometheus has only its series
    (the other style's go stale at the next scrape)."""
    with open(dcgm_file, "w") as f:
        f.write(text)
    host, other = ("Hostname", "hostname") if style == "legacy" else ("hostname", "Hostname")
    end = time.time() + 30
    while time.time() < end:
        now = query(prom, f'DCGM_FI_DEV_SM_CLOCK{{{host}!=""}}').get("data", {}).get("result")
        old = query(prom, f'DCGM_FI_DEV_SM_CLOCK{{{other}!=""}}').get("data", {}).get("result")
        if now and not old:
            return True
        time.sleep(0.5)
    return False


def main():
    server_bin, cli_bin, src = sys.argv[1:4]
    # The fake libnvidia-ml (tests/kernels/fake_nvml.cc) gives the CPU devices NVML facts, so the
    # series carry dcgm-exporter's labels (UUID, gpu, pci_bus_id, modelName, Hostname) as on a GPU.
    fake_nvml = sys.argv[4] if len(sys.argv) > 4 else ""
    for tool in ("promtool", "prometheus"):
        if shutil.which(tool) is None:
            print(f"FAIL {tool} not installed (Debian package 'prometheus')")
            return 1
    tmp = tempfile.mkdtemp(prefix="gpubench_prom_")
    procs = []
    try:
        plan = os.path.join(tmp, "plan.json")
        with open(plan, "w") as f:
            json.dump({"kernels": ["add_f32", "add_f16x8_pack"], "sizes": ["4096", "65536"],
                       "measurement": {"minSamples": 3, "minTimeSeconds": 0.001,
                                       "timeoutSeconds": 0.5}}, f)
        server = subprocess.Popen(
            [server_bin, "--listen=127.0.0.1:0", f"--port_file={tmp}/port", "--backend=cpu",
             "--metrics_listen=127.0.0.1:0", f"--metrics_port_file={tmp}/mport",
             f"--schedule_plan={plan}", "--schedule_interval_seconds=2",
             "--default_min_time_seconds=0.01", "--default_timeout_seconds=0.5",
             "--node_name=ci-node"] + ([f"--nvml_library={fake_nvml}"] if fake_nvml else []),
            stdout=open(f"{tmp}/server.log", "w"), stderr=subprocess.STDOUT)
        procs.append(server)
        port, mport = wait_file(f"{tmp}/port"), wait_file(f"{tmp}/mport")
        target = f"--target=127.0.0.1:{port}"
        for args in (["run", "add_f32x4", "--size=1Mi"], ["run", "saxpy_balanced", "--size=100000"],
                     ["sweep", "--kernels=add_f16,copy_d2d", "--sizes=1Ki,3000", "--progress=false"]):
            r = subprocess.run([cli_bin, *args, target], capture_output=True, text=True)
            check(r.returncode == 0, f"gpubench {' '.join(args)} exits 0 ({r.stderr.strip()[:200]})")
        # One small run of every other family of the catalog (GEMM, copies, latency),
        # so that each family's dashboard row has data. Peer copies need a second device: the
        # copy row gets its data from the host<->device kernels.
        catalog = catalog_of(cli_bin, target)
        check("latency_chase" in catalog, f"the catalog lists latency_chase ({len(catalog)} kernels)")
        ran = {"add_f32x4", "saxpy_balanced", "add_f16", "copy_d2d", "add_f32", "add_f16x8_pack"}
        sizes = {"latency": "16Ki,1Mi", "gemm": "64"}
        for family in sorted(set(catalog.values())):
            if any(catalog.get(k) == family for k in ran):
                continue
            kernel = next((k for k in sorted(catalog) if catalog[k] == family and "peer" not in k), None)
            if kernel is None:
                continue
            args = ["sweep", f"--kernels={kernel}", f"--sizes={sizes.get(family, '4096')}",
                    "--mode=hot", "--progress=false", "--min_time=0.001", "--timeout=1"]
            r = subprocess.run([cli_bin, *args, target], capture_output=True, text=True)
            check(r.returncode == 0, f"gpubench {' '.join(args)} exits 0 ({r.stderr.strip()[:200]})")
            ran.add(kernel)
        # A failed run: the deadline passes while it measures (counted as DEADLINE_EXCEEDED).
        r = subprocess.run([cli_bin, "run", "add_f32", "--size=4Mi", "--min_samples=100000",
                            "--max_samples=100000", "--timeout=60", "--rpc_timeout_seconds=0.5",
                            target], capture_output=True, text=True)
        check(r.returncode == 3, f"a run past its deadline exits 3 (got {r.returncode})")

        # The server records the failure once its worker notices the deadline (next sample), or at
        # once when the deadline passes while the run is still queued behind a scheduled pass.
        end = time.time() + 10
        while time.time() < end:
            scrape = http_get(f"http://127.0.0.1:{mport}/metrics")
            if 'outcome="DEADLINE_EXCEEDED"' in scrape:
                break
            time.sleep(0.2)
        with open(f"{tmp}/scrape.txt", "w") as f:
            f.write(scrape)
        r = subprocess.run(["promtool", "check", "metrics"], input=scrape, capture_output=True,
                           text=True)
        # dcgm-exporter's label names (UUID, modelName, Hostname) are camelCase by its choice; they
        # are kept verbatim so joins need no label_replace. Every other lint finding fails.
        problems = [l for l in (r.stdout + r.stderr).splitlines()
                    if l.strip() and "should be written in 'snake_case' not 'camelCase'" not in l]
        check(not problems, f"promtool check metrics on a real scrape (DCGM's camelCase label "
                            f"names allowed): {problems}")
        for family in ("gpubench_run_median_seconds", "gpubench_run_bandwidth_bytes_per_second",
                       "gpubench_run_seconds_per_load",
                       "gpubench_runs_total", "gpubench_run_duration_seconds_bucket",
                       "gpubench_queue_depth", "gpubench_grpc_requests_total",
                       "gpubench_grpc_request_duration_seconds_bucket", "gpubench_device_info",
                       "gpubench_build_info", "gpubench_run_verification_passed"):
            check(family in scrape, f"scrape has {family}")
        check('outcome="DEADLINE_EXCEEDED"' in scrape, "the failed run is counted by outcome")
        # docs/metrics.md's metrics table says what the scrape has. Every series
        # scraped carries the documented labels and no others (DCGM's are documented apart);
        # a documented metric may be missing only where the CPU backend cannot feed it.
        with open(os.path.join(src, "docs", "metrics.md")) as f:
            documented = readme_metric_labels(f.read())
        seen = scraped_labels(scrape)
        check(len(documented) >= 20, f"docs/metrics.md's metrics table parsed ({len(documented)} metrics)")
        for name, (labels, optional) in documented.items():
            if name not in seen:
                # gpubench_worker_restarts_total: a series appears with the first worker fault;
                # gpubench_user_kernel_worker_running: only on a server with --allow_user_kernels.
                check(name in GPU_ONLY or name in ("gpubench_run_registers_per_thread",
                                                   "gpubench_run_flops_per_second",
                                                   "gpubench_metrics_series_evicted_total",
                                                   "gpubench_worker_restarts_total",
                                                   "gpubench_user_kernel_worker_running"),
                      f"docs/metrics.md's {name} is on the scrape (or GPU-only, or not fed by this run)")
                continue
            extra = seen[name] - labels - optional - DCGM_LABELS
            check(labels <= seen[name] and not extra,
                  f"{name}: docs/metrics.md says labels {sorted(labels | optional)}, the scrape has "
                  f"{sorted(seen[name])}")

        rules_file = os.path.join(src, "deploy/prometheus/rules.yml")
        r = subprocess.run(["promtool", "check", "rules", rules_file], capture_output=True, text=True)
        check(r.returncode == 0, f"promtool check rules: {r.stdout.strip()}")

        # A dcgm-exporter-shaped exposition for the same GPUs (labels from gpubench_device_info),
        # served beside gpubench, so the dashboard's UUID joins return data.
        dcgm_port = free_port()
        dcgm_texts = {style: dcgm_exporter.exposition(scrape, style, src)
                      for style in dcgm_exporter.STYLES}
        check("UUID=" in dcgm_texts["current"] and 'gpu="3"' in dcgm_texts["current"]
              and 'hostname="ci-node"' in dcgm_texts["current"],
              "gpubench_device_info carries UUID, gpu (NVML index), the host for the DCGM join")
        dcgm_file = os.path.join(tmp, "dcgm.txt")
        with open(dcgm_file, "w") as f:
            f.write(dcgm_texts["current"])
        procs.append(serve_file(dcgm_port, dcgm_file))
        prom = free_port()
        config = os.path.join(tmp, "prometheus.yml")
        shutil.copy(rules_file, os.path.join(tmp, "rules.yml"))
        with open(config, "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                            "rule_files": ["rules.yml"],
                            # The `node` target label, as the ServiceMonitor and
                            # deploy/prometheus/prometheus.yml set it.
                            "scrape_configs": [{"job_name": "gpubench", "static_configs": [
                                {"targets": [f"127.0.0.1:{mport}"],
                                 "labels": {"node": "ci-node"}}]},
                                {"job_name": "dcgm-exporter", "static_configs": [
                                    {"targets": [f"127.0.0.1:{dcgm_port}"]}]}]}, f)
        procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp}/data",
             f"--web.listen-address=127.0.0.1:{prom}"],
            stdout=open(f"{tmp}/prometheus.log", "w"), stderr=subprocess.STDOUT))
        end = time.time() + 60
        while time.time() < end:
            try:
                res = query(prom, 'up{job="gpubench"}')
                if res.get("data", {}).get("result") and res["data"]["result"][0]["value"][1] == "1":
                    break
            except OSError:
                pass
            time.sleep(0.5)
        check(time.time() < end, "Prometheus scrapes gpubench (up == 1)")
        time.sleep(8)  # several scrapes and at least one more scheduled pass, for rate()

        dashboard = json.load(open(os.path.join(src, "deploy/grafana/gpubench-dashboard.json")))
        for var in dashboard["templating"]["list"]:
            if var["type"] == "query":
                expr = var["query"]["query"]
                label = expr[len("label_values("):-1].rsplit(",", 1)
                selector = label[0].replace("$instance", ".*").replace("$node", ".*")
                res = query(prom, selector)
                values = {s["metric"].get(label[1].strip(), "")
                          for s in res.get("data", {}).get("result", [])} - {""}
                check(res.get("status") == "success" and values,
                      f"dashboard variable {var['name']}: {selector} has {label[1].strip()} "
                      f"values {sorted(values)}")
        check([v["name"] for v in dashboard["templating"]["list"] if v["type"] == "query"][0]
              == "node", "the dashboard's first variable is the node (what series and alerts "
                         "key on), not the pod address")
        rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
        for family in ("Memory bandwidth", "GEMM", "Copies", "Memory latency"):
            check(any(t.startswith(family) for t in rows), f"the dashboard has a {family} row")
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):  # rows have none
                expr = (target["expr"].replace("$__rate_interval", "1m")
                        .replace("$instance", ".*").replace("$gpu_model", ".*")
                        .replace("$node", ".*"))
                res = query(prom, expr)
                ok = res.get("status") == "success"
                has_data = ok and bool(res["data"]["result"])
                selected = selected_kernels(expr, catalog)
                if any(name in expr for name in GPU_ONLY):
                    check(ok, f"panel '{panel['title']}': {expr} evaluates (GPU-only: "
                              f"{'data' if has_data else 'no data on the CPU backend'})")
                elif (selected is not None and not selected and
                      any(f in expr for f in TOLERATED_MISSING_FAMILIES)):
                    check(ok, f"panel '{panel['title']}': {expr} evaluates (its family is not "
                              f"in this build yet)")
                else:
                    check(has_data, f"panel '{panel['title']}': {expr} returns data "
                                    f"({res.get('error', '')})")
        # dcgm-exporter as clusters run it: main's `hostname`, the released `Hostname`, and a
        # stock install without the clock-event counter; the same queries for each.
        notes = dcgm_exporter.promql_blocks(os.path.join(src, "docs/deploy-notes.md"))
        for style in dcgm_exporter.STYLES:
            check(serve_dcgm_style(prom, dcgm_file, dcgm_texts[style], style),
                  f"Prometheus scrapes the {style} dcgm-exporter exposition")
            check_dcgm_panels(prom, style, dashboard, notes)
        rules = yaml.safe_load(open(rules_file))
        for group in rules["groups"]:
            for rule in group["rules"]:
                res = query(prom, rule["expr"])
                check(res.get("status") == "success",
                      f"alert {rule['alert']}: {rule['expr']} evaluates ({res.get('error', '')})")
        res = json.loads(http_get(f"http://127.0.0.1:{prom}/api/v1/rules"))
        health = [r.get("health") for g in res["data"]["groups"] for r in g["rules"]]
        check(health and all(h == "ok" for h in health), f"Prometheus rule health: {health}")

        for path in glob.glob(os.path.join(src, "deploy/**/*.y*ml"), recursive=True):
            try:
                docs = list(yaml.safe_load_all(open(path)))
                check(all(d for d in docs), f"{os.path.relpath(path, src)} parses")
            except yaml.YAMLError as e:
                check(False, f"{os.path.relpath(path, src)} parses: {e}")
        for path in glob.glob(os.path.join(src, "deploy/**/*.json"), recursive=True):
            try:
                json.load(open(path))
                check(True, f"{os.path.relpath(path, src)} parses")
            except ValueError as e:
                check(False, f"{os.path.relpath(path, src)} parses: {e}")
        pr = yaml.safe_load(open(os.path.join(src, "deploy/kubernetes/base/prometheusrule.yaml")))
        health_rules = yaml.safe_load(open(os.path.join(src, "deploy/prometheus/health_rules.yml")))
        check(pr["spec"]["groups"] == rules["groups"] + health_rules["groups"],
              "PrometheusRule embeds rules.yml's groups, then health_rules.yml's")
        cm = yaml.safe_load(open(os.path.join(src, "deploy/kubernetes/base/configmap.yaml")))
        plan_ok = json.loads(cm["data"]["plan.json"])
        sweeps = plan_ok.get("sweeps", []) + plan_ok.get("multiDeviceSweeps", [])
        check(set(plan_ok) <= {"sweeps", "multiDeviceSweeps"} and sweeps and
              all(set(s) <= {"kernels", "sizes", "blockSizes", "deviceIndex", "measurement",
                             "verify", "seed", "profile", "allDevices", "deviceUuid",
                             "itemsPerThread", "force"} for s in sweeps),
              "the ConfigMap's plan is a Plan of RunSweepRequests (tests/deploy/health_plan_test.py "
              "runs it)")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        if failures:
            for log in ("server.log", "prometheus.log"):
                path = os.path.join(tmp, log)
                if os.path.exists(path):
                    print(f"--- {log} (tail)\n" + "".join(open(path).readlines()[-30:]))
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'FAILED' if failures else 'OK'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
