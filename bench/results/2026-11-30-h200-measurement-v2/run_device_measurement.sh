#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-30-h200-measurement-v2/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_measurement.sh. To run it again: bash bench/results/2026-11-30-h200-measurement-v2/run_device_measurement.sh
# Issue #15 (measurement v2) proof in one device call; builds nothing. Every step is time-boxed and
# never waits on a server without a bound. Results go to $OUT/m2/ and are packed into
# $OUT/m2.tar.gz after every step.
#   bench/results/2026-11-30-h200-measurement-v2/run_device_measurement.sh NEW_DIR OLD_DIR LIB_DIR
# NEW_DIR / OLD_DIR hold gpubench_server and gpubench built from this tree and from the old commit
# (d8f0c84, measurement v1); LIB_DIR their shared libraries (bench/make_bundle.sh's lib/).
# Steps:
#   1. time to a result at the server's defaults: run add_f32 --size=1000 and --size=1Mi (new)
#   2. default-option sweeps, cold and hot, 1Mi,16Mi,256Mi: every add/copy variant (new), and a
#      subset (SUBSET) with both old and new servers, timed (old cold small items run 15 s each)
#   3. repeatability: 5 default runs of add_f32 at 1Mi, 16Mi and 256Mi, cold (new)
#   (the old server's sweep runs after step 4: it is the longest and most predictable step)
#   4. Nsight Compute on the new server: profile mode (--profile_runs=5) for NCU_KERNELS at 16Mi
#      and 256Mi, gpu__time_duration.sum with caches flushed and clocks not locked; one default
#      run under ncu to show the blocking-kernel fallback
#   5. Nsight Systems (if present): the NVTX ranges of two runs
# BACKEND=cpu smoke-tests the script without a GPU (steps 4-5 skip without ncu/nsys).
set -uo pipefail
NEW=$(realpath "$1") OLD=$(realpath "$2") LIB=$(realpath "$3")
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/m2; mkdir -p "$R"
BACKEND=${BACKEND:-cuda}
SUBSET=${SUBSET:-add_f32,add_f16x8_pack,cub_add_f32}
NCU_KERNELS=${NCU_KERNELS:-add_f32,add_f32x4,add_f16x8_pack}
SIZES=${SIZES:-1Mi,16Mi,256Mi}
REPEAT_SIZES=${REPEAT_SIZES:-1Mi 16Mi 256Mi}
TTR_SIZES=${TTR_SIZES:-1000 1Mi}
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PATH=$PATH:/usr/local/cuda/bin
pack() { tar czf "$OUT/m2.tar.gz" -C "$R" . ; }
now() { date +%s.%N; }
exec 3>&1  # the script's own stdout, for log lines from inside redirected commands
log() { echo "$*" >> "$R/steps.txt"; echo "$*" >&3; }

# start_server NAME BIN_DIR [WRAPPER...]: sets $pid and $T; the server's log is $R/NAME.log.
start_server() {
  local name=$1 bin=$2; shift 2
  local port_file=$R/$name.port
  : > "$port_file"
  "$@" "$bin/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 --port_file="$port_file" \
      --metrics_listen= --max_elements=1073741824 > "$R/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [[ -s $port_file ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat "$port_file")
}
# descendants PID: every process below PID (a profiler's child server, say).
descendants() {
  local child
  for child in $(awk -v parent="$1" '$4 == parent {print $1}' /proc/[0-9]*/stat 2>/dev/null); do
    echo "$child"; descendants "$child"
  done
}
# stop_server PID: SIGTERM to the gpubench_server at or below PID (so a profiler around it sees the
# application exit and writes its report), then up to 60 s for PID to finish, then SIGKILL.
stop_server() {
  local p=$1 q
  for q in "$p" $(descendants "$p"); do
    [[ $(cat /proc/$q/comm 2>/dev/null) == gpubench_serve* ]] && kill -TERM "$q" 2>/dev/null
  done
  for _ in $(seq 1 600); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
  log "stop_server: $p still running after 60 s; killing"
  for q in $(descendants "$p") "$p"; do kill -KILL "$q" 2>/dev/null; done
}
# timed NAME SECONDS CMD...: runs CMD with a timeout, logs rc and wall seconds.
timed() {
  local name=$1 limit=$2; shift 2
  local t0 t1 rc
  t0=$(now)
  timeout "$limit" "$@"
  rc=$?
  t1=$(now)
  log "$name rc=$rc wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')"
  return $rc
}

{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1
  command -v ncu nsys; ncu --version 2>&1 | tail -1; } > "$R/machine.txt" 2>&1
cat "$R/machine.txt"

# 0. the GPU unit tests of this change (clock read by the blocking kernel, profile mode on CUDA)
if [[ -x $NEW/gpu_test ]]; then
  timed gpu_test 120 "$NEW/gpu_test" --gtest_filter='CudaTest.*' > "$R/gpu_test.log" 2>&1
fi
start_server new "$NEW"
log "new server $T"
"$NEW/gpubench" devices --target="$T" > "$R/devices.txt" 2>&1
# 1. time to a result at the defaults
for n in $TTR_SIZES; do
  timed "ttr_new_$n" 60 "$NEW/gpubench" run add_f32 --size=$n --target="$T" --format=json > "$R/ttr_new_$n.json" 2>> "$R/err.txt"
done
pack
# 3. repeatability (cold, defaults)
for n in $REPEAT_SIZES; do
  for i in 1 2 3 4 5; do
    timeout 60 "$NEW/gpubench" run add_f32 --size=$n --target="$T" --format=csv 2>> "$R/err.txt" | tail -n +2 >> "$R/repeat_new.csv"
  done
done
log "repeatability done"
pack
# 2. sweeps: all add/copy variants (new), then the subset (new, then old)
all=$("$NEW/gpubench" kernels --target="$T" --format=csv | awk -F, 'NR > 1 && ($2 == "elementwise_add" || $2 == "copy") {print $1}' | paste -sd,)
log "kernels: $all"
for mode in cold hot; do
  timed "sweep_new_all_$mode" 200 "$NEW/gpubench" sweep --target="$T" --kernels="$all" --sizes="$SIZES" --mode=$mode \
      --format=json --progress=false > "$R/sweep_new_all_$mode.json" 2>> "$R/err.txt"
  pack
done
for mode in cold hot; do
  timed "sweep_new_subset_$mode" 100 "$NEW/gpubench" sweep --target="$T" --kernels="$SUBSET" --sizes="$SIZES" --mode=$mode \
      --format=csv --progress=false > "$R/sweep_new_subset_$mode.csv" 2>> "$R/err.txt"
done
"$NEW/gpubench" sweep --target="$T" --kernels="$SUBSET" --sizes=16Mi --mode=cold --format=nvbench-json \
    --output_file="$R/nvbench_new_16Mi_cold.json" --progress=false 2>> "$R/err.txt"
stop_server "$pid"
pack
# 4. Nsight Compute on the new server: caches flushed (default), clocks NOT locked.
if command -v ncu > /dev/null; then
  regex='regex:Add'
  start_server ncu "$NEW" timeout 240 ncu --target-processes all --clock-control none --cache-control all \
      -k "$regex" --metrics gpu__time_duration.sum -o "$R/ncu_report" -f
  log "ncu server $T"
  for k in ${NCU_KERNELS//,/ }; do
    for n in 16Mi 256Mi; do
      timed "ncu_profile_${k}_$n" 60 "$NEW/gpubench" run $k --size=$n --profile_runs=5 --target="$T" --format=json \
          > "$R/ncu_run_${k}_$n.json" 2>> "$R/err.txt"
    done
  done
  # A default run under a serializing profiler: the blocking kernel times out, the run falls back.
  timed "ncu_default_fallback" 60 "$NEW/gpubench" run add_f32 --size=16Mi --target="$T" --format=json \
      > "$R/ncu_fallback.json" 2>> "$R/err.txt"
  stop_server "$pid"
  timeout 60 ncu -i "$R/ncu_report.ncu-rep" --csv --page raw --metrics gpu__time_duration.sum \
      > "$R/ncu_raw.csv" 2>> "$R/err.txt"
  log "ncu import rc=$? rows=$(wc -l < "$R/ncu_raw.csv")"
  rm -f "$R/ncu_report.ncu-rep"
  pack
fi
# 2b. the subset on the old server (last: its cold 1Mi/16Mi items run to the 15 s timeout)
start_server old "$OLD"
log "old server $T"
for mode in cold hot; do
  timed "sweep_old_subset_$mode" 200 "$OLD/gpubench" sweep --target="$T" --kernels="$SUBSET" --sizes="$SIZES" --mode=$mode \
      --format=csv --progress=false > "$R/sweep_old_subset_$mode.csv" 2>> "$R/err.txt"
  pack
done
stop_server "$pid"
# 5. Nsight Systems: the NVTX ranges name each run.
if command -v nsys > /dev/null; then
  start_server nsys "$NEW" timeout 120 nsys profile -t cuda,nvtx -o "$R/nsys_report" -f true
  log "nsys server $T"
  timeout 60 "$NEW/gpubench" run add_f32 --size=1Mi --target="$T" --format=csv >> "$R/nsys_runs.csv" 2>> "$R/err.txt"
  timeout 60 "$NEW/gpubench" run add_f32 --size=1Mi --profile_runs=3 --target="$T" --format=csv >> "$R/nsys_runs.csv" 2>> "$R/err.txt"
  stop_server "$pid"
  timeout 60 nsys stats -r nvtx_sum -f csv "$R/nsys_report.nsys-rep" > "$R/nsys_nvtx.csv" 2>> "$R/err.txt"
  log "nsys stats rc=$?"
  rm -f "$R"/nsys_report.*
fi
rm -f "$R"/*.port
pack
log "done"
