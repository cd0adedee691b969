#!/usr/bin/env bash
# gpubench's occupancy section (calculator + CUPTI range profiler, through the real server) beside
# ncu's launch statistics and achieved occupancy for the same kernel, size and launch
# (event_timer runs the catalog launcher with the default geometry). Writes $OUT/occupancy.md.
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
B=$PWD/.bundle/bin
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-$PWD/.bundle/lib}
"$B/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file=/tmp/occ.port \
    --max_elements=1073741824 > "$OUT/occ_server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do [[ -s /tmp/occ.port ]] && break; sleep 0.1; done
T=127.0.0.1:$(cat /tmp/occ.port)
metrics=sm__maximum_warps_per_active_cycle_pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_warps,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_blocks,launch__registers_per_thread,launch__waves_per_multiprocessor,dram__throughput.avg.pct_of_peak_sustained_elapsed
: > "$OUT/occ_gpubench.jsonl"
: > "$OUT/occ_ncu.csv"
for spec in saxpy_minimal:33554432 saxpy_sophisticated:33554432 saxpy_balanced:33554432 \
            add_f32:268435456 add_f32x4:268435456 add_f16:268435456 add_f16x2:268435456 \
            add_f16x8:268435456 add_f16x8_pack:268435456 add_f32_tuned:268435456 add_f16_tuned:268435456; do
  k=${spec%%:*}; n=${spec##*:}
  "$B/gpubench" run "$k" --size="$n" --profile --format=json --timeout=3 --target="$T" |
      python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$OUT/occ_gpubench.jsonl"
  # Skip event_timer's 5 warm-up launches; profile the first timed launch.
  ncu --clock-control none --metrics "$metrics" -k regex:Kernel --launch-skip 5 --launch-count 1 --csv \
      "$B/event_timer" "$k" "$n" cold 1 2>/dev/null | grep -v '^==' | sed "s/^/$k,/" >> "$OUT/occ_ncu.csv"
done
kill -TERM $server; wait $server
python3 bench/occupancy_report.py "$OUT/occ_gpubench.jsonl" "$OUT/occ_ncu.csv" | tee "$OUT/occupancy.md"
