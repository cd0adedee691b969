#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-29-h200x2/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_multi.sh. To run it again: bash bench/results/2026-11-29-h200x2/run_device_multi.sh
# Several GPUs in one node (device kind nvidia-h200-x2): the same plan on one GPU alone, then on
# every GPU at once (RunSweep all_devices), through the real server. Per-GPU bandwidth with all
# GPUs busy should match the single-GPU run within noise. Writes $OUT/multi.csv and a table.
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
export LD_LIBRARY_PATH=$PWD/.bundle/lib
B=$PWD/.bundle/bin
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm --format=csv > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
"$B/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file=/tmp/m.port \
    --metrics_listen=127.0.0.1:0 --max_elements=1073741824 > "$OUT/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do [[ -s /tmp/m.port ]] && break; sleep 0.1; done
T=127.0.0.1:$(cat /tmp/m.port)
common="--kernels=cub_add_f32,add_f16_tuned,copy_d2d --sizes=256Mi --mode=cold --min_time=0.2 --timeout=2 --format=csv --progress=false --target=$T"
"$B/gpubench" sweep $common --device=0 > "$OUT/single.csv"; echo "single rc=$?"
"$B/gpubench" sweep $common --all_devices > "$OUT/all.csv"; echo "all rc=$?"
kill -TERM $server; wait $server
python3 - "$OUT/single.csv" "$OUT/all.csv" <<'PY' | tee "$OUT/multi.md"
import csv, sys
single = {r["kernel"]: float(r["bandwidth_bytes_per_second"]) for r in csv.DictReader(open(sys.argv[1]))}
print("| kernel | device | alone GB/s | all GPUs busy GB/s | ratio |")
print("|---|---|---|---|---|")
for r in csv.DictReader(open(sys.argv[2])):
    bw = float(r["bandwidth_bytes_per_second"])
    print(f"| {r['kernel']} | {r['device']} | {single[r['kernel']] / 1e9:.0f} | {bw / 1e9:.0f} | {bw / single[r['kernel']]:.3f} |")
PY
grep -E "run .* device=" "$OUT/server.log" | head -12
