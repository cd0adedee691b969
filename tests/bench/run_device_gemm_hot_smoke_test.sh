#!/usr/bin/env bash
# CI smoke test of bench/run_device_gemm_hot.sh (issue #17, the GEMM 4096 hot-sample experiment) on
# the CPU backend at a small size: without the probe (a CUDA binary) and without torch, the script
# must still run gpubench's side through a server with --throttle_threshold=0, pack its archive and
# write the side-by-side summary.
#   run_device_gemm_hot_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$src/tests/bench/smoke_lib.sh"
smoke_begin "$build"
cd "$src"
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu bash bench/run_device_gemm_hot.sh 64 > "$work/stdout" 2>&1
summary=$work/out/gemm_hot/summary.txt
fail() { echo "FAIL: $*"; cat "$work/stdout"; exit 1; }
[[ -s $summary ]] || fail "no summary"
for p in bf16 f16; do
  grep -qE '"throttleThreshold": 0(,|$)' "$work/out/gemm_hot/run_$p.json" || fail "$p not run at threshold 0"
  grep -qE "^$p: median [0-9.]+ us, [0-9.]+ TFLOP/s, [0-9]+ samples .*duty [0-9.]+" "$summary" ||
    fail "no $p summary line"
done
grep -q "no $work/bundle/bin/gemm_hot_probe in the bundle" "$work/out/gemm_hot/steps.txt" ||
  fail "the missing probe is not reported"
# Listed to a file first: `tar | grep -q` under pipefail fails when grep exits before tar (SIGPIPE).
tar tzf "$work/out/gemm_hot.tar.gz" > "$work/archive.txt" || fail "unreadable archive"
grep -q summary.txt "$work/archive.txt" || fail "summary not in the archive"
echo "ok"
