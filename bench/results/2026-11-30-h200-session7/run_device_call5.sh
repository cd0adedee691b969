#!/usr/bin/env bash
# Session 7, call 5 (another lease): the whole gpu_test, then issue #19's goal table in 2 more
# alternating rounds (same commands as call 4).
cd "$(dirname "$0")"
source bench/device_lib.sh
mkdir -p "$OUT/call5"
( cd .bundle/bin && timeout 150 ./gpu_test ) > "$OUT/call5/gpu_test.txt" 2>&1
echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$OUT/call5/gpu_test.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED' "$OUT/call5/gpu_test.txt" | head
tar czf "$OUT/call5.tar.gz" -C "$OUT" call5
WORK=$OUT/call5/goal ROUNDS=2 ROUND_S=120 BUDGET_S=${GOAL_S:-300} bash bench/run_device_goal_rounds.sh > "$OUT/call5/goal_stdout.txt" 2>&1
cat "$OUT/call5/goal/report.md"
rm -f "$OUT"/goal_rounds.tar.gz
tar czf "$OUT/call5.tar.gz" -C "$OUT" call5
