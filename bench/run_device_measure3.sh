#!/usr/bin/env bash
# Issue #15, the last goal ("cold medians agree with Nsight Compute's gpu__time_duration within 1%
# at 16Mi and 256Mi for >= 3 kernels"), measured with the CUPTI kernel-duration timer, in one
# device call of at most ~5 minutes; builds nothing. From a directory holding .bundle/
# (bench/make_bundle.sh BUILD_DIR) and bench/:
#   OUT=$OUT bash bench/run_device_measure3.sh
# Steps (each under `timeout`, skipped with a line in steps.txt when less than its budget is left
# of BUDGET_S, default 270 s; no server is waited on without a bound):
#   1. gpu_test --gtest_filter='TimerGpuTest.*': per-sample CUPTI spans vs events, the timer field,
#      CUB / copy / counter pass after recording
#   2. one server at its defaults: KERNELS x 16Mi,256Mi cold, `gpubench run --timer=cupti` (files auto_*;
#      until 1e63a7b the default auto was CUPTI for cold samples, now it is events)
#      and the same with --timer=events; JSON results; HOT_KERNEL hot (events) before and after
#      the cold runs
#   3. Nsight Compute gpu__time_duration (caches flushed, clocks not locked) of NCU_KERNELS at
#      16Mi/256Mi, ncu on the server itself in profile mode (--profile_runs=5), as round 3 did
#   4. repeatability: REPS default runs of REP_KERNELS at 1Mi, 16Mi, 256Mi (cold, timer auto)
#   5. bench/measure3_report.py: the tables and the goal lines, on stdout and in report.md
# STEPS (default gpu_test,timers,ncu,repeats) picks steps 1-4; the report always runs.
# Everything lands in $WORK (default /tmp/gpubench-m4) and is packed into $OUT/measure3.tar.gz
# after every step. BACKEND=cpu smoke-tests the logic without a GPU (ncu and gpu_test skip).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh  # BUNDLE, LD_LIBRARY_PATH (CUPTI's directory too), B, BACKEND
PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/gpubench-out}
R=${WORK:-/tmp/gpubench-m4}; rm -rf "$R"; mkdir -p "$R" "$OUT"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-270} ))
KERNELS=${KERNELS:-add_f32,add_f32x4,add_f16x8_pack,add_f32_tuned,copy_d2d}
NCU_KERNELS=${NCU_KERNELS:-add_f32,add_f32x4,add_f16x8_pack,add_f32_tuned}  # ncu sees kernels, not copy_d2d's memcpy
REP_KERNELS=${REP_KERNELS:-add_f32,add_f16x8_pack}
REPS=${REPS:-5}
HOT_KERNEL=${HOT_KERNEL:-add_f32x4}
STEPS=${STEPS:-gpu_test,timers,ncu,repeats}
# The kernel-duration timer the cold runs of step 2 use against events: cupti (activity records)
# or gpu_time (the gpu__time_duration counter, Nsight Compute's Duration).
DURATION_TIMER=${DURATION_TIMER:-cupti}
GPU_TEST_FILTER=${GPU_TEST_FILTER:-TimerGpuTest.*}
want() { [[ ,$STEPS, == *,$1,* ]]; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ $BACKEND == cpu ]] && NCU=
pack() { tar czf "$OUT/measure3.tar.gz" -C "$R" . ; }
source bench/device_steps.sh  # log, cmd, left, need, timed, stop_tree
# start_named NAME [WRAPPER...]: a server (under WRAPPER when given) on a free port; sets $pid, $T.
start_named() {
  local name=$1 port_file=$R/$1.port; shift
  : > "$port_file"
  "$@" "$B/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 --port_file="$port_file" \
      --metrics_listen= --max_elements=1073741824 > "$R/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [[ -s $port_file ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat "$port_file"); rm -f "$port_file"
  log "server $name ${1:-} pid=$pid at $T"
}
{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  echo "ncu: ${NCU:-none}"; [[ -n $NCU ]] && "$NCU" --version | tail -1
  echo "libcupti: $(find /usr/local -name 'libcupti.so.13*' 2>/dev/null | head -1)"
  [[ -f BUILD_COMMIT ]] && echo "bundle built from: $(cat BUILD_COMMIT)"
} > "$R/machine.txt" 2>&1
cat "$R/machine.txt"

# 1. The GPU tests of the timer.
if want gpu_test && [[ $BACKEND == cuda && -x $B/gpu_test ]] && need 40 gpu_test; then
  cmd "gpu_test --gtest_filter='$GPU_TEST_FILTER'"
  timed gpu_test 90 "$B/gpu_test" --gtest_filter="$GPU_TEST_FILTER" > "$R/gpu_test.log" 2>&1
  log "gpu_test: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$R/gpu_test.log" | tr '\n' ' ')"
  pack
fi

# 2. One server at its defaults: CUPTI (auto) vs events.
if want timers && need 30 timers; then
  start_named timers
  "$B/gpubench" devices --target="$T" > "$R/devices.txt" 2>&1
  # Hot batches stay on events under auto: the same hot runs before any CUPTI recording in this
  # server and after it (a residue of CUPTI in the process would show as a difference).
  hot_runs() {
    for n in 16Mi 256Mi; do
      timed "hot_$1_${HOT_KERNEL}_$n" 25 "$B/gpubench" run "$HOT_KERNEL" --size=$n --mode=hot \
          --target="$T" --format=json > "$R/hot_$1_${HOT_KERNEL}_$n.json" 2>> "$R/err.txt"
    done
  }
  cmd "gpubench run $HOT_KERNEL --size=N --mode=hot --format=json (N in 16Mi 256Mi; before and after the cold runs)"
  hot_runs before
  cupti_flag=--timer=$DURATION_TIMER; [[ $BACKEND == cpu ]] && cupti_flag=  # the CPU backend refuses both
  cmd "gpubench run K --size=N --format=json --timer=$DURATION_TIMER|events  (K in $KERNELS, N in 16Mi 256Mi; server defaults)"
  for k in ${KERNELS//,/ }; do
    for n in 16Mi 256Mi; do
      need 8 "run_${k}_$n" || break 2
      timed "auto_${k}_$n" 25 "$B/gpubench" run "$k" --size=$n $cupti_flag --target="$T" --format=json \
          > "$R/auto_${k}_$n.json" 2>> "$R/err.txt"
      timed "events_${k}_$n" 25 "$B/gpubench" run "$k" --size=$n --timer=events --target="$T" \
          --format=json > "$R/events_${k}_$n.json" 2>> "$R/err.txt"
    done
  done
  need 10 hot_after && hot_runs after
  stop_tree "$pid"
  pack
fi

# 3. Nsight Compute on the server itself, profile mode (launches without the blocking kernel).
if want ncu && [[ -n $NCU ]] && need 45 ncu_time; then
  cmd "$NCU --target-processes all --clock-control none --cache-control all -k regex:Add --metrics gpu__time_duration.sum -o ncu_time gpubench_server ...; gpubench run K --size=N --profile_runs=5 --format=json (K in $NCU_KERNELS, N in 16Mi 256Mi)"
  start_named ncu_time timeout 150 "$NCU" --target-processes all --clock-control none \
      --cache-control all -k regex:Add --metrics gpu__time_duration.sum -o "$R/ncu_time" -f
  for k in ${NCU_KERNELS//,/ }; do
    for n in 16Mi 256Mi; do
      timed "ncu_${k}_$n" 30 "$B/gpubench" run "$k" --size=$n --profile_runs=5 --target="$T" \
          --format=json > "$R/ncu_run_${k}_$n.json" 2>> "$R/err.txt"
    done
  done
  stop_tree "$pid"
  timed ncu_import 30 "$NCU" -i "$R/ncu_time.ncu-rep" --csv --page raw \
      --metrics gpu__time_duration.sum > "$R/ncu_time.csv" 2>> "$R/err.txt"
  rm -f "$R/ncu_time.ncu-rep"
  pack
fi

# 4. Repeatability: a fresh server at its defaults.
if want repeats && need 30 repeats; then
  start_named repeats
  cmd "for i in 1..$REPS: gpubench run K --size=N --format=json  (K in $REP_KERNELS, N in 1Mi 16Mi 256Mi)"
  for i in $(seq 1 "$REPS"); do
    for k in ${REP_KERNELS//,/ }; do
      for n in 1Mi 16Mi 256Mi; do
        need 20 "rep_$i" || break 3
        timeout 20 "$B/gpubench" run "$k" --size=$n --target="$T" --format=json \
            > "$R/rep_${k}_${n}_$i.json" 2>> "$R/err.txt" || log "rep_${k}_${n}_$i rc=$?"
      done
    done
    log "repeat round $i done ($(left) s left)"
  done
  stop_tree "$pid"
  pack
fi

# 5. The report.
log "done ($(left) s left)"
KERNELS=$KERNELS NCU_KERNELS=$NCU_KERNELS timeout 30 python3 bench/measure3_report.py "$R" > "$R/report.md" 2>> "$R/err.txt"
pack
echo
cat "$R/report.md"
