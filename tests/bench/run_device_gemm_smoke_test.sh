#!/usr/bin/env bash
# CI smoke test of bench/run_device_gemm.sh (issue #17's GEMM proof script) on the CPU backend, at
# small sizes: the script must start the server, run every gemm precision in two (ABBA) rounds
# (square, then non-square and cold once), survive the missing torch, ncu, probe and GPU tests,
# and report every run verified with FLOP/s.
#   run_device_gemm_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bundle/bin" "$work/bundle/lib"
ln -s "$build/gpubench_server" "$build/gpubench" "$work/bundle/bin/"
cd "$src"
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu EXTRA=64 MEASURE="--min_time=0.02 --timeout=2" MAX_DUTY=0.5 \
  bash bench/run_device_gemm.sh 64,96 f16,bf16,tf32,f8e4m3 > "$work/stdout" 2>&1
report=$work/out/gemm/report.md
fail() { echo "FAIL: $*"; cat "$work/stdout"; cat "$report" 2>/dev/null; exit 1; }
[[ -s $report ]] || fail "no report"
! grep -q "FAILED" "$report" || fail "a run failed"
rows=$(grep -c "| True (" "$report" || true)
# 4 precisions x 2 sizes, then f32, f64, non-square and cold.
[[ $rows -eq 12 ]] || fail "$rows verified rows, expected 12"
grep -q "| bf16 | 128x16x64 | hot |" "$report" || fail "no non-square row"
grep -q "| bf16 | 64x64x64 | cold |" "$report" || fail "no cold row"
tar tzf "$work/out/gemm.tar.gz" > "$work/archive.txt" || fail "unreadable archive"
grep -q report.md "$work/archive.txt" || fail "report not in the archive"
# The goal runs keep every sample (--throttle_threshold=0); one more run per precision at the
# largest size under the default rule (0.75), in its own table.
grep -qE '"throttleThreshold": 0(,|$)' "$work/out/gemm/run_bf16_96_r1.json" ||
  fail "goal run not at threshold 0"
grep -q '"throttleThreshold": 0.75' "$work/out/gemm/run_bf16_96_t75.json" || fail "no default-rule run"
sed -n '/under its default rule/,/^## The rest/p' "$report" | grep -q "^| bf16 | 96 | " ||
  fail "no default-rule row"
# MAX_DUTY paces the goal runs only (the CPU backend's samples are real wall time, so the pacing
# shows in the achieved duty), and the report says so. A run that ends by its timeout may end a
# pause early (pacing never outlasts the timeout): a little over 0.5 then.
python3 - "$work/out/gemm/run_bf16_96_r2.json" "$work/out/gemm/run_bf16_96_t75.json" <<'PY' ||
import json, sys
def first(path):
    r = json.load(open(path))
    return r[0] if isinstance(r, list) else r
goal, t75 = first(sys.argv[1]), first(sys.argv[2])
assert goal["request"]["maxDuty"] == 0.5, goal["request"]
m = goal["measurement"]
assert 0 < m["dutyCycle"] <= (0.5 + 1e-9 if m["stopRule"] != "timeout" else 0.52), m
assert t75["request"].get("maxDuty", 0) == 0, t75["request"]
PY
  fail "goal runs not paced to MAX_DUTY=0.5"
grep -q -- "--max_duty=0.5" "$report" || fail "the report does not name the max_duty"
# ABBA: two gpubench rounds per goal case.
[[ -s $work/out/gemm/run_bf16_96_r1.json && -s $work/out/gemm/run_bf16_96_r2.json ]] ||
  fail "no second round"
echo "ok: $rows verified rows"
