#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-30-h200-add-round2/call1-explore/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_l2.sh. To run it again: bash bench/results/2026-11-30-h200-add-round2/call1-explore/run_device_l2.sh
# Issue #19 in one device call; builds nothing. (1) bench/l2_probe (carried binary, built with
# `nvcc -O3 -arch=sm_90 bench/l2_probe.cu -o .bundle/bin/l2_probe`): every cache policy of the add
# at 1Mi/16Mi/256Mi cold and hot with plain CUDA events; (2) hardware counters with ncu (DRAM
# bytes read/written, L2 hit rates, DRAM throughput): the probe's fp16 policies at 16Mi hot
# (--cache-control none: the L2 state one launch leaves the next) and cold (--cache-control all),
# torch.add and CUB at 16Mi hot; (3) bench/run_device_add.sh: the gpubench sweep of the
# contenders through the server, torch.add under the same discipline, bench/report.py's tables.
#   [KERNELS=...] [SKIP_PROBE=1] [SKIP_NCU=1] bash bench/results/2026-11-30-h200-add-round2/call1-explore/run_device_l2.sh [SIZES]
# Results in $OUT/l2.tar.gz (probe, ncu) and $OUT/add.tar.gz (sweep, report).
set -uo pipefail
sizes=${1:-1Mi,16Mi,256Mi}
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/l2; mkdir -p "$R"
source bench/device_lib.sh
pack() { tar czf "$OUT/l2.tar.gz" -C "$R" . ; }
machine_info "$R/machine.txt"
cat "$R/machine.txt"
# SASS of the probe's load/store flavours (no disassembler on the build machine).
{ cuobjdump --dump-sass "$B/l2_probe" | grep -E "Function|LDG|STG" | head -400; } > "$R/sass_probe.txt" 2>&1
if [[ ${SKIP_PROBE:-0} != 1 ]]; then
  echo "$B/l2_probe 1048576,16777216,268435456" >> "$R/command.txt"
  timeout 90 "$B/l2_probe" 1048576,16777216,268435456 > "$R/probe.csv" 2> "$R/probe.err"
  echo "probe rc=$?"; cat "$R/probe.err"; pack
fi
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sector_op_read_hit_rate.pct,lts__t_sector_op_write_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed
if [[ ${SKIP_NCU:-0} != 1 && -n $NCU ]]; then
  for cache in none all; do
    echo "L2_PROBE_FILTER=f16_ $NCU --clock-control none --cache-control $cache --metrics $metrics --csv $B/l2_probe --ncu 16777216" >> "$R/command.txt"
    L2_PROBE_FILTER=f16_ timeout 100 "$NCU" --clock-control none --cache-control $cache --metrics $metrics --csv \
        "$B/l2_probe" --ncu 16777216 > "$R/ncu_probe_16Mi_cache_$cache.csv" 2> "$R/ncu.err"
    echo "ncu probe cache=$cache rc=$?"; pack
  done
  # torch.add and CUB at 16Mi fp16 hot (the third launch: the L2 as the previous one left it).
  echo "$NCU --clock-control none --cache-control none --launch-skip 2 --launch-count 1 --metrics $metrics --csv python3 -c <3 torch.add>" >> "$R/command.txt"
  timeout 60 "$NCU" --clock-control none --cache-control none --launch-skip 2 --launch-count 1 --metrics $metrics --csv \
      python3 -c "import torch; a=torch.randn(16<<20,device='cuda',dtype=torch.half); b=torch.randn_like(a); c=torch.empty_like(a)
for _ in range(3): torch.add(a,b,out=c)
torch.cuda.synchronize()" > "$R/ncu_torch_16Mi_hot.csv" 2>> "$R/ncu.err"
  echo "ncu torch rc=$?"
  for k in cub_add_f16 add_f16_tuned; do
    echo "$NCU --clock-control none --cache-control none --launch-skip 4 --launch-count 1 --metrics $metrics --csv $B/event_timer $k 16777216 hot 5" >> "$R/command.txt"
    timeout 60 "$NCU" --clock-control none --cache-control none --launch-skip 4 --launch-count 1 --metrics $metrics --csv \
        "$B/event_timer" $k 16777216 hot 5 > "$R/ncu_${k}_16Mi_hot.csv" 2>> "$R/ncu.err"
    echo "ncu $k rc=$?"
  done
  pack
fi
# Summary of the probe (median us per variant x size x mode), the reply's tail shows it.
python3 - "$R/probe.csv" <<'EOF' 2>/dev/null
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for n in sorted({int(r["elements"]) for r in rows}):
    for mode in ("cold", "hot"):
        sel = sorted((float(r["median_us"]), r["variant"], r["check"]) for r in rows
                     if int(r["elements"]) == n and r["mode"] == mode)
        print(n, mode, " ".join(f"{v}={t:.2f}{'' if c == 'ok' else '!'}" for t, v, c in sel[:8]))
EOF
bash bench/run_device_add.sh "$sizes"
