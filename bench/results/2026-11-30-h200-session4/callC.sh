#!/usr/bin/env bash
# Session 4, call C: the #19 goal table (every add variant family's best vs torch.add and CUB, events on both sides).
set -uo pipefail
cp .dev/lead/BUILD_COMMIT .
export BUNDLE=$PWD/.dev/lead/.bundle
S0=$(date +%s)
KERNELS=add_f32_tuned,add_f32_l2keep,add_f32x4,add_f32_bulk,add_f16_tuned,add_f16_l2keep,add_f16_bulk,add_bf16_tuned,add_bf16_l2keep,add_bf16_bulk,cub_add_f32,cub_add_f16,cub_add_bf16 \
  MEASURE="--min_time=0.05 --timeout=0.8 --timer=events" EVENT_KERNELS="" SWEEP_TIMEOUT=70 OUT=$OUT \
  timeout 230 bash bench/run_device_add.sh 1Mi,16Mi,256Mi > "$OUT/add_stdout.txt" 2>&1; echo "add rc=$? at $(( $(date +%s) - S0 )) s"
grep -A40 "Goal table" "$OUT/add_stdout.txt" | head -45
