#!/usr/bin/env bash
# Session 4, call D: the GEMM goal table with both sides paced to the same duty (MAX_DUTY=0.6, every sample kept).
set -uo pipefail
cp .dev/lead/BUILD_COMMIT .
export BUNDLE=$PWD/.dev/lead/.bundle
S0=$(date +%s)
MAX_DUTY=0.6 DEFAULT_RULE_SIZES= BUDGET_SECONDS=380 OUT=$OUT timeout 430 bash bench/run_device_gemm.sh > "$OUT/gemm_stdout.txt" 2>&1; echo "gemm rc=$? at $(( $(date +%s) - S0 )) s"
grep -B2 -A14 "^| precision | M=N=K" "$OUT/gemm_stdout.txt" | head -24; grep "Goal cases\|goal runs:" "$OUT/gemm_stdout.txt"
