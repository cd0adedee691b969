#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-30-h200-add-round2/call2-proof/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_round2.sh. To run it again: bash bench/results/2026-11-30-h200-add-round2/call2-proof/run_device_round2.sh
# Issue #19's proof in one device call; builds nothing (carry .bundle/ from bench/make_bundle.sh
# plus .bundle/bin/l2_probe, see bench/results/2026-11-30-h200-add-round2/call1-explore/run_device_l2.sh). Steps, each time-boxed, results packed
# into $OUT/round2.tar.gz after each:
#   1. bench/run_device_add.sh: the contenders (every non-seed gpubench add variant, add_f32x4,
#      cub_add_*, copy_d2d) at 1Mi/16Mi/256Mi cold and hot through the server, torch.add under the
#      same discipline, bench/report.py's goal table (report.md);
#   2. gpu_test (every catalog variant on the GPU, the new L2-policy tests);
#   3. `gpubench best` (f16 16Mi hot, f32 1Mi cold) and `gpubench compare` (fp16, hot, 3 sizes);
#   4. bench/l2_probe's fp16 policies at 16Mi (the keep fraction around the catalog's value).
#   bash bench/results/2026-11-30-h200-add-round2/call2-proof/run_device_round2.sh
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/round2; mkdir -p "$R"
dir=bench
source "$dir/device_lib.sh"
pack() { tar czf "$OUT/round2.tar.gz" -C "$R" . ; }
machine_info "$R/machine.txt"
contenders=add_f32x4,add_f32_tuned,add_f32_stream,add_f32_l2keep,add_f32_gridstride,add_f32_bulk
for d in f16 bf16; do contenders+=,add_${d}_tuned,add_${d}_stream,add_${d}_l2keep,add_${d}_gridstride,add_${d}_bulk; done
contenders+=,cub_add_f32,cub_add_f16,cub_add_bf16,copy_d2d
KERNELS=$contenders SWEEP_TIMEOUT=${SWEEP_TIMEOUT:-120} MEASURE="--min_time=0.05 --timeout=0.8" EVENT_KERNELS= \
  OUT=$R timeout 300 bash "$dir/run_device_add.sh" 1Mi,16Mi,256Mi > "$R/add.log" 2>&1
echo "run_device_add rc=$?"; rm -f "$R/add.tar.gz"; pack
timeout 80 "$B/gpu_test" > "$R/gpu_test.log" 2>&1
echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$R/gpu_test.log" | head -5 | tr '\n' ' ')"; pack
start_server "$R/server2.log"
q="--target=$T --progress=false"
for args in "--dtype=f16 --size=16Mi --mode=hot" "--dtype=bf16 --size=16Mi --mode=hot" "--dtype=f32 --size=1Mi --mode=cold"; do
  echo "gpubench best add $args" >> "$R/command.txt"
  { echo "\$ gpubench best add $args"; timeout 40 "$B/gpubench" best add $args $q; echo "rc=$?"; } >> "$R/best.txt" 2>&1
done
echo "gpubench compare --dtypes=f16 --modes=hot --min_time=0.02 --timeout=0.5" >> "$R/command.txt"
timeout 60 "$B/gpubench" compare --dtypes=f16 --modes=hot --min_time=0.02 --timeout=0.5 $q > "$R/compare.txt" 2>&1
echo "compare rc=$?"
stop_server; pack
L2_PROBE_FILTER=f16_ timeout 30 "$B/l2_probe" 16777216 > "$R/probe_16Mi.csv" 2> "$R/probe.err"
echo "probe rc=$?"; pack
grep -A30 "^Goal table" "$R/add/report.md"
cat "$R/best.txt"; head -40 "$R/compare.txt"
sort -t, -k4 -n "$R/probe_16Mi.csv" | grep hot | head -8
