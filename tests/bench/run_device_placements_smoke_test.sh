#!/usr/bin/env bash
# CI smoke test of bench/run_device_placements.sh (issue #19) on the CPU backend: every case runs
# with one placement and with P through the server in every round, and the report has a row per
# case and placement count (torch.add's side needs a GPU and is skipped where torch has none).
#   run_device_placements_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$(dirname "$0")/smoke_lib.sh"
smoke_begin "$build"
cd "$src"
fail() { echo "FAIL: $*"; cat "$work/stdout" 2>/dev/null; exit 1; }
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu RUNS=2 P=3 BUDGET_S=200 \
  CASES="add_f16_tuned:4Ki add_f32x4:64Ki" \
  bash bench/run_device_placements.sh > "$work/stdout" 2>&1 || fail "script exit $?"
R=$work/out/placements
[[ -s $work/out/placements.tar.gz ]] || fail "no archive"
for r in 1 2; do
  for p in 1 3; do
    grep -qE "^$r,gpubench,$p,add_f16_tuned,4096,[0-9.e+-]+$" "$R/runs.csv" ||
      fail "no row for round $r placements $p: $(cat "$R/runs.csv")"
    grep -qE "^$r,gpubench,$p,add_f32x4,65536," "$R/runs.csv" || fail "no add_f32x4 row"
  done
done
for row in "| f16 | 4096 | 1 |" "| f16 | 4096 | 3 |" "| f32 | 65536 | 1 |" "| f32 | 65536 | 3 |"; do
  grep -qF "$row" "$R/report.md" || fail "report row $row: $(cat "$R/report.md")"
done
echo "PASS"
