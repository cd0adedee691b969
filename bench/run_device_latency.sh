#!/usr/bin/env bash
# Issue #17's memory-latency proof in one device call; builds nothing. From the bundle (.bundle/,
# bench/make_bundle.sh): starts the server, runs the latency family's sweep (latency_chase, hot,
# footprints 16 KiB .. 1 GiB in x2 steps) and the independent bench/pchase at the same footprints,
# prints both side by side with the L1 / L2 / HBM plateaus and the 5% agreement goal
# (bench/latency_report.py), then a cold sweep at four footprints, one pass of the default fleet
# health plan (its GPU seconds) and the latency GPU tests. Every step is time-boxed; everything
# lands in ONE archive, $OUT/latency.tar.gz, refreshed after each step.
#   bench/run_device_latency.sh [SIZES]        (default 16Ki,32Ki,...,1Gi)
# MEASURE (sweep flags, default "--min_time=0.05 --timeout=5"), COLD_SIZES (default
# 16Ki,1Mi,16Mi,1Gi) and HEALTH_PLAN (a plan file instead of the ConfigMap's) narrow the run.
# BACKEND=cpu BUNDLE=DIR: a smoke run on a machine without a GPU (no pchase, no GPU tests).
set -uo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-16Ki,32Ki,64Ki,128Ki,256Ki,512Ki,1Mi,2Mi,4Mi,8Mi,16Mi,32Mi,64Mi,128Mi,256Mi,512Mi,1Gi}
source bench/device_lib.sh
results_begin latency "$(mktemp -d)"  # only the archive under $OUT
say() { echo "$*" | tee -a "$R/steps.txt"; }
cat "$R/machine.txt"
start_server "$R/server.log" || { pack; exit 1; }
say "server at $T: $(grep -m1 -i name "$R/devices.txt")"

# 1. The latency family, hot: the L1, L2 and HBM plateaus in one sweep.
MEASURE=${MEASURE:---min_time=0.05 --timeout=5}
cmd="$B/gpubench sweep --kernels=latency_chase --sizes=$sizes --mode=hot $MEASURE --format=json"
echo "$cmd" >> "$R/command.txt"
timeout 300 $cmd --target="$T" --progress=false > "$R/gpubench_hot.json" 2> "$R/sweep_hot.err"
say "gpubench latency sweep (hot) rc=$?"; pack

# 2. The independent pointer chase at the same footprints (bytes).
bytes=$(size_numbers "$sizes")
if [[ -x $B/pchase ]]; then
  echo "$B/pchase --reps=5 $bytes" >> "$R/command.txt"
  timeout 300 "$B/pchase" --reps=5 $bytes > "$R/pchase.csv" 2> "$R/pchase.err"
  say "pchase rc=$?"
else
  say "pchase: not in the bundle ($B/pchase; a CPU-only build has none)"
  : > "$R/pchase.csv"
fi
pack
python3 bench/latency_report.py "$R/gpubench_hot.json" "$R/pchase.csv" > "$R/report.md" 2>&1
say "latency_report rc=$?"
cat "$R/report.md"; pack

# 3. Cold: L2 flushed before each timed launch (gpubench cannot flush L1; the GPU invalidates it at
# every launch): every node's first load of the launch comes from DRAM, so from 8 to 32 MiB (one
# pass per launch) cold shows HBM latency; below, later passes hit the caches.
cold_sizes=${COLD_SIZES:-16Ki,1Mi,16Mi,1Gi}
cmd="$B/gpubench sweep --kernels=latency_chase --sizes=$cold_sizes --mode=cold $MEASURE --format=csv"
echo "$cmd" >> "$R/command.txt"
timeout 180 $cmd --target="$T" --progress=false > "$R/gpubench_cold.csv" 2> "$R/sweep_cold.err"
say "gpubench latency sweep (cold) rc=$?"
cat "$R/gpubench_cold.csv"; pack

# 4. One pass of the default fleet health plan (deploy/kubernetes/base/configmap.yaml) through
# `gpubench fleet`: every row verified, and the pass's wall time, an upper bound of the GPU time it
# costs a node (it includes the host's data generation and verification).
# HEALTH_PLAN=FILE runs another plan (the CPU smoke test's small one).
if [[ -n ${HEALTH_PLAN:-} ]]; then
  cp "$HEALTH_PLAN" "$R/health_plan.json"
else
  python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["plan.json"])' \
      deploy/kubernetes/base/configmap.yaml > "$R/health_plan.json" 2>> "$R/steps.txt"
fi
# Kernels this build does not have (a family still landing) are left out, and said so.
"$B/gpubench" kernels --target="$T" --format=csv > "$R/kernels.csv" 2>> "$R/steps.txt"
python3 - "$R/health_plan.json" "$R/kernels.csv" <<'PY' 2>&1 | tee -a "$R/steps.txt"
import csv, json, sys
plan = json.load(open(sys.argv[1]))
have = {row["name"] for row in csv.DictReader(open(sys.argv[2]))}
if "sweeps" not in plan:
    plan = {"sweeps": [plan]}
for key in ("sweeps", "multiDeviceSweeps"):
    kept = []
    for s in plan.get(key, []):
        gone = [k for k in s["kernels"] if k not in have]
        if gone:
            print(f"health plan: {', '.join(gone)} not in this build: left out")
        s["kernels"] = [k for k in s["kernels"] if k in have]
        if s["kernels"]:
            kept.append(s)
    plan[key] = kept
json.dump(plan, open(sys.argv[1], "w"))
PY
echo "$B/gpubench fleet --plan=health_plan.json --targets=<server> --format=json" >> "$R/command.txt"
start=$(date +%s.%N)
timeout 180 "$B/gpubench" fleet --plan="$R/health_plan.json" --targets="$T" --format=json \
    --progress=false > "$R/health_plan_report.json" 2> "$R/health_plan.err"
rc=$?
say "health plan pass rc=$rc, wall $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
python3 - "$R/health_plan_report.json" "$R/server.log" <<'PY' 2>&1 | tee -a "$R/steps.txt"
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit(f"health plan: no report ({e})")
rows = [r for t in report.get("targets", []) for r in t.get("rows", [])]
for t in report.get("targets", []):
    if not t.get("ok"):
        print("health plan target failed:", t.get("error"))
for r in rows:
    print(f"  {r['kernel']:20} {int(r['elements']):>12} {r.get('metric', ''):22} "
          f"{r.get('value', 0):.4g} verified={r.get('verified')}")
print(f"health plan: {len(rows)} rows, {sum(bool(r.get('verified')) for r in rows)} verified")
PY
pack

# 5. The latency GPU tests (gpu_test filtered), when the bundle has them.
if [[ -x $B/gpu_test ]]; then
  timeout 240 "$B/gpu_test" --gtest_filter='*Latency*:*latency*' > "$R/gpu_test_latency.txt" 2>&1
  say "gpu_test (latency) rc=$? $(tail -3 "$R/gpu_test_latency.txt" | tr '\n' ' ')"
fi
stop_server
grep -h "sampling\|error" "$R/sweep_hot.err" "$R/sweep_cold.err" 2>/dev/null | head -5
pack
say "archive: $OUT/latency.tar.gz"
rm -rf "$R"
