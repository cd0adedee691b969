#!/usr/bin/env bash
# Session 7, call 4 (its gpu_test step did not run: this script forgot to source
# bench/device_lib.sh, so gpu_test found no libraries, rc 127; call 5 ran it): the whole gpu_test; issue #19's goal table in 2 alternating rounds (torch.add
# on a non-blocking stream like the server's, and at 1Mi also on the default stream); the 1Mi
# cold rows in one process on the same streams (bench/add_same_process.py small).
cd "$(dirname "$0")"
mkdir -p "$OUT/call4"
( cd .bundle/bin && timeout 150 ./gpu_test ) > "$OUT/call4/gpu_test.txt" 2>&1
echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$OUT/call4/gpu_test.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED' "$OUT/call4/gpu_test.txt" | head
tar czf "$OUT/call4.tar.gz" -C "$OUT" call4
WORK=$OUT/call4/goal ROUNDS=2 ROUND_S=150 BUDGET_S=${GOAL_S:-345} bash bench/run_device_goal_rounds.sh > "$OUT/call4/goal_stdout.txt" 2>&1
cat "$OUT/call4/goal/report.md"
tar czf "$OUT/call4.tar.gz" -C "$OUT" call4
WORK=$OUT/call4/sp STEPS=small BUDGET_S=60 \
  SMALL_ARGS="--kernels=torch,add_{d}_tuned --holds=blocking --flushes=read --buffers=cudamalloc --streams=default,nonblocking#0,nonblocking#1,nonblocking#2,nonblocking#3 --rounds=5 --cold_reps=300" \
  bash bench/run_device_same_process.sh > "$OUT/call4/sp_stdout.txt" 2>&1
grep -E "^\| (f16|bf16|f32) \| 1048576" "$OUT/call4/sp/report.md" | grep -v "| torch |"
rm -f "$OUT"/goal_rounds.tar.gz "$OUT"/same_process.tar.gz
tar czf "$OUT/call4.tar.gz" -C "$OUT" call4
