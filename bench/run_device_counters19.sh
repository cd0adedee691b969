#!/usr/bin/env bash
# Issue #19, the misses left after session 4: hardware-counter evidence in one device call of at
# most BUDGET_S seconds (default 420); builds nothing. From a directory holding .bundle/
# (BINS="gpubench_server gpubench" bench/make_bundle.sh BUILD_DIR) with .bundle/bin/l2_probe
# (nvcc -O3 -std=c++17 -arch=sm_90 -o .bundle/bin/l2_probe bench/l2_probe.cu) and bench/:
#   OUT=$OUT bash bench/run_device_counters19.sh
# Every command runs under `timeout`; a step is skipped (a line in steps.txt) when less than its
# budget is left; no server is waited on without a bound. Counters: Nsight Compute, clocks as they
# are (--clock-control none), reports imported to CSV (--page raw) and the .ncu-rep deleted.
# Steps, most important first:
#   1. 16Mi hot f16/bf16 placement (server 4.07-4.08 TB/s, goal 4.15; the probe 4.18-4.20 with
#      64 MiB + 64 B buffers, 4.11-4.14 with exact-size ones):
#      a. probe: l2_probe's {f16,bf16}_keep25_768x1 (the catalog's add_*_l2keep: an eighth of L2
#         per input evict_last), distinct inputs, buffers of 32 MiB (exact) and 64 MiB + 64 B (pad),
#         in the order A B B A A B B A (PROBE_ROUNDS)
#      b. probe counters: ncu --cache-control none on `l2_probe --ncu` (3 launches per variant back
#         to back; the report takes the 3rd = steady hot state), both buffer sizes
#      c. server counters: ncu --cache-control none on the server in profile mode, --mode=hot (in
#         profile mode only a cold run flushes L2 before each launch; hot launches follow each
#         other with the stream idle in between, so the later ones see the L2 the earlier ones
#         left), add_{f16,bf16}_l2keep, default placement and --default_placement_pad_bytes=34 MiB
#         (buffers 66 MiB apart, as the probe's); the server's L2 flush kernel is in the kernel
#         filter, so the CSV shows whether one ran between the launches
#   2. 256Mi hot vs cold (hot 91.8-91.9% of peak, cold 92.4-92.6%): ncu on the server in profile
#      mode, add_f32_bulk, cub_add_f32, add_f16_bulk: --mode=cold under --cache-control all, and
#      --mode=hot under --cache-control none (a hot launch follows the previous launch's output):
#      DRAM bytes per launch (does a hot launch write back the lines the previous one left dirty?)
#   3. 256Mi hot paced: a server at its defaults, those kernels hot with and without --max_duty=0.6
#      (A B B A A B B A, HOT_ROUNDS) and cold once each; nvidia-smi power/clock log for the call
#   4. f32 16Mi cold vs torch (add_f32x4, add_f32_tuned) and 256Mi hot vs CUB (add_f32_bulk,
#      cub_add_f32): ALT_ROUNDS rounds of server runs and bench/torch_add.py, alternating who goes
#      first
#   4b. issue #15, "no loss of truth" like for like: v1's server (OLD, default .bundle/v1) and
#      this server with GPUBENCH_L2_FLUSH=memset (v1's flush), cold at SMALL and BIG, defaults,
#      FLUSH_KERNELS; v1's SMALL items run to its 15 s timeout
#   4c. (STEPS=pad_time, not in the default list) 16Mi hot add_{f16,bf16}_l2keep through two
#      servers, default placement and the 34 MiB pad, alternating PAD_ROUNDS rounds (events)
#   5. bench/counters19_report.py: one table per step and what it shows (report.md, stdout)
# STEPS (default probe,probe_ncu,server_ncu,ncu256,duty,alt) picks steps. Everything lands in $WORK
# (default /tmp/gpubench-c19), packed into $OUT/counters19.tar.gz after every step; steps.txt has
# each step's rc and wall seconds, commands.txt the commands. BACKEND=cpu smoke-tests the logic
# without a GPU (ncu, torch and the probe are skipped); SMALL/BIG (default 16Mi/256Mi) shrink the
# server sizes of steps 3-4 for that.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source bench/device_lib.sh  # BUNDLE, LD_LIBRARY_PATH (CUPTI's directory too), B, BACKEND
PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/gpubench-out}
R=${WORK:-/tmp/gpubench-c19}; rm -rf "$R"; mkdir -p "$R" "$OUT"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-420} ))
STEPS=${STEPS:-probe,probe_ncu,server_ncu,ncu256,duty,alt,flush_v1}
OLD=${OLD:-$BUNDLE/v1}  # v1's server and CLI (commit d8f0c84), for step 4b
FLUSH_KERNELS=${FLUSH_KERNELS:-add_f32x4,add_f16x8_pack,add_f32_tuned}
want() { [[ ,$STEPS, == *,$1,* ]]; }
SMALL=${SMALL:-16Mi}
BIG=${BIG:-256Mi}
PROBE_ROUNDS=${PROBE_ROUNDS:-4}
HOT_ROUNDS=${HOT_ROUNDS:-4}
ALT_ROUNDS=${ALT_ROUNDS:-4}
BIG_KERNELS=${BIG_KERNELS:-add_f32_bulk,cub_add_f32,add_f16_bulk}
L2KEEP_KERNELS=${L2KEEP_KERNELS:-add_f16_l2keep,add_bf16_l2keep}
MAX_DUTY=${MAX_DUTY:-0.6}
N16=16777216  # step 1's elements (16Mi)
# The probe's buffer sizes: the operand's exact bytes (as the server allocates) and its default.
declare -A ALLOC=([exact]=33554432 [pad]=67108928)
PAD_BYTES=35651584  # 34 MiB after each 32 MiB buffer: 66 MiB apart, as the probe's 64 MiB + 64 B
# The probe's copy of add_{f16,bf16}_l2keep (keep25 = a quarter of L2 for both inputs).
PROBE_FILTER=16_keep25_768x1
METRICS=${METRICS:-gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
PROBE=$B/l2_probe; [[ -x $PROBE ]] || PROBE=
HAVE_TORCH=0
if [[ $BACKEND == cpu ]]; then
  NCU=''; PROBE=''  # nothing here can drive a GPU
else
  timeout 60 python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && HAVE_TORCH=1
fi
pack() { tar czf "$OUT/counters19.tar.gz" -C "$R" . ; }
source bench/device_steps.sh  # log, cmd, left, need, timed, stop_tree
cap() { local l; l=$(left); echo $(( $1 < l ? $1 : l )); }  # cap SECONDS: at most what is left

# start_named NAME [VAR=VALUE...] [-- WRAPPER...]: a server (under WRAPPER when given, with the
# variables in its environment, SERVER_ARGS as more flags) on a free port; sets $pid and $T; its
# log is $R/NAME.log. Returns 1 (and stops what it started) when no port came within 60 s or the
# budget.
start_named() {
  local name=$1 port_file envs=() wrap=(); shift
  while (( $# )) && [[ $1 != -- ]]; do envs+=("$1"); shift; done
  (( $# )) && { shift; wrap=("$@"); }
  port_file=$R/$name.port; : > "$port_file"
  env "${envs[@]}" "${wrap[@]}" "${SERVER_DIR:-$B}/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 \
      --port_file="$port_file" --metrics_listen= --max_elements=1073741824 ${SERVER_ARGS:-} \
      > "$R/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    [[ -s $port_file ]] && break
    kill -0 "$pid" 2>/dev/null || break  # exited: no port will come
    (( $(left) < 5 )) && break
    sleep 0.1
  done
  T=127.0.0.1:$(cat "$port_file"); rm -f "$port_file"
  if [[ $T == 127.0.0.1: ]]; then
    log "server $name did not come up: $(tail -3 "$R/$name.log" | tr '\n' ' ')"
    stop_tree "$pid"
    return 1
  fi
  log "server $name ${envs[*]} ${SERVER_ARGS:-} ${wrap[0]:-} pid=$pid at $T"
}
# srv NAME LIMIT ARGS...: `gpubench run ARGS` on the server at $T, JSON in $R/NAME.json; the run's
# wall-clock window goes to marks.txt (the report reads the power log inside it).
srv() {
  local name=$1 limit=$2 t0 rc; shift 2
  t0=$(now)
  timed "$name" "$limit" "$B/gpubench" run "$@" --target="$T" --format=json > "$R/$name.json" 2>> "$R/err.txt"
  rc=$?
  echo "$name $t0 $(now)" >> "$R/marks.txt"
  return $rc
}
# ncu_import NAME: $R/NAME.ncu-rep to $R/NAME.csv (base units), then deleted; ncu's errors in
# $R/NAME.log go to steps.txt.
ncu_import() {
  local line
  if [[ -f $R/$1.ncu-rep ]]; then
    timed "${1}_import" 60 "$NCU" -i "$R/$1.ncu-rep" --csv --page raw --print-units base \
        --metrics "$METRICS" > "$R/$1.csv" 2>> "$R/err.txt"
    rm -f "$R/$1.ncu-rep"
  else
    log "$1: no report"
  fi
  grep -h '==ERROR==' "$R/$1.log" 2>/dev/null | head -3 | while read -r line; do log "$1: $line"; done
}
# ncu_server NAME CACHE REGEX [VAR=VALUE...]: a server under ncu (--cache-control CACHE, kernels
# matching REGEX, the variables in its environment, SERVER_ARGS as more flags), the runs of RUNS ("KERNEL|ARGS" items; their
# order and rc in NAME.runs, the report pairs them with the launches), the report imported.
ncu_server() {
  local name=$1 cache=$2 regex=$3 item k; shift 3
  cmd "$* $NCU --target-processes all --clock-control none --cache-control $cache -k regex:'$regex' --metrics $METRICS -o $name gpubench_server ${SERVER_ARGS:-} ...; then: $(printf 'gpubench run %s; ' "${RUNS[@]//|/ }")"
  start_named "$name" "$@" -- timeout "$(cap 240)" "$NCU" --target-processes all --clock-control none \
      --cache-control "$cache" -k "regex:$regex" --metrics "$METRICS" -o "$R/$name" -f || return
  : > "$R/$name.runs"
  for item in "${RUNS[@]}"; do
    k=${item%%|*}
    need 25 "${name}_$k" || break  # leaves time to stop the server and import
    # shellcheck disable=SC2086  # the run's flags, word-split
    srv "${name}_$k" 90 "$k" ${item#*|}
    echo "$k $?" >> "$R/$name.runs"
  done
  stop_tree "$pid"
  ncu_import "$name"
}

{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  echo "ncu: ${NCU:-none}"; [[ -n $NCU ]] && timeout 30 "$NCU" --version | tail -1
  echo "l2_probe: ${PROBE:-none}"
  echo "torch available: $HAVE_TORCH"
  ((HAVE_TORCH)) && torch_version /dev/stdout
  [[ -f BUILD_COMMIT ]] && echo "bundle built from: $(cat BUILD_COMMIT)"
  echo "BACKEND=$BACKEND SMALL=$SMALL BIG=$BIG PROBE_ROUNDS=$PROBE_ROUNDS HOT_ROUNDS=$HOT_ROUNDS ALT_ROUNDS=$ALT_ROUNDS MAX_DUTY=$MAX_DUTY"
} > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
# Power and clocks for the whole call (the report reads them inside each run's window in
# marks.txt). nvidia-smi stamps local time: clock_ref.txt pairs it with epoch seconds.
echo "$(date +%s.%N) $(date '+%Y/%m/%d %H:%M:%S.%N')" > "$R/clock_ref.txt"
timeout "$(cap 600)" nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks.mem,temperature.gpu \
    --format=csv,noheader,nounits -lms 200 > "$R/power.csv" 2>&1 &
power_pid=$!

# 1a. The probe's timing, exact-size vs 64 MiB + 64 B buffers, alternating.
if want probe && [[ -n $PROBE ]] && need 20 probe; then
  cmd "L2_PROBE_FILTER=$PROBE_FILTER L2_PROBE_DATA=distinct L2_PROBE_ALLOC_BYTES=${ALLOC[exact]}|${ALLOC[pad]} l2_probe $N16 (order exact pad pad exact ..., $PROBE_ROUNDS runs of each)"
  for i in $(seq 1 "$PROBE_ROUNDS"); do
    order="exact pad"; (( i % 2 == 0 )) && order="pad exact"
    for a in $order; do
      need 10 "probe_${a}_r$i" || break 2
      timed "probe_${a}_r$i" 30 env L2_PROBE_FILTER=$PROBE_FILTER L2_PROBE_DATA=distinct \
          L2_PROBE_ALLOC_BYTES="${ALLOC[$a]}" "$PROBE" $N16 > "$R/probe_${a}_r$i.csv" 2>> "$R/err.txt"
    done
  done
  pack
elif want probe; then log "probe SKIPPED: no l2_probe (or BACKEND=cpu)"; fi

# 1b. The probe's counters: 3 launches per variant back to back, no cache control.
if want probe_ncu && [[ -n $PROBE && -n $NCU ]]; then
  for a in exact pad; do
    need 30 "ncu_probe_$a" || continue
    cmd "L2_PROBE_FILTER=$PROBE_FILTER L2_PROBE_DATA=distinct L2_PROBE_ALLOC_BYTES=${ALLOC[$a]} $NCU --clock-control none --cache-control none -k regex:VecKernel --metrics $METRICS -o ncu_probe_$a l2_probe --ncu $N16"
    timed "ncu_probe_$a" 90 env L2_PROBE_FILTER=$PROBE_FILTER L2_PROBE_DATA=distinct \
        L2_PROBE_ALLOC_BYTES="${ALLOC[$a]}" "$NCU" --clock-control none --cache-control none \
        -k regex:VecKernel --metrics "$METRICS" -o "$R/ncu_probe_$a" -f "$PROBE" --ncu $N16 \
        > "$R/ncu_probe_$a.log" 2>&1
    ncu_import "ncu_probe_$a"
    pack
  done
elif want probe_ncu; then log "probe_ncu SKIPPED: no l2_probe or no ncu"; fi

# 1c. The server's counters, hot profile launches, default placement and the 34 MiB pad.
if want server_ncu && [[ -n $NCU ]]; then
  RUNS=()
  for k in ${L2KEEP_KERNELS//,/ }; do RUNS+=("$k|--size=16Mi --mode=hot --profile_runs=5 --verify=false"); done
  if need 45 ncu_srv16_pad0; then ncu_server ncu_srv16_pad0 none 'AddOnePassKernel|L2ReadFlush'; pack; fi
  if need 45 ncu_srv16_pad34M; then
    SERVER_ARGS=--default_placement_pad_bytes=$PAD_BYTES \
        ncu_server ncu_srv16_pad34M none 'AddOnePassKernel|L2ReadFlush'
    pack
  fi
elif want server_ncu; then log "server_ncu SKIPPED: no ncu"; fi

# 2. 256Mi cold (caches flushed by ncu) vs hot (none: each launch after the previous one).
if want ncu256 && [[ -n $NCU ]]; then
  for state in cold hot; do
    cache=all; [[ $state == hot ]] && cache=none
    RUNS=()
    for k in ${BIG_KERNELS//,/ }; do RUNS+=("$k|--size=256Mi --mode=$state --profile_runs=3 --verify=false"); done
    if need 60 "ncu_256_$state"; then ncu_server "ncu_256_$state" $cache 'AddBulkKernel|transform_kernel'; pack; fi
  done
elif want ncu256; then log "ncu256 SKIPPED: no ncu"; fi

# 3. Hot with and without pacing, cold once, one server at its defaults.
if want duty && need 40 duty; then
  if start_named duty; then
    cmd "gpubench run K --size=$BIG --mode=hot [--max_duty=$MAX_DUTY] --format=json (K in $BIG_KERNELS; rounds 1..$HOT_ROUNDS: odd unpaced first, even paced first); then gpubench run K --size=$BIG --mode=cold --format=json"
    for i in $(seq 1 "$HOT_ROUNDS"); do
      order="unpaced paced"; (( i % 2 == 0 )) && order="paced unpaced"
      for k in ${BIG_KERNELS//,/ }; do
        for c in $order; do
          need 12 "duty_${k}_${c}_r$i" || break 3
          flag=; [[ $c == paced ]] && flag=--max_duty=$MAX_DUTY
          srv "duty_${k}_${c}_r$i" 40 "$k" --size="$BIG" --mode=hot ${flag:+"$flag"}
        done
      done
      log "duty round $i done ($(left) s left)"
    done
    for k in ${BIG_KERNELS//,/ }; do
      need 10 "duty_${k}_cold" && srv "duty_${k}_cold" 40 "$k" --size="$BIG" --mode=cold
    done
    stop_tree "$pid"
  fi
  pack
fi

# 4. f32: gpubench vs torch.add, ALT_ROUNDS rounds, who goes first alternating.
if want alt && need 40 alt; then
  if start_named alt; then
    n_small=$(size_numbers "$SMALL"); n_big=$(size_numbers "$BIG")
    cmd "round i (1..$ALT_ROUNDS; odd: server first, even: torch first): gpubench run add_f32x4|add_f32_tuned --size=$SMALL --mode=cold --format=json; gpubench run add_f32_bulk|cub_add_f32 --size=$BIG --mode=hot --format=json; python3 bench/torch_add.py $n_small $n_big --dtypes=f32 --modes=cold,hot"
    server_round() {
      local i=$1 k
      for k in add_f32x4 add_f32_tuned; do
        need 8 "alt_${k}_r$i" && srv "alt_${k}_r$i" 30 "$k" --size="$SMALL" --mode=cold
      done
      for k in add_f32_bulk cub_add_f32; do
        need 8 "alt_${k}_r$i" && srv "alt_${k}_r$i" 30 "$k" --size="$BIG" --mode=hot
      done
    }
    torch_round() {
      local i=$1
      ((HAVE_TORCH)) || return 0
      need 25 "torch_r$i" || return 0
      timed "torch_r$i" 60 python3 bench/torch_add.py "$n_small" "$n_big" --dtypes=f32 --modes=cold,hot \
          > "$R/torch_r$i.csv" 2>> "$R/torch.err"
    }
    for i in $(seq 1 "$ALT_ROUNDS"); do
      need 20 "alt_r$i" || break
      if (( i % 2 )); then server_round "$i"; torch_round "$i"; else torch_round "$i"; server_round "$i"; fi
      log "alt round $i done ($(left) s left)"
    done
    ((HAVE_TORCH)) || log "torch SKIPPED: no torch with CUDA"
    stop_tree "$pid"
  fi
  pack
fi

# 4b. v1 against this server with v1's flush (memset), cold, server defaults.
if want flush_v1 && [[ -x $OLD/gpubench_server ]] && need 60 flush_v1; then
  cmd "GPUBENCH_L2_FLUSH=memset gpubench_server; gpubench run K --size=N --format=json; then v1's gpubench_server and v1's gpubench run K --size=N --format=json (K in $FLUSH_KERNELS, N in $SMALL $BIG)"
  if start_named flush_v2memset GPUBENCH_L2_FLUSH=memset; then
    for k in ${FLUSH_KERNELS//,/ }; do
      for n in $SMALL $BIG; do need 8 "v2memset_${k}_$n" && srv "v2memset_${k}_$n" 30 "$k" --size="$n"; done
    done
    stop_tree "$pid"
  fi
  if SERVER_DIR=$OLD start_named flush_v1; then
    for k in ${FLUSH_KERNELS//,/ }; do
      for n in $SMALL $BIG; do
        need 22 "v1_${k}_$n" || continue
        timed "v1_${k}_$n" 25 "$OLD/gpubench" run "$k" --size="$n" --target="$T" --format=json \
            > "$R/v1_${k}_$n.json" 2>> "$R/err.txt"
      done
    done
    stop_tree "$pid"
  fi
  pack
elif want flush_v1; then log "flush_v1 SKIPPED: no v1 server in $OLD or no time"; fi

# 4c. 16Mi hot through the server, default placement vs the 34 MiB pad (two servers, one measures
# at a time).
if want pad_time && need 40 pad_time; then
  if start_named pad0; then
    p0=$pid; t0=$T
    if SERVER_ARGS=--default_placement_pad_bytes=$PAD_BYTES start_named pad34M; then
      p34=$pid; t34=$T
      cmd "two servers (default placement; --default_placement_pad_bytes=$PAD_BYTES), rounds 1..${PAD_ROUNDS:-4} alternating which goes first: gpubench run K --size=16Mi --mode=hot --format=json (K in $L2KEEP_KERNELS)"
      for i in $(seq 1 "${PAD_ROUNDS:-4}"); do
        order="pad0 pad34M"; (( i % 2 == 0 )) && order="pad34M pad0"
        for k in ${L2KEEP_KERNELS//,/ }; do
          for c in $order; do
            need 8 "padtime_${k}_${c}_r$i" || break 3
            if [[ $c == pad0 ]]; then T=$t0; else T=$t34; fi
            srv "padtime_${k}_${c}_r$i" 30 "$k" --size=16Mi --mode=hot
          done
        done
      done
      stop_tree "$p34"
    fi
    stop_tree "$p0"
  fi
  pack
fi

# 5. The report.
kill "$power_pid" 2>/dev/null  # the timeout around nvidia-smi passes the signal on
log "done ($(left) s left)"
timeout 30 python3 bench/counters19_report.py "$R" > "$R/report.md" 2>> "$R/err.txt"
pack
echo
cat "$R/report.md"
