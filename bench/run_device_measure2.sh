#!/usr/bin/env bash
# Issues #15 and #19, what round 2 left open ("measure round 3"), in one device call; builds
# nothing. Run from a directory holding .bundle/ (bench/make_bundle.sh), bench/ and
# .bundle/bin/l2_probe (nvcc -O3 -std=c++17 -arch=sm_90 -o .bundle/bin/l2_probe bench/l2_probe.cu):
#   bash bench/run_device_measure2.sh
# Every command runs under `timeout`; a step is skipped (and says so in steps.txt) when less than
# its budget is left of BUDGET_S (default 440 s); no server is ever waited on without a bound.
# Everything lands in $WORK (default /tmp/gpubench-m3), packed into $OUT/m3.tar.gz after every
# step; `bench/measure_round3_report.py DIR` makes the tables from the unpacked files.
# Steps, most important first:
#   1. gpu_test: the new clean-flush tests and the measurement tests
#   2. #15/#19 cold: the same cold sweep on a server with the old flush (GPUBENCH_L2_FLUSH=memset)
#      and with the new one (clean, the default), 1Mi/16Mi/256Mi
#   3. #15: Nsight Compute gpu__time_duration on the clean-flush server, profile mode, caches
#      flushed (--cache-control all), clocks not locked, 3 kernels x 16Mi/256Mi (as round 2)
#   4. torch.add (bench/torch_add.py) cold+hot with the clean flush, and cold with the old one
#   5. counters of the flush itself: ncu --cache-control none on event_timer cold launches after
#      each flush: the DRAM bytes the timed launch writes (a dirty L2 makes it write more)
#   8. #19(a): 256Mi counters (ncu, caches flushed) for the best gpubench variants, CUB,
#      cudaMemcpy and torch.add, f32 and f16
#   7. #19(b): 16Mi hot f16, server vs standalone timers, one server ingredient at a time
#   6. #19(c): f32 1Mi, gpubench and torch.add alternating, ROUNDS times
# BACKEND=cpu smoke-tests the logic without a GPU (ncu/torch/probe steps skip when absent).
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${BUNDLE:-$PWD/.bundle}
B=$BUNDLE/bin
export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PATH=$PATH:/usr/local/cuda/bin
BACKEND=${BACKEND:-cuda}
OUT=${OUT:-/tmp/gpubench-out}
R=${WORK:-/tmp/gpubench-m3}; mkdir -p "$R" "$OUT"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-440} ))
SIZES=${SIZES:-1Mi,16Mi,256Mi}
MEASURE=${MEASURE:---min_time=0.05 --timeout=0.8}
# Cold contenders: the ncu kernels of round 2, the best variant of every dtype/size of round 2's
# goal table and CUB.
COLD_KERNELS=${COLD_KERNELS:-add_f32,add_f32x4,add_f16x8_pack,add_f32_l2keep,add_f32_tuned,add_f32_bulk,add_f16_l2keep,add_f16_bulk,add_bf16_l2keep,add_bf16_bulk,cub_add_f32,cub_add_f16,cub_add_bf16}
# The old flush only for the ones the flush comparison needs.
MEMSET_KERNELS=${MEMSET_KERNELS:-add_f32,add_f32x4,add_f16x8_pack,add_f32_l2keep,add_f16_l2keep,add_bf16_l2keep}
NCU_KERNELS=${NCU_KERNELS:-add_f32,add_f32x4,add_f16x8_pack}
ROUNDS=${ROUNDS:-5}
ALT_SIZE=${ALT_SIZE:-1Mi}   # step 6's size
HOT_SIZE=${HOT_SIZE:-16Mi}  # step 7's size (the timers below are told 16777216 elements)
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
HAVE_TORCH=0; timeout 60 python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && HAVE_TORCH=1
pack() { tar czf "$OUT/m3.tar.gz" -C "$R" . ; }
source bench/device_steps.sh  # log, cmd, left, need, timed, stop_tree
# start_server NAME [VAR=VALUE...] [-- WRAPPER...]: sets $pid and $T; the log is $R/NAME.log.
# $SERVER_ARGS (word-split) are extra server flags.
start_server() {
  local name=$1 port_file; shift
  local envs=() wrap=()
  while (( $# )) && [[ $1 != -- ]]; do envs+=("$1"); shift; done
  (( $# )) && { shift; wrap=("$@"); }
  port_file=$R/$name.port; : > "$port_file"
  env "${envs[@]}" "${wrap[@]}" "$B/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 \
      --port_file="$port_file" --metrics_listen= --max_elements=1073741824 ${SERVER_ARGS:-} > "$R/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [[ -s $port_file ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat "$port_file"); rm -f "$port_file"
  log "server $name ${envs[*]:-} ${wrap[*]:0:1} ${SERVER_ARGS:-} pid=$pid at $T"
}
G() { "$B/gpubench" "$@" --target="$T"; }

{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  echo "ncu: $NCU"; [[ -n $NCU ]] && "$NCU" --version | tail -1
  echo "torch available: $HAVE_TORCH"
  ((HAVE_TORCH)) && python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  [[ -f BUILD_COMMIT ]] && echo "bundle built from: $(cat BUILD_COMMIT)"
} > "$R/machine.txt" 2>&1
cat "$R/machine.txt"

# 1. GPU unit tests: the clean flush (reads everything, stores nothing), the env choice, and the
#    measurement tests it can disturb.
if [[ -x $B/gpu_test ]] && need 40 gpu_test; then
  cmd "gpu_test --gtest_filter='CudaTest.L2ReadFlush*:CudaTest.ColdFlush*:CudaTest.ClockFrom*:CudaTest.ColdIsNot*:CudaTest.L2Keep*'"
  timed gpu_test 60 "$B/gpu_test" \
      --gtest_filter='CudaTest.L2ReadFlush*:CudaTest.ColdFlush*:CudaTest.ClockFrom*:CudaTest.ColdIsNot*:CudaTest.L2Keep*' \
      > "$R/gpu_test.log" 2>&1
  log "gpu_test: $(grep -E '^\[  (PASSED|FAILED)' "$R/gpu_test.log" | tr '\n' ' ')"
  pack
fi

# 2. The cold sweep, old flush then new flush, same kernels/sizes/options, one server each.
for flush in memset clean; do
  need 60 "cold_sweep_$flush" || continue
  start_server "server_$flush" GPUBENCH_L2_FLUSH=$flush
  [[ $flush == clean ]] && G devices > "$R/devices.txt" 2>&1
  kernels=$COLD_KERNELS; [[ $flush == memset ]] && kernels=$MEMSET_KERNELS
  cmd "GPUBENCH_L2_FLUSH=$flush gpubench_server ...; gpubench sweep --kernels=$kernels --sizes=$SIZES --mode=cold $MEASURE --format=csv"
  timed "cold_sweep_$flush" 110 "$B/gpubench" sweep --target="$T" --kernels="$kernels" --sizes="$SIZES" \
      --mode=cold $MEASURE --format=csv --progress=false > "$R/cold_$flush.csv" 2>> "$R/err.txt"
  stop_tree "$pid"
  pack
done

# 3. Nsight Compute vs gpubench (the clean-flush server), as round 2 measured it.
if [[ -n $NCU ]] && need 45 ncu_time; then
  cmd "$NCU --target-processes all --clock-control none --cache-control all -k regex:Add --metrics gpu__time_duration.sum -o ncu_time gpubench_server ...; gpubench run K --size=N --profile_runs=5 (K in $NCU_KERNELS, N in 16Mi 256Mi)"
  start_server ncu_time -- timeout 150 "$NCU" --target-processes all --clock-control none --cache-control all \
      -k regex:Add --metrics gpu__time_duration.sum -o "$R/ncu_time" -f
  for k in ${NCU_KERNELS//,/ }; do
    for n in 16Mi 256Mi; do
      timed "ncu_time_${k}_$n" 30 "$B/gpubench" run "$k" --size=$n --profile_runs=5 --target="$T" \
          --format=json > "$R/ncu_run_${k}_$n.json" 2>> "$R/err.txt"
    done
  done
  stop_tree "$pid"
  timed ncu_time_import 30 "$NCU" -i "$R/ncu_time.ncu-rep" --csv --page raw --metrics gpu__time_duration.sum \
      > "$R/ncu_time.csv" 2>> "$R/err.txt"
  rm -f "$R/ncu_time.ncu-rep"
  pack
fi

# 4. torch.add under the same discipline: cold (clean flush) and hot, then cold with the old flush.
if ((HAVE_TORCH)) && need 50 torch; then
  n_sizes=$(python3 -c "import sys; m={'Ki':1<<10,'Mi':1<<20,'Gi':1<<30}; print(' '.join(str(int(s[:-2])*m[s[-2:]]) for s in sys.argv[1].split(',')))" "$SIZES")
  cmd "python3 bench/torch_add.py $n_sizes --modes=cold,hot --flush=clean"
  timed torch_clean 90 python3 bench/torch_add.py $n_sizes --modes=cold,hot --flush=clean > "$R/torch_clean.csv" 2>> "$R/torch.err"
  pack
  if need 30 torch_memset; then
    cmd "python3 bench/torch_add.py $n_sizes --modes=cold --flush=memset"
    timed torch_memset 50 python3 bench/torch_add.py $n_sizes --modes=cold --flush=memset > "$R/torch_memset.csv" 2>> "$R/torch.err"
    pack
  fi
fi

# 5. What each flush leaves for the timed launch to write back: ncu without cache control on the
#    three cold launches event_timer times after its flush (the 5 warm-ups skipped).
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_op_read_hit_rate.pct,lts__t_sector_op_write_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed
if [[ -n $NCU ]]; then
  for flush in memset clean; do
    for k in add_f32 add_f16x8_pack; do
      need 20 "ncu_flush_${flush}_$k" || continue
      cmd "EVENT_TIMER_FLUSH=$flush $NCU --clock-control none --cache-control none -k regex:Add --launch-skip 5 --launch-count 3 --metrics $METRICS --csv event_timer $k 16777216 cold 3"
      EVENT_TIMER_FLUSH=$flush timed "ncu_flush_${flush}_$k" 40 "$NCU" --clock-control none --cache-control none \
          -k regex:Add --launch-skip 5 --launch-count 3 --metrics "$METRICS" --csv \
          "$B/event_timer" $k 16777216 cold 3 > "$R/ncu_flush_${flush}_${k}_16Mi.csv" 2>> "$R/err.txt"
    done
  done
  pack
fi

# 8. #19(a): 256Mi counters, caches flushed before each profiled launch (ncu --cache-control all).
#    gpubench and CUB through event_timer (the catalog launcher, default launch), 2 launches after
#    the 5 warm-ups; copy_d2d (cudaMemcpyAsync) at 256Mi and 128Mi f32 elements (= the f16
#    256Mi byte count); torch.add f32 and f16 (the third add of each).
if [[ -n $NCU ]]; then
  for k in add_f32_bulk add_f32_stream cub_add_f32 add_f16_l2keep add_f16_stream cub_add_f16 copy_d2d:268435456 copy_d2d:134217728; do
    n=268435456; [[ $k == *:* ]] && { n=${k#*:}; k=${k%%:*}; }
    need 20 "ncu_256_${k}_$n" || continue
    cmd "EVENT_TIMER_BATCH=2 $NCU --clock-control none --cache-control all --launch-skip 5 --launch-count 2 --metrics $METRICS,dram__bytes.sum.per_second --csv event_timer $k $n hot 1"
    EVENT_TIMER_BATCH=2 timed "ncu_256_${k}_$n" 40 "$NCU" --clock-control none --cache-control all --launch-skip 5 \
        --launch-count 2 --metrics "$METRICS,dram__bytes.sum.per_second" --csv "$B/event_timer" $k $n hot 1 \
        > "$R/ncu_256_${k}_$n.csv" 2>> "$R/err.txt"
  done
  if ((HAVE_TORCH)) && need 40 ncu_256_torch; then
    cmd "$NCU --clock-control none --cache-control all -k regex:CUDAFunctor_add --metrics $METRICS,dram__bytes.sum.per_second --csv python3 -c <3 adds f32, 3 adds f16 at 256Mi>"
    timed ncu_256_torch 60 "$NCU" --clock-control none --cache-control all -k regex:CUDAFunctor_add \
        --metrics "$METRICS,dram__bytes.sum.per_second" --csv python3 -c "
import torch
for dt in (torch.float32, torch.float16):
    a = torch.randn(256 << 20, device='cuda', dtype=dt); b = torch.randn_like(a); c = torch.empty_like(a)
    for _ in range(3): torch.add(a, b, out=c)
    torch.cuda.synchronize()
    del a, b, c
" > "$R/ncu_256_torch.csv" 2>> "$R/err.txt"
  fi
  pack
fi
# 6. #19(c): f32 1Mi, gpubench (best variants of round 2) and torch.add alternating.
if ((HAVE_TORCH)) && need 60 alternate; then
  start_server alt
  cmd "for i in 1..$ROUNDS: gpubench run add_f32_l2keep --size=1Mi --mode=cold $MEASURE; gpubench run add_f32_tuned --size=1Mi --mode=hot $MEASURE; python3 bench/torch_add.py 1048576 --dtypes=f32 --modes=cold,hot"
  for i in $(seq 1 "$ROUNDS"); do
    need 15 "alternate_$i" || break
    timeout 20 "$B/gpubench" run add_f32_l2keep --size=$ALT_SIZE --mode=cold $MEASURE --target="$T" --format=csv 2>> "$R/err.txt" |
      tail -n +2 | sed "s/^/$i,/" >> "$R/alt_gpubench.csv"
    timeout 20 "$B/gpubench" run add_f32_tuned --size=$ALT_SIZE --mode=hot $MEASURE --target="$T" --format=csv 2>> "$R/err.txt" |
      tail -n +2 | sed "s/^/$i,/" >> "$R/alt_gpubench.csv"
    timeout 40 python3 bench/torch_add.py 1048576 --dtypes=f32 --modes=cold,hot 2>> "$R/torch.err" |
      sed "s/^/$i,/" >> "$R/alt_torch.csv"
    log "alternate round $i done ($(left) s left)"
  done
  stop_tree "$pid"
  pack
fi

# 7. #19(b): 16Mi hot f16, the server against standalone timers, one ingredient at a time:
#    the server (blocking kernel, batch sized to 2 ms, NVML clock-event poll every 50 ms) and the
#    server without NVML (--nvml_library=<none>: no poll thread); event_timer (the same catalog
#    launcher) with plain events and 100 or 50 launches, then with the server's blocking kernel and
#    the server's batch; the probe's copy of the kernel (keep25) at 50 and the server's batch.
#    Twice, interleaved.
if need 45 hotloop; then
  : > "$R/hot_timers.csv"
  for round in 1 2; do
    need 20 "hotloop_$round" || break
    for nvml in with without; do
      SERVER_ARGS=; [[ $nvml == without ]] && SERVER_ARGS=--nvml_library=/nonexistent/libnvidia-ml.so.1
      start_server "hot_${nvml}_nvml_$round"
      SERVER_ARGS=
      timeout 20 "$B/gpubench" run add_f16_l2keep --size=$HOT_SIZE --mode=hot --target="$T" --format=json \
          > "$R/hot_server_${nvml}_nvml_$round.json" 2>> "$R/err.txt"
      stop_tree "$pid"
    done
    batch=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['measurement']['hotBatchSize'])" "$R/hot_server_with_nvml_$round.json" 2>/dev/null || echo 77)
    log "hotloop round $round: server batch $batch"
    for spec in "100 0" "50 0" "$batch 0" "$batch 1" "50 1"; do
      set -- $spec
      printf 'event_timer,batch=%s,block=%s,' "$1" "$2" >> "$R/hot_timers.csv"
      EVENT_TIMER_BATCH=$1 EVENT_TIMER_BLOCK=$2 timeout 20 "$B/event_timer" add_f16_l2keep 16777216 hot 30 \
          >> "$R/hot_timers.csv" 2>> "$R/err.txt" || echo "failed" >> "$R/hot_timers.csv"
    done
    if [[ -x $B/l2_probe ]]; then
      for pb in 50 "$batch"; do
        printf 'l2_probe,batch=%s,block=0,' "$pb" >> "$R/hot_timers.csv"
        L2_PROBE_FILTER=f16_keep25_768x1 L2_PROBE_BATCH=$pb timeout 20 "$B/l2_probe" 16777216 2>> "$R/err.txt" |
          awk -F, '$3 == "hot"' >> "$R/hot_timers.csv"
      done
    fi
  done
  cmd "hot loop: gpubench run add_f16_l2keep --size=16Mi --mode=hot (defaults) on a server with and one without NVML (--nvml_library=/nonexistent/libnvidia-ml.so.1); EVENT_TIMER_BATCH=B EVENT_TIMER_BLOCK=0|1 event_timer add_f16_l2keep 16777216 hot 30; L2_PROBE_FILTER=f16_keep25_768x1 L2_PROBE_BATCH=B l2_probe 16777216 (2 rounds)"
  pack
fi

log "done ($(left) s left)"
pack
