#!/usr/bin/env bash
# CI smoke test of bench/run_device_copies.sh (issue #17's copy proof script) on the CPU backend
# with two simulated devices: the script must start the server, sweep every copy kernel hot and
# cold (peer ones included), survive the missing torch and GPU test, and print the table and the
# goal table with every run verified.
#   run_device_copies_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$(dirname "$0")/smoke_lib.sh"
smoke_begin "$build"
cd "$src"
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu MEASURE="--min_time=0.01 --timeout=0.5" \
  bash bench/run_device_copies.sh 4Ki,64Ki > "$work/stdout" 2>&1
R=$work/out/copies
report=$R/report.md
fail() { echo "FAIL: $*"; cat "$work/stdout"; exit 1; }
[[ -s $work/out/copies.tar.gz ]] || fail "no archive"
grep -q "^Goal table" "$report" || fail "no goal table"
rows=$(grep -c "| pass |" "$report")
# 8 kernels x 2 sizes x 2 modes, and the two reverse peer runs.
[[ $rows -eq 34 ]] || fail "$rows verified rows, expected 34"
! grep -q "FAIL\|ERROR" "$report" || fail "a run failed"
[[ ! -s $R/sweep.err ]] || fail "sweep errors: $(cat "$R/sweep.err")"
grep -q "not evaluated" "$report" || fail "cases without torch were not marked unevaluated"
grep -q "host memory" "$R/server_hot.json" || fail "peer runs do not name their path"
echo "ok: $rows verified rows"
