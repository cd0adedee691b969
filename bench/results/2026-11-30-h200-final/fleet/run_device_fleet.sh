#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-30-h200-final/fleet/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_fleet.sh. To run it again: bash bench/results/2026-11-30-h200-final/fleet/run_device_fleet.sh
# Fleet identities on a real GPU (device kind nvidia-h200, about 1-2 minutes): one node's server,
# a fleet baseline, the server restarted on another port (a recreated pod: new address, same node
# and GPU), the fleet again against the baseline. Expected: rows keyed by the real GPU UUID
# (GPU-...) and --node_name, the second run matches every row (no MISSING, no FAILED), and on an
# idle H200 no SLOWER at the default 5% threshold; exit codes 0 and 0. Writes $OUT/fleet/.
#   BACKEND=cpu BUNDLE=DIR smoke-tests it without a GPU.
set -uo pipefail
source bench/device_lib.sh
OUT=${OUT:-/tmp/gpubench-out}
dir=$OUT/fleet
mkdir -p "$dir"
machine_info "$dir/machine.txt"
node=${NODE:-fleet-proof-node}
plan=$dir/plan.json
if [[ $BACKEND == cuda ]]; then
  echo '{"kernels": ["add_f32", "add_f32_tuned"], "sizes": ["268435456"], "blockSizes": [256, 512],
         "measurement": {"cacheMode": "COLD", "timeoutSeconds": 5}}' > "$plan"
else
  echo '{"kernels": ["add_f32", "add_f32_tuned"], "sizes": ["65536"], "blockSizes": [256, 512],
         "measurement": {"minTimeSeconds": 0.05, "timeoutSeconds": 0.5}}' > "$plan"
fi

# serve PORT_FILE LOG: the node's server on a free loopback port; sets $server and $T.
serve() {
  : > "$1"
  timeout 300 "$B/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 --port_file="$1" \
      --metrics_listen= --node_name="$node" --max_elements=1073741824 > "$2" 2>&1 &
  server=$!
  for _ in $(seq 1 150); do [[ -s $1 ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat "$1")
}

serve "$dir/port1" "$dir/server1.log"
echo "first address: $T (pid $server)" | tee "$dir/command.txt"
timeout 60 "$B/gpubench" devices --format=json --target="$T" > "$dir/devices.json"
timeout 200 "$B/gpubench" fleet --plan="$plan" --targets="$T" --report_file="$dir/baseline.json" \
    --progress=false > "$dir/baseline.txt" 2>&1
echo "baseline rc=$?" | tee -a "$dir/command.txt"
kill -TERM "$server"; wait "$server"

serve "$dir/port2" "$dir/server2.log"
echo "second address: $T (pid $server)" | tee -a "$dir/command.txt"
timeout 200 "$B/gpubench" fleet --plan="$plan" --targets="$T" --baseline="$dir/baseline.json" \
    --report_file="$dir/after.json" --progress=false > "$dir/after.txt" 2>&1
echo "after restart rc=$?" | tee -a "$dir/command.txt"
kill -TERM "$server"; wait "$server"

python3 - "$dir" "$node" <<'PY' | tee "$dir/summary.md"
import json, sys
d, node = sys.argv[1], sys.argv[2]
base, after = (json.load(open(f"{d}/{f}.json")) for f in ("baseline", "after"))
dev = json.load(open(f"{d}/devices.json"))["devices"][0]
print(f"device: {dev['name']} uuid {dev['uuid']} nodeName {dev.get('nodeName')}")
def rows(r):
    return {(x["nodeName"], x["gpuUuid"], x["kernel"], x["elements"], x.get("cacheMode"),
             x["blockSize"], x["itemsPerThread"]): x for t in r["targets"] for x in t.get("rows", [])}
b, a = rows(base), rows(after)
print(f"addresses: {[t['target'] for t in base['targets']]} -> {[t['target'] for t in after['targets']]}")
print(f"rows: baseline {len(b)}, after {len(a)}, same keys: {set(a) == set(b)}; "
      f"all on node {node}: {all(k[0] == node for k in b)}; GPU UUIDs: {sorted({k[1] for k in b})}")
print("| kernel | block | baseline GB/s | after GB/s | change |")
print("|---|---|---|---|---|")
for k in sorted(b):
    if k in a:
        x, y = b[k]["bandwidthBytesPerSecond"], a[k]["bandwidthBytesPerSecond"]
        print(f"| {k[2]} | {k[5]} | {x / 1e9:.1f} | {y / 1e9:.1f} | {100 * (y / x - 1):+.2f}% |")
print(f"regressions: {[g['description'] for g in after.get('regressions', [])]}")
PY
