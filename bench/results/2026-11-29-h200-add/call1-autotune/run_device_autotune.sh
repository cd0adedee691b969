#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-29-h200-add/call1-autotune/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_autotune.sh. To run it again: bash bench/results/2026-11-29-h200-add/call1-autotune/run_device_autotune.sh
# One device call: GPU tests, SASS evidence for the tuned and bulk-copy kernels, and Autotune
# (block size x items per thread) of every tunable elementwise-add variant through the real
# server and CLI, then a short tuned-vs-CUB sweep. Every step is time-boxed; $OUT/results.tar.gz
# is refreshed after each one.
#   bench/results/2026-11-29-h200-add/call1-autotune/run_device_autotune.sh [AUTOTUNE_SIZE]      (default 64Mi: far past the 50 MiB L2)
# Expects .bundle/ from bench/make_bundle.sh (carried by the device tool).
set -uo pipefail
size=${1:-64Mi}
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/r; mkdir -p "$R"
source bench/device_lib.sh
pack() { tar czf "$OUT/results.tar.gz" -C "$R" . ; }
machine_info "$R/machine.txt"
cat "$R/machine.txt"
timeout 200 "$B/gpu_test" > "$R/gpu_test.log" 2>&1; echo "gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$R/gpu_test.log" | tail -12
cuobjdump --dump-sass "$B/gpubench_server" 2>/dev/null |
  awk '/Function : .*(AddVecKernel|AddTunedKernel|AddBulkKernel)/{p=1; print; next} /Function :/{p=0}
       p && /LDG|STG|LDS|UBLKCP|SYNCS|UTMA/' > "$R/sass_tuned.txt"
echo "SASS: 128-bit LDG/STG $(grep -c 'G\.E.*\.128' "$R/sass_tuned.txt"), bulk copies (UBLKCP) $(grep -c UBLKCP "$R/sass_tuned.txt")"
pack
start_server "$R/server.log"
for k in add_f32_bulk add_f16_bulk add_bf16_bulk add_f32_tuned add_f16_tuned add_bf16_tuned; do
  timeout 60 "$B/gpubench" autotune "$k" --target="$T" --size="$size" --mode=hot \
      --block_sizes=128,256,512,1024 --min_time=0.05 --timeout=1 > "$R/autotune_$k.txt" 2>&1
  echo "autotune $k rc=$? $(grep best "$R/autotune_$k.txt")"
  pack
done
kernels=add_f32_tuned,add_f32_bulk,cub_add_f32,add_f16_tuned,add_f16_bulk,cub_add_f16,add_bf16_tuned,add_bf16_bulk,cub_add_bf16
: > "$R/compare.csv"
for mode in cold hot; do
  timeout 120 "$B/gpubench" sweep --target="$T" --kernels=$kernels --sizes=1Mi,16Mi,256Mi --mode=$mode \
      --min_time=0.1 --timeout=2 --format=csv --progress=false >> "$R/compare.csv" 2>> "$R/sweep.err"
  echo "sweep $mode rc=$?"; pack
done
stop_server
python3 - "$R/compare.csv" <<'PY' | tee "$R/compare.txt"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kernel"] != "kernel" and r["median_seconds"]]
for r in rows:
    print(f'{r["kernel"]:16} {int(r["elements"]) >> 20:4}Mi {r["cache_mode"]:4} {float(r["median_seconds"])*1e6:9.2f} us {float(r["bandwidth_bytes_per_second"])/1e12:6.3f} TB/s {r["verified"]}')
PY
pack
