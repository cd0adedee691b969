#!/usr/bin/env bash
# Session 4, call B: #17 GEMM 4096 hot-sample probe (duty cycle, stream holds), then the GEMM goal table with every sample kept on both sides.
set -uo pipefail
cp .dev/lead/BUILD_COMMIT .
export BUNDLE=$PWD/.dev/lead/.bundle
S0=$(date +%s)
OUT=$OUT timeout 125 bash bench/run_device_gemm_hot.sh 4096 > "$OUT/gemm_hot_stdout.txt" 2>&1; echo "gemm_hot rc=$? at $(( $(date +%s) - S0 )) s" | tee -a "$OUT/steps.txt"
OUT=$OUT BUDGET_SECONDS=300 timeout 330 bash bench/run_device_gemm.sh > "$OUT/gemm_stdout.txt" 2>&1; echo "gemm rc=$? at $(( $(date +%s) - S0 )) s" | tee -a "$OUT/steps.txt"
tail -30 "$OUT/gemm_hot_stdout.txt"; grep -B3 -A14 "^| precision | M=N=K" "$OUT/gemm_stdout.txt" | head -30; grep "Goal cases" "$OUT/gemm_stdout.txt"
