#!/usr/bin/env bash
# The Kubernetes packaging as CI checks it: every overlay renders with `kubectl kustomize`, yamllint
# passes on deploy/, every rendered object validates against the Kubernetes and prometheus-operator
# schemas with unknown-field detection (tests/deploy/validate.mjs, npm deps from
# scripts/install_deps.sh), and each overlay says what docs/deployment.md promises.
#   tests/deploy/kubernetes_test.sh <source dir>
set -euo pipefail
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

yamllint -c "$src/.yamllint.yaml" "$src/deploy" || fail "yamllint deploy/"
echo "ok: yamllint deploy/"
node "$src/tests/deploy/validate.mjs" --self-test >/dev/null || fail "validator self-test"
echo "ok: validator rejects a typo'd field, a wrong type and a CRD typo"

for overlay in shared-node exclusive; do
  kubectl kustomize "$src/deploy/kubernetes/overlays/$overlay" > "$tmp/$overlay.yaml" \
    || fail "kubectl kustomize overlays/$overlay"
  python3 -c 'import json, sys, yaml
print(json.dumps([o for o in yaml.safe_load_all(open(sys.argv[1])) if o]))' "$tmp/$overlay.yaml" \
    > "$tmp/$overlay.json"
  node "$src/tests/deploy/validate.mjs" < "$tmp/$overlay.json" > "$tmp/$overlay.out" \
    || { cat "$tmp/$overlay.out"; fail "schema validation of overlays/$overlay"; }
  echo "ok: overlays/$overlay renders and validates ($(tail -1 "$tmp/$overlay.out"))"
  python3 - "$tmp/$overlay.json" "$overlay" "$src" <<'PY'
import json, os, sys
objs, overlay, src = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def check(ok, what):
    if not ok:
        sys.exit(f"FAIL: overlays/{overlay}: {what}")
    print(f"ok: overlays/{overlay}: {what}")
kinds = [o["kind"] for o in objs]
check(kinds[0] == "Namespace", "the Namespace comes first")
ns = objs[0]["metadata"]["labels"]
check(all(f"pod-security.kubernetes.io/{m}" in ns for m in ("enforce", "audit", "warn")),
      "Pod Security labels on the namespace")
for o in objs:
    if o["kind"] in ("ServiceMonitor", "PrometheusRule"):
        check(o["metadata"]["labels"].get("release") == "kube-prometheus-stack",
              f"{o['kind']} carries the selection label release=kube-prometheus-stack")
ds = next(o for o in objs if o["kind"] == "DaemonSet")
cron = next(o for o in objs if o["kind"] == "CronJob")
pods = [ds["spec"]["template"]["spec"], cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]]
check(all(p.get("automountServiceAccountToken") is False for p in pods),
      "no service account token mounted (DaemonSet, CronJob)")
check(ds["spec"]["template"]["spec"].get("priorityClassName") == "gpubench-node-agent"
      and any(o["kind"] == "PriorityClass" for o in objs), "DaemonSet has its priority class")
c = ds["spec"]["template"]["spec"]["containers"][0]
env = {e["name"]: e for e in c.get("env", [])}
check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
      == "spec.nodeName", "NODE_NAME from the downward API")
# The health history survives pod restarts: --state_dir on a hostPath volume mounted there.
state = next((a.split("=", 1)[1] for a in c["args"] if a.startswith("--state_dir=")), None)
mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
check(state is not None and "hostPath" in volumes.get(mounts.get(state), {}),
      f"--state_dir={state} is a hostPath volume (the health history outlives the pod)")
images = {c["image"]} | {cc["image"] for cc in pods[1]["containers"]}
check(len({i.split(":")[1] for i in images}) == 1, f"one image tag {sorted(images)}")
check(pods[1]["containers"][0]["image"].startswith("ghcr.io/gpubench/gpubench-client:"),
      "the fleet CronJob runs the slim client image")
# Grafana's sidecar (kube-prometheus-stack) loads ConfigMaps labelled grafana_dashboard="1": the
# dashboard file itself, under a fixed name (a hashed one would leave old copies behind).
with open(os.path.join(src, "deploy/grafana/gpubench-dashboard.json")) as f:
    dashboard = json.load(f)
boards = [o for o in objs if o["kind"] == "ConfigMap"
          and o["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
check(len(boards) == 1 and boards[0]["metadata"]["name"] == "gpubench-grafana-dashboard"
      and boards[0]["metadata"].get("namespace") == objs[0]["metadata"]["name"],
      "one ConfigMap gpubench-grafana-dashboard labelled grafana_dashboard=1 in the namespace")
check(len(boards) == 1 and [json.loads(v) for v in boards[0]["data"].values()] == [dashboard],
      "it holds deploy/grafana/gpubench-dashboard.json")
gpus = c["resources"].get("limits", {}).get("nvidia.com/gpu")
if overlay == "shared-node":
    check(gpus is None, "no nvidia.com/gpu request (the GPUs stay the tenants')")
    check("--gpu_sharing=shared" in c["args"], "--gpu_sharing=shared")
    check(env.get("NVIDIA_VISIBLE_DEVICES", {}).get("value") == "all", "sees all GPUs")
    check(ds["spec"]["template"]["spec"].get("hostPID") is True, "hostPID (tenants' PIDs)")
else:
    check(gpus == 8, "requests the node's 8 GPUs")
    check("--gpu_sharing=exclusive" in c["args"], "--gpu_sharing=exclusive")
PY
done

# The optional rapid-reset proxy (components/h2-proxy) on top of each overlay: renders, validates,
# puts the server on the pod's loopback behind the proxy, and its nginx.conf parses (where nginx
# is installed: the rapid-reset e2e test runs the same file).
rel=$(realpath --relative-to="$tmp" "$src/deploy/kubernetes")
for overlay in shared-node exclusive; do
  mkdir -p "$tmp/proxy-$overlay"
  cat > "$tmp/proxy-$overlay/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../$rel/overlays/$overlay
components:
  - ../$rel/components/h2-proxy
EOF
  kubectl kustomize "$tmp/proxy-$overlay" > "$tmp/proxy-$overlay.yaml" \
    || fail "kubectl kustomize overlays/$overlay + components/h2-proxy"
  python3 -c 'import json, sys, yaml
print(json.dumps([o for o in yaml.safe_load_all(open(sys.argv[1])) if o]))' \
    "$tmp/proxy-$overlay.yaml" > "$tmp/proxy-$overlay.json"
  node "$src/tests/deploy/validate.mjs" < "$tmp/proxy-$overlay.json" > "$tmp/proxy-$overlay.out" \
    || { cat "$tmp/proxy-$overlay.out"; fail "schema validation of overlays/$overlay + h2-proxy"; }
  echo "ok: overlays/$overlay + components/h2-proxy renders and validates"
  python3 - "$tmp/proxy-$overlay.json" "$overlay" <<'PY'
import json, sys
objs, overlay = json.load(open(sys.argv[1])), sys.argv[2]
def check(ok, what):
    if not ok:
        sys.exit(f"FAIL: overlays/{overlay} + h2-proxy: {what}")
    print(f"ok: overlays/{overlay} + h2-proxy: {what}")
ns = objs[0]["metadata"]["name"]
ds = next(o for o in objs if o["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
server, proxy = pod["containers"][0], pod["containers"][-1]
check(server["name"] == "gpubench" and proxy["name"] == "h2-proxy", "a sidecar h2-proxy")
listens = [a for a in server["args"] if a.startswith("--listen=")]
check(listens[-1] == "--listen=127.0.0.1:50052", "the server's last --listen is the loopback")
grpc = [(c["name"], p["containerPort"]) for c in pod["containers"] for p in c.get("ports", [])
        if p.get("name") == "grpc"]
check(grpc == [("h2-proxy", 50051)], "the pod's grpc port (Service, probes) is the proxy's")
check(server["readinessProbe"]["grpc"]["port"] == 50051, "probes go through the proxy")
maps = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
volume = next(v for v in pod["volumes"] if v["name"] == "h2-proxy-config")
name = volume["configMap"]["name"]
check(name in maps and maps[name]["metadata"].get("namespace") == ns
      and "nginx.conf" in maps[name]["data"], f"its nginx.conf ConfigMap {name} in {ns}")
check("127.0.0.1:50052" in maps[name]["data"]["nginx.conf"], "nginx passes to 127.0.0.1:50052")
check(proxy["securityContext"].get("readOnlyRootFilesystem") is True
      and proxy["securityContext"]["capabilities"]["drop"] == ["ALL"]
      and proxy["resources"]["limits"].get("memory"), "the proxy is locked down and bounded")
PY
done
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
if [ -x "$nginx_bin" ]; then
  conf="$src/deploy/kubernetes/components/h2-proxy/nginx.conf"
  "$nginx_bin" -t -q -p "$tmp" -c "$conf" 2>"$tmp/nginx.err" \
    || { cat "$tmp/nginx.err"; fail "nginx -t $conf"; }
  echo "ok: components/h2-proxy/nginx.conf parses (nginx -t)"
else
  echo "NOT CHECKED: nginx is not installed; components/h2-proxy/nginx.conf was not parsed"
fi
echo "PASS"
