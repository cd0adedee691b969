#!/usr/bin/env bash
# Issue #19, 1Mi cold: the catalog's add_*_l2keep kernels timed by bench/event_timer ran 0.3-0.4 us
# faster than the same kernels through the server (and faster than torch.add, which the server is
# not). This call adds the server's habits to event_timer one at a time — the blocking kernel
# (EVENT_TIMER_BLOCK), cudaCtxResetPersistingL2Cache before each flush (EVENT_TIMER_RESET), a
# non-blocking stream (EVENT_TIMER_NONBLOCKING) — beside the server and torch.add, ABAB by round,
# and asks Nsight Compute for the kernel's own duration. From a directory holding .bundle/:
#   OUT=$OUT bash bench/run_device_cold_gap.sh
# KERNELS, SIZES (plain numbers), ROUNDS, REPS, BUDGET_S (default 90 s). CSV on stdout and in
# $OUT/cold_gap.tar.gz: tag,round,kernel,elements,mode,reps,median_seconds,bytes_per_second.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh
results_begin cold_gap
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-90} ))
source bench/device_steps.sh  # log, cmd, need, timed
KERNELS=${KERNELS:-add_f32_l2keep,add_f16_l2keep}
SIZES=${SIZES:-1048576,16777216}
ROUNDS=${ROUNDS:-2}
REPS=${REPS:-300}
[[ -f BUILD_COMMIT ]] && echo "bundle built from: $(cat BUILD_COMMIT)" >> "$R/machine.txt"
start_server "$R/server.log" || exit 1
declare -A env_of=([plain]="" [block]="EVENT_TIMER_BLOCK=1" [reset]="EVENT_TIMER_RESET=1"
                   [server_like]="EVENT_TIMER_BLOCK=1 EVENT_TIMER_RESET=1 EVENT_TIMER_NONBLOCKING=1")
cmd "event_timer K N cold $REPS under: ${!env_of[*]} (env: ${env_of[*]}); gpubench run K --size=N --timer=events; K in $KERNELS, N in $SIZES, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
  for k in ${KERNELS//,/ }; do
    for n in ${SIZES//,/ }; do
      need 8 "round $round" || break 3
      for tag in plain block reset server_like; do
        env ${env_of[$tag]} timeout 20 "$B/event_timer" "$k" "$n" cold "$REPS" 2>> "$R/err.txt" |
            sed "s/^/$tag,$round,/" >> "$R/cold_gap.csv"
      done
      timeout 20 "$B/gpubench" run "$k" --size="$n" --timer=events --target="$T" --format=json \
          > "$R/server_${k}_${n}_r$round.json" 2>> "$R/err.txt"
      python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timing"]["medianSeconds"]; print(f"server,{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},cold,-,{t},-")' \
          "$R/server_${k}_${n}_r$round.json" "$round" "$k" "$n" >> "$R/cold_gap.csv" 2>> "$R/err.txt"
    done
  done
  pack
done
stop_server
if need 25 torch; then
  cmd "python3 bench/torch_add.py ${SIZES//,/ } --dtypes=f32,f16 --modes=cold"
  timed torch 40 python3 bench/torch_add.py ${SIZES//,/ } --dtypes=f32,f16 --modes=cold 2>> "$R/err.txt" |
      sed "s/^/torch,1,/" >> "$R/cold_gap.csv"
fi
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [[ -n $NCU && $BACKEND == cuda ]] && need 25 ncu; then
  for k in ${KERNELS//,/ }; do
    n=${SIZES%%,*}
    cmd "$NCU --cache-control all --clock-control none -k regex:Add --metrics gpu__time_duration.sum --csv event_timer $k $n cold 20"
    timed "ncu_$k" 30 "$NCU" --cache-control all --clock-control none -k regex:Add \
        --metrics gpu__time_duration.sum --csv "$B/event_timer" "$k" "$n" cold 20 \
        > "$R/ncu_$k.csv" 2>> "$R/err.txt"
  done
fi
pack
cat "$R/cold_gap.csv"
