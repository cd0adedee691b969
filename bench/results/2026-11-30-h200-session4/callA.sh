#!/usr/bin/env bash
# Session 4, call A: gpu_test (the l2keep tail-free kernels, the reset change), #19 l2keep 16Mi, 1Mi cold gap re-check.
set -uo pipefail
cp .dev/lead/BUILD_COMMIT .
export BUNDLE=$PWD/.dev/lead/.bundle
source bench/device_lib.sh
mkdir -p $OUT/callA; S0=$(date +%s)
timeout 150 "$B/gpu_test" > $OUT/callA/gpu_test.txt 2>&1; echo "gpu_test rc=$? at $(( $(date +%s) - S0 )) s" >> $OUT/callA/steps.txt
timeout 40 "$B/copy_gpu_test" > $OUT/callA/copy_gpu_test.txt 2>&1; echo "copy_gpu_test rc=$?" >> $OUT/callA/steps.txt
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED TEST|tests ran" $OUT/callA/gpu_test.txt $OUT/callA/copy_gpu_test.txt | tail -15
OUT=$OUT BUDGET_S=150 timeout 165 bash bench/run_device_l2keep.sh > $OUT/callA/l2keep_stdout.txt 2>&1; echo "l2keep rc=$? at $(( $(date +%s) - S0 )) s" >> $OUT/callA/steps.txt
OUT=$OUT KERNELS=add_f32_tuned,add_f16_tuned,add_f32_l2keep,add_f16_l2keep SIZES=1048576 ROUNDS=2 BUDGET_S=60 timeout 70 bash bench/run_device_cold_gap.sh > $OUT/callA/cold_gap_stdout.txt 2>&1; echo "cold_gap rc=$? at $(( $(date +%s) - S0 )) s" >> $OUT/callA/steps.txt
tar czf $OUT/callA.tar.gz -C $OUT callA
cat $OUT/callA/steps.txt; tail -40 $OUT/callA/l2keep_stdout.txt; grep -v "rc=" $OUT/callA/cold_gap_stdout.txt | tail -25
