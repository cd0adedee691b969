#!/usr/bin/env bash
# Session 7, call 8: the whole gpu_test on the final code (placements in the CUDA session).
cd "$(dirname "$0")"
source bench/device_lib.sh
mkdir -p "$OUT/call8"
( cd .bundle/bin && timeout 170 ./gpu_test ) > "$OUT/call8/gpu_test.txt" 2>&1
echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/call8/gpu_test.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED' "$OUT/call8/gpu_test.txt" | head
grep -E "tests ran" "$OUT/call8/gpu_test.txt"
tar czf "$OUT/call8.tar.gz" -C "$OUT" call8
