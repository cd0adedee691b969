#!/usr/bin/env bash
# Session 6, call C: (a) the timer GPU tests; (b) #19 1Mi cold: torch.add with the flush after the
# hold (bench/torch_add.py's default) and before it (the server's order) beside the server, 3
# alternating rounds; (c) autotune of add_f32_bulk_pdl at 256Mi hot; (d) 256Mi hot f32: bulk_pdl
# (default and the autotuned geometry) vs CUB vs torch.add, 3 rounds.
set -uo pipefail
cd "$(dirname "$0")"
source bench/device_lib.sh
results_begin callC
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-330} ))
source bench/device_steps.sh
torch_version "$R/machine.txt"; cat BUILD_COMMIT >> "$R/machine.txt"
timed gpu_test 60 "$B/gpu_test" --gtest_filter='TimerGpuTest.*' > "$R/gpu_test.log" 2>&1
log "gpu_test: $(grep -E '^\[  (PASSED|FAILED)' "$R/gpu_test.log" | tr '\n' ' ')"
pack
start_server "$R/server.log" || { pack; exit 1; }
M="--min_time=0.05 --timeout=0.8 --timer=events"
K1=add_f32_tuned,add_f16_tuned,add_bf16_tuned,add_f32x4,add_f16_l2keep,add_bf16_l2keep,cub_add_f32,cub_add_f16,cub_add_bf16
for r in 1 2 3; do
  d=$R/small$r; mkdir -p "$d"
  for order in after_hold before_hold; do
    timed "torch_${order}_$r" 40 python3 bench/torch_add.py 1048576 --modes=cold --flush_order=$order > "$d/torch_$order.csv" 2>> "$R/err.txt"
  done
  timed "server_small_$r" 60 "$B/gpubench" sweep --target="$T" --kernels=$K1 --sizes=1Mi --mode=cold $M --format=csv --progress=false > "$d/server.csv" 2>> "$R/err.txt"
  pack
done
timed autotune 90 "$B/gpubench" autotune add_f32_bulk_pdl --size=256Mi --mode=hot --block_sizes=128,256,512 --items_per_thread=2,3,4,6,8 $M --target="$T" --format=csv > "$R/autotune.csv" 2>> "$R/err.txt"
pack
best=$(python3 - "$R/autotune.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("median_seconds")]
rows.sort(key=lambda r: float(r["median_seconds"]))
print(f"{rows[0]['block_size']} {rows[0]['items_per_thread']}" if rows else "256 3")
PY
)
set -- $best; bb=$1; bi=$2; log "autotuned add_f32_bulk_pdl 256Mi hot: block $bb items $bi"
for r in 1 2 3; do
  d=$R/big$r; mkdir -p "$d"
  timed "server_big_$r" 60 "$B/gpubench" sweep --target="$T" --kernels=add_f32_bulk,add_f32_bulk_pdl,cub_add_f32,add_f16_bulk_pdl,cub_add_f16 --sizes=256Mi --mode=hot $M --format=csv --progress=false > "$d/server.csv" 2>> "$R/err.txt"
  timed "server_big_tuned_$r" 30 "$B/gpubench" sweep --target="$T" --kernels=add_f32_bulk_pdl --sizes=256Mi --mode=hot --block_sizes=$bb --items_per_thread=$bi $M --format=csv --progress=false > "$d/server_tuned.csv" 2>> "$R/err.txt"
  timed "torch_big_$r" 40 python3 bench/torch_add.py 268435456 --modes=hot --dtypes=f32,f16 > "$d/torch.csv" 2>> "$R/err.txt"
  pack
done
stop_server
pack
python3 - "$R" <<'PY'
import csv, glob, os, statistics, sys
R = sys.argv[1]
def med(rows, key):
    v = [float(r["median_seconds"]) for r in rows if r.get("median_seconds")]
    return v
print("## 1Mi cold, µs per round (events)")
rows = {}
for d in sorted(glob.glob(os.path.join(R, "small*"))):
    for f in ("torch_after_hold.csv", "torch_before_hold.csv"):
        p = os.path.join(d, f)
        if os.path.exists(p):
            for line in open(p):
                x = line.strip().split(",")
                if len(x) > 4 and x[2] == "cold":
                    rows.setdefault(f"{x[0]} ({f[6:-4]})", []).append(float(x[4]) * 1e6)
    p = os.path.join(d, "server.csv")
    if os.path.exists(p):
        for r in csv.DictReader(open(p)):
            if r.get("median_seconds"):
                rows.setdefault(r["kernel"], []).append(float(r["median_seconds"]) * 1e6)
for k in sorted(rows):
    print(f"{k:40s} " + " ".join(f"{v:6.3f}" for v in rows[k]) + f"   median {statistics.median(rows[k]):.3f}")
print("\n## autotune add_f32_bulk_pdl 256Mi hot")
p = os.path.join(R, "autotune.csv")
if os.path.exists(p): print(open(p).read())
print("## 256Mi hot, µs per round")
rows = {}
for d in sorted(glob.glob(os.path.join(R, "big*"))):
    for f in ("server.csv", "server_tuned.csv"):
        p = os.path.join(d, f)
        if os.path.exists(p):
            for r in csv.DictReader(open(p)):
                if r.get("median_seconds"):
                    name = r["kernel"] + (f" ({r['block_size']}x{r['items_per_thread']})" if f == "server_tuned.csv" else "")
                    rows.setdefault(name, []).append(float(r["median_seconds"]) * 1e6)
    p = os.path.join(d, "torch.csv")
    if os.path.exists(p):
        for line in open(p):
            x = line.strip().split(",")
            if len(x) > 4 and x[2] == "hot":
                rows.setdefault(x[0], []).append(float(x[4]) * 1e6)
for k in sorted(rows):
    print(f"{k:40s} " + " ".join(f"{v:8.2f}" for v in rows[k]) + f"   median {statistics.median(rows[k]):.2f}")
PY
