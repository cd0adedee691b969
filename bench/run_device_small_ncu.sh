#!/usr/bin/env bash
# Issue #19's 1Mi cold rows (torch.add ahead by 1-2.5% in the session-6 goal rounds): the same
# hardware counters for torch.add's kernel and gpubench's candidates, cold, one launch each under
# Nsight Compute (--cache-control all --clock-control none, as the timer comparisons use). Shows
# whether the kernels differ (duration, DRAM bytes, grid) or only what surrounds them.
# Builds nothing. From a directory holding .bundle/ and bench/:
#   OUT=$OUT [SIZE=1Mi] [KERNELS=...] [BUDGET_S=150] bash bench/run_device_small_ncu.sh
# Results: $OUT/small_ncu.tar.gz (ncu_torch.csv, ncu_server.csv, commands.txt) and a table
# (bench/small_ncu_report.py) on stdout. BACKEND=cpu runs no ncu unless NCU names one.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh  # BUNDLE, LD_LIBRARY_PATH, B, BACKEND
PATH=$PATH:/usr/local/cuda/bin
results_begin small_ncu "${WORK:-}"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-150} ))
source bench/device_steps.sh  # log, cmd, left, need, timed, stop_tree
SIZE=${SIZE:-1Mi}
KERNELS=${KERNELS:-add_f32_tuned,add_f16_tuned,add_bf16_tuned,add_bf16_l2keep_pdl,cub_add_bf16}
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
# NCU=PATH picks the profiler (the CI smoke test passes a stand-in); the CPU backend has none else.
if [[ -z ${NCU:-} ]]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [[ $BACKEND == cpu ]] && NCU=
fi
n=$(size_numbers "$SIZE")
{ echo "ncu: ${NCU:-none}"; [[ -n $NCU ]] && timeout 30 "$NCU" --version | tail -1; } >> "$R/machine.txt"
torch_version "$R/machine.txt"
[[ -f BUILD_COMMIT ]] && echo "bundle built from: $(cat BUILD_COMMIT)" >> "$R/machine.txt"

if [[ -n $NCU ]] && need 40 ncu_torch; then
  # torch.add's kernel only (-k): the flush's reduction is not profiled; 5 cold adds per dtype.
  cmd "$NCU --clock-control none --cache-control all -k regex:elementwise --metrics $METRICS -o ncu_torch python3 bench/torch_add.py $n --modes=cold --reps=5"
  timed ncu_torch 70 "$NCU" --clock-control none --cache-control all -k regex:elementwise \
      --metrics "$METRICS" -o "$R/ncu_torch" -f python3 bench/torch_add.py "$n" --modes=cold \
      --reps=5 > "$R/torch_under_ncu.csv" 2>> "$R/err.txt"
  timed ncu_torch_import 30 "$NCU" -i "$R/ncu_torch.ncu-rep" --csv --page raw --print-units base \
      > "$R/ncu_torch.csv" 2>> "$R/err.txt"
  rm -f "$R/ncu_torch.ncu-rep"
  pack
fi

if [[ -n $NCU ]] && need 40 ncu_server; then
  # The server in profile mode (no blocking kernel): 5 cold launches per kernel plus the
  # verification launch; kernels matching Add|transform (CUB's) only.
  cmd "$NCU --target-processes all --clock-control none --cache-control all -k regex:'Add|transform' --metrics $METRICS -o ncu_server gpubench_server ...; gpubench run K --size=$SIZE --profile_runs=5 (K in $KERNELS)"
  port_file=$R/server.port; : > "$port_file"
  timeout 120 "$NCU" --target-processes all --clock-control none --cache-control all \
      -k 'regex:Add|transform' --metrics "$METRICS" -o "$R/ncu_server" -f \
      "$B/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 --port_file="$port_file" \
      --metrics_listen= > "$R/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do [[ -s $port_file ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat "$port_file")
  for k in ${KERNELS//,/ }; do
    timed "ncu_$k" 25 "$B/gpubench" run "$k" --size="$SIZE" --profile_runs=5 --target="$T" \
        --format=csv >> "$R/server_runs.csv" 2>> "$R/err.txt"
  done
  stop_tree "$pid"
  timed ncu_server_import 30 "$NCU" -i "$R/ncu_server.ncu-rep" --csv --page raw \
      --print-units base > "$R/ncu_server.csv" 2>> "$R/err.txt"
  rm -f "$R/ncu_server.ncu-rep"
  pack
fi
python3 bench/small_ncu_report.py "$R" > "$R/report.md" 2>> "$R/err.txt"
pack
cat "$R/report.md"
