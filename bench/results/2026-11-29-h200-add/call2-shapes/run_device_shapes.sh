#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-29-h200-add/call2-shapes/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_shapes.sh. To run it again: bash bench/results/2026-11-29-h200-add/call2-shapes/run_device_shapes.sh
# Tile-shape experiment (issue #7, f32 vs CUB): CUB's sm_90 DeviceTransform picks 256 threads x 3
# items (768-float tiles, from its 48 KiB-in-flight rule); ours used power-of-two tiles. Sweeps
# add_f32_bulk and add_f32_tuned over power-of-two and non-power-of-two tiles beside cub_add_f32,
# hot, at 16Mi and 256Mi. Time-boxed; writes $OUT/shapes/shapes.csv.
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/shapes; mkdir -p "$R"
source bench/device_lib.sh
start_server "$R/server.log"
common=(--target="$T" --sizes=16Mi,256Mi --mode=hot --min_time=0.1 --timeout=2 --format=csv --progress=false --verify=false)
{
  timeout 60 "$B/gpubench" sweep "${common[@]}" --kernels=cub_add_f32
  timeout 120 "$B/gpubench" sweep "${common[@]}" --kernels=add_f32_bulk --block_sizes=128,192,256,384,768 --items_per_thread=1,2,3,4,6
  timeout 60 "$B/gpubench" sweep "${common[@]}" --kernels=add_f32_tuned --block_sizes=96,192,256,384,768 --items_per_thread=4
  timeout 30 "$B/gpubench" sweep "${common[@]}" --kernels=cub_add_f32
} > "$R/shapes.csv" 2> "$R/shapes.err"
stop_server
python3 - "$R/shapes.csv" <<'PY' | tee "$R/shapes.txt"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kernel"] != "kernel" and r["median_seconds"]]
for r in sorted(rows, key=lambda r: (int(r["elements"]), float(r["median_seconds"]))):
    tile = int(r["block_size"]) * int(r["items_per_thread"])
    print(f'{r["kernel"]:14} {int(r["elements"]) >> 20:4}Mi block {r["block_size"]:>4} items {r["items_per_thread"]:>2} tile {tile:6} {float(r["median_seconds"])*1e6:9.2f} us {float(r["bandwidth_bytes_per_second"])/1e12:6.3f} TB/s')
PY
