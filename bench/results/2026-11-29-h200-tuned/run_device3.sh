#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-29-h200-tuned/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device3.sh. To run it again: bash bench/results/2026-11-29-h200-tuned/run_device3.sh
# Third device call of 2026-11-29: GPU tests after the tuned-kernel rework, SASS evidence, and the
# elementwise-add comparison (seed best, tuned, CUB, torch.add, copy) at the seed's sizes.
# Each step is time-boxed; $OUT/results.tar.gz is refreshed after every step.
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/r; mkdir -p "$R"
export LD_LIBRARY_PATH=$PWD/.bundle/lib
cupti=$(find /usr/local -name 'libcupti.so.13*' 2>/dev/null | head -1)
[[ -n $cupti ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$cupti")
B=$PWD/.bundle/bin
pack() { tar czf "$OUT/results.tar.gz" -C "$R" . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$R/machine.txt" 2>&1
date -u +%FT%TZ >> "$R/machine.txt"
timeout 90 "$B/gpu_test" > "$R/gpu_test.log" 2>&1; echo "gpu_test rc=$?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$R/gpu_test.log" | tail -6
cuobjdump --dump-sass "$B/gpubench_server" 2>/dev/null |
  awk '/Function : .*(AddVecKernel|AddTunedKernel)/{p=1; print; next} /Function :/{p=0} p && /LDG|STG/' > "$R/sass_tuned.txt"
echo "tuned SASS LDG/STG lines: $(grep -c 'LDG\|STG' "$R/sass_tuned.txt"), 128-bit: $(grep -c '\.128' "$R/sass_tuned.txt")"
pack
"$B/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file=/tmp/b3.port \
    --max_elements=1073741824 > "$R/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do [[ -s /tmp/b3.port ]] && break; sleep 0.1; done
T=127.0.0.1:$(cat /tmp/b3.port)
kernels=add_f32x4,add_f32_tuned,add_f32_gridstride,cub_add_f32,add_f16x8_pack,add_f16_tuned,cub_add_f16,add_bf16x8_pack,add_bf16_tuned,cub_add_bf16,copy_d2d
: > "$R/server.csv"
for mode in cold hot; do
  timeout 150 "$B/gpubench" sweep --target="$T" --kernels=$kernels --sizes=1Mi,16Mi,256Mi --mode=$mode \
      --min_time=0.1 --timeout=2 --format=csv --progress=false >> "$R/server.csv" 2>> "$R/sweep.err"
  echo "sweep $mode rc=$?"; pack
done
kill -TERM $server; wait $server
timeout 120 python3 bench/torch_add.py 1048576 16777216 268435456 > "$R/torch.csv" 2> "$R/torch.err"; echo "torch rc=$?"
pack
: > "$R/events.csv"
for k in add_f32_tuned add_f16_tuned add_bf16_tuned; do
  for n in 16777216 268435456; do
    for mode in cold hot; do timeout 20 "$B/event_timer" $k $n $mode 50 >> "$R/events.csv"; done
  done
done
python3 bench/report.py "$R/server.csv" "$R/torch.csv" "$R/events.csv" > "$R/report.md"
pack
cat "$R/report.md"
