#!/usr/bin/env bash
# Issue #19 exploration (2026-11-30, session 3): (1) does buffer placement explain the probe's
# 16Mi hot f16 lead? (2) which launch shape wins at 1Mi cold vs torch.add?
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/.bundle/lib:${LD_LIBRARY_PATH:-}
B=$D/.bundle/bin
R=$OUT/r19; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $R/gpu.csv 2>&1
N16=16777216
for round in 1 2; do
  for alloc in 0 67108928 1073741888; do
    EVENT_TIMER_ALLOC_BYTES=$alloc timeout 60 $B/event_timer add_f16_l2keep $N16 hot 30 2>>$R/err.txt | sed "s/^/et,alloc=$alloc,r$round,/" >> $R/hot16.csv
    EVENT_TIMER_ALLOC_BYTES=$alloc timeout 60 $B/event_timer add_bf16_l2keep $N16 hot 30 2>>$R/err.txt | sed "s/^/et,alloc=$alloc,r$round,/" >> $R/hot16.csv
  done
  for alloc in 33554432 67108928 1073741888; do
    for data in same distinct; do
      L2_PROBE_ALLOC_BYTES=$alloc L2_PROBE_DATA=$data L2_PROBE_FILTER=f16_keep25_768x1 timeout 60 $B/l2_probe $N16 2>>$R/err.txt | grep -v '^variant' | sed "s/^/probe,alloc=$alloc,$data,r$round,/" >> $R/hot16.csv
    done
  done
done
N1=1048576
for k in add_f16_l2keep add_f16_tuned add_f16_bulk add_bf16_bulk add_bf16_l2keep add_f32_tuned add_f32_l2keep; do
  for bs in 0 128 256 512 1024; do
    if [ $bs = 0 ]; then env=; else env="EVENT_TIMER_BLOCK_SIZE=$bs"; fi
    env $env timeout 60 $B/event_timer $k $N1 cold 300 2>>$R/err.txt | sed "s/^/bs=$bs,/" >> $R/cold1.csv
  done
done
for round in 1 2 3; do
  timeout 120 python3 bench/torch_add.py $N1 --dtypes=f16,bf16,f32 --modes=cold 2>>$R/err.txt | sed "s/^/r$round,/" >> $R/torch1.csv
  timeout 60 $B/event_timer add_f16_l2keep $N1 cold 300 2>>$R/err.txt | sed "s/^/r$round,/" >> $R/torch1.csv
done
cd $OUT && tar czf r19.tar.gz r19 && cat r19/*.csv && tail -5 r19/err.txt
