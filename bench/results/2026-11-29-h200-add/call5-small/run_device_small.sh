#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-29-h200-add/call5-small/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_small.sh. To run it again: bash bench/results/2026-11-29-h200-add/call5-small/run_device_small.sh
# Small-N experiment (issue #7): at 1Mi and 16Mi torch.add beat the catalog defaults by 1-6%.
# Hypothesis: the defaults' large tiles (768 threads x 1 packet) leave too few blocks per SM at
# 1Mi (171 blocks on 132 SMs, 1.3 waves). Sweeps the tuned kernels over block sizes and the bulk
# kernels over two tiles, beside CUB and torch.add (same discipline), at 1Mi and 16Mi, cold and hot.
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/small; mkdir -p "$R"
source bench/device_lib.sh
machine_info "$R/machine.txt"
start_server "$R/server.log"
: > "$R/server.csv"
for mode in cold hot; do
  c=(--target="$T" --sizes=1Mi,16Mi --mode=$mode --min_time=0.1 --timeout=1.5 --format=csv --progress=false)
  timeout 80 "$B/gpubench" sweep "${c[@]}" --kernels=add_f32_tuned,add_f16_tuned,add_bf16_tuned --block_sizes=128,256,384,768 >> "$R/server.csv" 2>> "$R/sweep.err"
  timeout 30 "$B/gpubench" sweep "${c[@]}" --kernels=add_f32_bulk --block_sizes=128,256 --items_per_thread=3,4 >> "$R/server.csv" 2>> "$R/sweep.err"
  timeout 30 "$B/gpubench" sweep "${c[@]}" --kernels=add_f16_bulk --block_sizes=128,256 --items_per_thread=6,8 >> "$R/server.csv" 2>> "$R/sweep.err"
  timeout 30 "$B/gpubench" sweep "${c[@]}" --kernels=cub_add_f32,cub_add_f16,cub_add_bf16 >> "$R/server.csv" 2>> "$R/sweep.err"
  echo "sweeps $mode done"
done
stop_server
timeout 60 python3 bench/torch_add.py 1048576 16777216 > "$R/torch.csv" 2> "$R/torch.err"; echo "torch rc=$?"
python3 - "$R/server.csv" "$R/torch.csv" <<'PY' | tee "$R/small.txt"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kernel"] != "kernel" and r["median_seconds"]]
torch = {}
for line in open(sys.argv[2]):
    k, n, mode, _, t, _ = line.strip().split(",")
    torch[(k, int(n), mode)] = float(t)
for r in sorted(rows, key=lambda r: (r["dtype"], int(r["elements"]), r["cache_mode"], float(r["median_seconds"]))):
    n, mode, t = int(r["elements"]), r["cache_mode"], float(r["median_seconds"])
    tt = torch.get((f'torch_add_{r["dtype"]}', n, mode))
    print(f'{r["dtype"]:4} {n >> 20:3}Mi {mode:4} {r["kernel"]:14} {r["block_size"]:>4}x{r["items_per_thread"]:<2} '
          f'{t * 1e6:8.2f} us  vs torch {tt / t if tt else 0:.3f}  {r["verified"]}')
PY
tar czf "$OUT/small.tgz" -C "$R" .
