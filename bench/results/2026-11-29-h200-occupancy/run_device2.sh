#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-29-h200-occupancy/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device2.sh. To run it again: bash bench/results/2026-11-29-h200-occupancy/run_device2.sh
# Second device call of 2026-11-29: GPU tests (occupancy vs the API, CUPTI pass, tuned kernels),
# occupancy vs ncu, SASS of the tuned kernels, tuned vs seed vs CUB vs torch.add, block-size
# sweep. Everything lands in $OUT/results.tar.gz plus report files.
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/r; mkdir -p "$R"
export LD_LIBRARY_PATH=$PWD/.bundle/lib
# CUPTI (dlopen'ed by the server for achieved occupancy) from the machine's CUDA installation.
cupti=$(find /usr/local /opt /usr/lib -name 'libcupti.so.13*' 2>/dev/null | head -1)
[[ -n $cupti ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$cupti")
echo "cupti: ${cupti:-not found}"
B=$PWD/.bundle/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$R/machine.txt" 2>&1
date -u +%FT%TZ >> "$R/machine.txt"
"$B/gpu_test" > "$R/gpu_test.log" 2>&1; echo "gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" -A3 "$R/gpu_test.log" | tail -12
OUT=$R bash bench/occupancy_vs_ncu.sh > /dev/null 2> "$R/occ.err"; echo "occupancy rc=$?"
cuobjdump --dump-sass "$B/gpubench_server" 2>/dev/null |
  awk '/Function : .*AddTuned/{p=1; print; next} /Function :/{p=0} p && /LDG|STG/' > "$R/sass_tuned.txt"
cuobjdump --dump-sass "$B/gpubench_server" 2>/dev/null |
  awk '/Function : .*(AddF32x4Kernel|AddX8Pack)/{p=1; print; next} /Function :/{p=0} p && /LDG|STG/' > "$R/sass_seed.txt"
echo "sass lines: $(wc -l < "$R/sass_tuned.txt") tuned, $(wc -l < "$R/sass_seed.txt") seed"
"$B/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file=/tmp/b2.port \
    --max_elements=1073741824 > "$R/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do [[ -s /tmp/b2.port ]] && break; sleep 0.1; done
T=127.0.0.1:$(cat /tmp/b2.port)
kernels=add_f32,add_f32x4,add_f32_tuned,cub_add_f32,add_f16x2,add_f16x8_pack,add_f16_tuned,cub_add_f16,add_bf16,add_bf16x2,add_bf16x8_pack,add_bf16_tuned,cub_add_bf16,copy_d2d
: > "$R/server.csv"
for mode in cold hot; do
  "$B/gpubench" sweep --target="$T" --kernels=$kernels --sizes=1Mi,16Mi,256Mi --mode=$mode \
      --min_time=0.2 --timeout=3 --format=csv --progress=false >> "$R/server.csv" 2>> "$R/sweep.err"
  echo "sweep $mode rc=$?"
done
"$B/gpubench" sweep --target="$T" --kernels=add_f16x8_pack,add_f32_tuned,add_f16_tuned \
    --sizes=256Mi --block_sizes=32,64,128,256,512,1024 --mode=hot --min_time=0.2 --timeout=3 \
    --format=csv --progress=false > "$R/blocks.csv" 2>> "$R/sweep.err"; echo "blocks rc=$?"
kill -TERM $server; wait $server
python3 bench/torch_add.py 1048576 16777216 268435456 > "$R/torch.csv" 2> "$R/torch.err"; echo "torch rc=$?"
: > "$R/events.csv"
for k in add_f32_tuned add_f16_tuned add_bf16_tuned cub_add_f32; do
  for n in 1048576 16777216 268435456; do
    for mode in cold hot; do "$B/event_timer" $k $n $mode >> "$R/events.csv"; done
  done
done
python3 bench/report.py "$R/server.csv" "$R/torch.csv" "$R/events.csv" > "$R/report.md"
tar czf "$OUT/results.tar.gz" -C "$R" .
cp "$R/report.md" "$R/occupancy.md" "$R/blocks.csv" "$R/gpu_test.log" "$OUT/" 2>/dev/null
cat "$R/occupancy.md"; grep -E "tuned|cub_add|torch" "$R/report.md" | head -60; cat "$R/blocks.csv"
