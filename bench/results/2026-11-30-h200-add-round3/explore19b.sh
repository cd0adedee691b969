#!/usr/bin/env bash
# Issue #19: which per-buffer pad (placement) makes 16Mi hot fast, and does it hurt elsewhere?
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/.bundle/lib:${LD_LIBRARY_PATH:-}
B=$D/.bundle/bin
R=$OUT/r19b; mkdir -p $R
MiB=1048576
for round in 1 2; do
  for pad in 0 $((2*MiB)) $((4*MiB)) $((6*MiB)) $((8*MiB)) $((34*MiB)); do
    for spec in "add_f16_l2keep 16777216 hot" "add_bf16_l2keep 16777216 hot" "add_f32_l2keep 16777216 hot" "add_f32x4 16777216 hot" "add_f16_l2keep 16777216 cold" "add_f16_tuned 1048576 hot" "add_f16_l2keep 268435456 hot" "add_f32_tuned 268435456 hot"; do
      set -- $spec
      reps=30; [ $3 = cold ] && reps=200
      EVENT_TIMER_PAD_BYTES=$pad timeout 60 $B/event_timer $1 $2 $3 $reps 2>>$R/err.txt | sed "s/^/pad=$pad,r$round,/" >> $R/pad.csv
    done
  done
done
cd $OUT && tar czf r19b.tar.gz r19b && sort -t, -k3,3 -k4,4n -k5,5 r19b/pad.csv && grep buffers r19b/err.txt | sort | uniq -c | head -20
