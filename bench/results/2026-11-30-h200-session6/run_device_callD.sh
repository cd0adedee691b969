#!/usr/bin/env bash
# Session 6, call D (the last): (1) the whole gpu_test on the bundle of what landed; (2) #19 1Mi
# cold: add_f16_tuned/add_bf16_tuned at torch.add's block of 128 threads as well as the catalog's
# 256, by events and by gpu_time, beside torch.add, 3 rounds; (3) #15: five repeated gpu_time runs
# of add_f32x4 at 16Mi and 256Mi; (4) the goal table in 2 alternating rounds with the session's
# candidates (bench/run_device_goal_rounds.sh), in what is left of BUDGET_S.
# From a directory holding .bundle/ and bench/:  OUT=$OUT BUDGET_S=560 bash run_device_callD.sh
set -uo pipefail
cd "$(dirname "$0")"
source bench/device_lib.sh
results_begin callD
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-560} ))
source bench/device_steps.sh
torch_version "$R/machine.txt"; [[ -f BUILD_COMMIT ]] && cat BUILD_COMMIT >> "$R/machine.txt"
timed gpu_test 150 "$B/gpu_test" > "$R/gpu_test.log" 2>&1
log "gpu_test: $(grep -E '^\[  (PASSED|FAILED)' "$R/gpu_test.log" | tr '\n' ' ')"
grep -E '^\[  FAILED' "$R/gpu_test.log" | head -5
pack
start_server "$R/server.log" || { pack; exit 1; }
M="--min_time=0.05 --timeout=0.8"
for r in 1 2 3; do
  d=$R/small$r; mkdir -p "$d"
  timed "torch_small_$r" 40 python3 bench/torch_add.py 1048576 --modes=cold --dtypes=f16,bf16 > "$d/torch.csv" 2>> "$R/err.txt"
  timed "server_small_$r" 40 "$B/gpubench" sweep --target="$T" --kernels=add_f16_tuned,add_bf16_tuned --block_sizes=128,256 --items_per_thread=8 --sizes=1Mi --mode=cold $M --timer=events --format=csv --progress=false > "$d/server.csv" 2>> "$R/err.txt"
  pack
done
timed server_small_gpu_time 40 "$B/gpubench" sweep --target="$T" --kernels=add_f16_tuned,add_bf16_tuned --block_sizes=128,256 --items_per_thread=8 --sizes=1Mi --mode=cold $M --timer=gpu_time --format=csv --progress=false > "$R/small_gpu_time.csv" 2>> "$R/err.txt"
for n in 16Mi 256Mi; do
  for i in 1 2 3 4 5; do
    timed "rep_gpu_time_${n}_$i" 20 "$B/gpubench" run add_f32x4 --size=$n --timer=gpu_time --target="$T" --format=csv >> "$R/rep_gpu_time.csv" 2>> "$R/err.txt"
  done
done
stop_server
pack
python3 - "$R" <<'PY' | tee "$R/report_small.md"
import csv, glob, os, statistics, sys
R = sys.argv[1]
rows = {}
for d in sorted(glob.glob(os.path.join(R, "small[0-9]"))):
    for line in open(os.path.join(d, "torch.csv")) if os.path.exists(os.path.join(d, "torch.csv")) else []:
        x = line.strip().split(",")
        if len(x) > 4 and x[2] == "cold":
            rows.setdefault(x[0], []).append(float(x[4]) * 1e6)
    p = os.path.join(d, "server.csv")
    if os.path.exists(p):
        for r in csv.DictReader(open(p)):
            if r.get("median_seconds"):
                rows.setdefault(f"{r['kernel']} block {r['block_size']}", []).append(float(r["median_seconds"]) * 1e6)
print("## 1Mi cold by events, µs per round")
for k in sorted(rows):
    print(f"{k:32s} " + " ".join(f"{v:6.3f}" for v in rows[k]) + f"   median {statistics.median(rows[k]):.3f}")
p = os.path.join(R, "small_gpu_time.csv")
if os.path.exists(p):
    print("\n## 1Mi cold by gpu_time (one run each), µs")
    for r in csv.DictReader(open(p)):
        if r.get("median_seconds"):
            print(f"{r['kernel']} block {r['block_size']}: {float(r['median_seconds']) * 1e6:.3f}")
p = os.path.join(R, "rep_gpu_time.csv")
if os.path.exists(p):
    print("\n## add_f32x4 --timer=gpu_time, five runs each, µs")
    by = {}
    for line in open(p):
        x = line.strip().split(",")
        if len(x) > 8 and x[0] == "add_f32x4":
            by.setdefault(x[2], []).append(float(x[8]) * 1e6)
    for n, v in by.items():
        print(f"N={n}: " + " ".join(f"{t:.2f}" for t in v) + f"  max/min-1 = {100 * (max(v) / min(v) - 1):.2f}%")
PY
pack
left_s=$(( $(left) - 10 ))
KERNELS=add_f32_tuned,add_f32x4,add_f32_bulk_pdl,add_f32_l2keep_pdl,add_f16_tuned,add_f16_l2keep_pdl,add_f16_bulk_pdl,add_bf16_tuned,add_bf16_l2keep_pdl,add_bf16_bulk_pdl,cub_add_f32,cub_add_f16,cub_add_bf16 \
  ROUNDS=2 ROUND_S=140 BUDGET_S=$left_s timeout $(( left_s + 8 )) bash bench/run_device_goal_rounds.sh > "$R/goal_rounds.txt" 2>&1
grep "^|\|met,\|round\|skipped" "$R/goal_rounds.txt"
pack
