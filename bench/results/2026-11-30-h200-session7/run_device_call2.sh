#!/usr/bin/env bash
# Session 7, call 2: gpu_test of the changed code, then the same-process harness by stream kind
# and the new bulk stores, then one server per stream kind.
# (Archived as run. Its small and large steps failed at once: add_same_process.py had lost two
# lines of Harness.__init__ (AttributeError: no attribute 'start'); fixed before call 3, and
# tests/bench/add_same_process_fake_test.py now runs the harness in CI.)
cd "$(dirname "$0")"
source bench/device_lib.sh
mkdir -p "$OUT/call2"
( cd .bundle/bin && timeout 90 ./gpu_test --gtest_filter='CudaTest.StreamKindComesFromTheEnvironment:*bulk*:CudaTest.Cold*' ) > "$OUT/call2/gpu_test.txt" 2>&1
echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/call2/gpu_test.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED' "$OUT/call2/gpu_test.txt" | head
WORK=$OUT/call2/sp STEPS=small,large,streams BUDGET_S=${BUDGET_S:-300} \
  SMALL_ARGS="--holds=blocking --flushes=read --buffers=cudamalloc --streams=default,nonblocking,blocking,per_thread --rounds=5 --cold_reps=300" \
  LARGE_ARGS="--streams=default,nonblocking" \
  bash bench/run_device_same_process.sh
tar czf "$OUT/call2.tar.gz" -C "$OUT" call2
