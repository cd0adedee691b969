#!/usr/bin/env bash
# Session 7, call 6: does WHERE the buffers sit move the cold event window (for both kernels)?
# Six cudaMalloc'd sets and torch's own, one process, the default stream: 1Mi cold f16/bf16/f32
# (add_*_tuned vs torch.add) and 16Mi cold f32 (add_f32x4 vs torch.add).
cd "$(dirname "$0")"
B="torch,cudamalloc#0,cudamalloc#1,cudamalloc#2,cudamalloc#3,cudamalloc#4,cudamalloc#5"
mkdir -p "$OUT/call6"
WORK=$OUT/call6/small1 STEPS=small BUDGET_S=80 \
  SMALL_ARGS="--kernels=torch,add_{d}_tuned --holds=blocking --flushes=read --buffers=$B --rounds=5 --cold_reps=300" \
  bash bench/run_device_same_process.sh > "$OUT/call6/small1_stdout.txt" 2>&1
WORK=$OUT/call6/small16 STEPS=small BUDGET_S=60 \
  SMALL_ARGS="--elements=16777216 --dtypes=f32 --kernels=torch,add_f32x4 --holds=blocking --flushes=read --buffers=$B --rounds=5 --cold_reps=200" \
  bash bench/run_device_same_process.sh > "$OUT/call6/small16_stdout.txt" 2>&1
rm -f "$OUT"/same_process.tar.gz
tar czf "$OUT/call6.tar.gz" -C "$OUT" call6
for f in small1 small16; do
python3 - "$OUT/call6/$f/small.csv" <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    d[(r["dtype"], r["elements"], r["buffers"], r["kernel"])].append(float(r["median_seconds"]) * 1e6)
for k, v in sorted(d.items()):
    print(*k, " ".join("%.3f" % x for x in v), "med %.3f" % statistics.median(v))
PY
done
