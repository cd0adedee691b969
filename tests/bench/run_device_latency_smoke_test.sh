#!/usr/bin/env bash
# CI smoke test of bench/run_device_latency.sh (issue #17's latency proof) on the CPU backend: the
# script must start the server, sweep latency_chase hot and cold, survive the missing pchase and
# GPU tests, run one pass of the fleet health plan, and pack everything into one archive.
#   run_device_latency_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$(dirname "$0")/smoke_lib.sh"
smoke_begin "$build"
cd "$src"
# Small footprints (the host's caches) and a small plan: seconds, not minutes.
cat > "$work/plan.json" <<'JSON'
{"sweeps": [{"kernels": ["add_f32"], "sizes": ["4096"]},
            {"kernels": ["latency_chase"], "sizes": ["65536"], "measurement": {"cacheMode": "HOT"}}]}
JSON
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu COLD_SIZES=16Ki,1Mi MEASURE="--min_time=0.01 --timeout=1" \
  HEALTH_PLAN=$work/plan.json \
  bash bench/run_device_latency.sh 16Ki,64Ki,256Ki,1Mi,4Mi > "$work/stdout" 2>&1
fail() { echo "FAIL: $*"; cat "$work/stdout"; exit 1; }
[[ -f $work/out/latency.tar.gz ]] || fail "no archive"
[[ $(ls "$work/out") == latency.tar.gz ]] || fail "more than the one archive under \$OUT: $(ls "$work/out")"
mkdir "$work/x" && tar xzf "$work/out/latency.tar.gz" -C "$work/x"
for f in machine.txt command.txt gpubench_hot.json gpubench_cold.csv report.md steps.txt \
         health_plan.json health_plan_report.json; do
  [[ -f $work/x/$f ]] || fail "archive lacks $f"
done
python3 - "$work/x/gpubench_hot.json" <<'PY' || fail "hot sweep results"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 5, f"{len(rows)} results, expected 5"
for r in rows:
    assert r["verification"]["passed"], r["request"]["elements"]
    assert 0 < r["throughput"]["secondsPerOperation"] < 1e-5, r["throughput"]
PY
grep -q "| 16 KiB |" "$work/x/report.md" || fail "no per-footprint table"
grep -q "Goal .*NOT MET" "$work/x/report.md" || fail "without pchase the goal cannot be met"
grep -c ",pass," "$work/x/gpubench_cold.csv" | grep -q 2 || fail "cold sweep: $(cat "$work/x/gpubench_cold.csv")"
grep -q "pchase: not in the bundle" "$work/x/steps.txt" || fail "missing pchase not reported"
grep -q "health plan: 2 rows, 2 verified" "$work/x/steps.txt" || fail "health plan pass not reported"
echo "ok: $(grep -c . "$work/x/steps.txt") steps, archive $(du -h "$work/out/latency.tar.gz" | cut -f1)"
