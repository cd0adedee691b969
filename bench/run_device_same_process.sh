#!/usr/bin/env bash
# Issue #19's two remaining rows, isolated (one device call, every step time-boxed):
#   small   bench/add_same_process.py small: 1Mi cold f16/bf16/f32, gpubench's add_*_tuned (256
#           and 128 threads) and torch.add in ONE process on the SAME buffers, every factor that
#           differs between the server and bench/torch_add.py switched on its own (hold, flush,
#           buffers). Needs .bundle/lib/libgpubench_add_probe.so (CMake target
#           gpubench_add_probe; bench/make_bundle.sh packs it when built).
#   large   the same harness at 256Mi f32, hot and cold: add_f32_bulk_pdl, add_f32_bulk, CUB,
#           torch.add and the probe-only bulk variants (bench/add_probe_lib.cu).
#   streams one server per GPUBENCH_STREAM kind (nonblocking, legacy, per_thread), the same runs on
#           each beside torch_add.py, alternating rounds.
#   duty    the server at 1Mi cold with and without pacing (--max_duty, the sleep between
#           samples: torch_add.py idles ~2 ms per 5 us sample, the server almost never), SM clock
#           and duty from --format=json, beside torch_add.py, alternating rounds.
# From a directory holding .bundle/ and bench/:
#   OUT=$OUT [STEPS=small,large,duty] [BUDGET_S=420] bash bench/run_device_same_process.sh
# Results: $OUT/same_process.tar.gz (small.csv, large.csv, duty.csv, streams.csv, report.md).
# SMALL_ARGS / LARGE_ARGS: more add_same_process.py flags (the last of a repeated flag wins).
# BACKEND=cpu smoke-tests the duty step's plumbing without a GPU (torch steps are skipped).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh
STEPS=${STEPS:-small,large,duty}
results_begin same_process "${WORK:-}"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-420} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
# box SECONDS: the step's time box, never past the call's budget (at least 5 s).
box() { local s=$1 l; l=$(( $(left) - 5 )); (( l < s )) && s=$l; (( s < 5 )) && s=5; echo "$s"; }
has() { [[ ,$STEPS, == *,$1,* ]]; }
# alternate_rounds N LABEL SERVER_FN TORCH_FN: N rounds (each started only with 40 s left), odd
# ones server side first, even ones torch side first; packs after each.
alternate_rounds() {
  local r
  for r in $(seq 1 "$1"); do
    (( $(left) < 40 )) && { echo "$2 round $r skipped: $(left) s left"; break; }
    if (( r % 2 )); then "$3" "$r"; "$4" "$r"; else "$4" "$r"; "$3" "$r"; fi
    echo "$2 round $r done ($(left) s left)"; pack
  done
}
cat "$R/machine.txt"
HAVE_TORCH=0
timeout 60 python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && HAVE_TORCH=1
((HAVE_TORCH)) && torch_version "$R/machine.txt"
LIB=$BUNDLE/lib/libgpubench_add_probe.so
{ echo "steps: $STEPS"; echo "lib: $LIB"; } > "$R/command.txt"

if has small && ((HAVE_TORCH)); then
  cmd="python3 bench/add_same_process.py --lib $LIB small --rounds=${SMALL_ROUNDS:-3} --cold_reps=${SMALL_REPS:-150} ${SMALL_ARGS:-}"
  echo "$cmd" >> "$R/command.txt"
  timeout "$(box "${SMALL_S:-160}")" $cmd > "$R/small.csv" 2> "$R/small.err"
  echo "small rc=$? ($(left) s left)"; pack
fi

if has large && ((HAVE_TORCH)); then
  cmd="python3 bench/add_same_process.py --lib $LIB large --holds=blocking --flushes=read --buffers=cudamalloc --rounds=${LARGE_ROUNDS:-5} --cold_reps=30 --hot_reps=50 --batch=10 --dtypes=f32,f16 ${LARGE_ARGS:-}"
  echo "$cmd" >> "$R/command.txt"
  timeout "$(box "${LARGE_S:-110}")" $cmd > "$R/large.csv" 2> "$R/large.err"
  echo "large rc=$? ($(left) s left)"; pack
fi

if has duty; then
  start_server "$R/server.log" || { pack; exit 1; }
  KERNELS=${DUTY_KERNELS:-add_f16_tuned,add_bf16_tuned,add_f32_tuned}
  DUTIES=${DUTIES:-0,0.0025}
  DUTY_SIZE=${DUTY_SIZE:-1Mi}  # the smoke test's is small: a paced run needs many short samples
  echo "duty: gpubench run K --size=$DUTY_SIZE --mode=cold --timer=events --min_time=0.05 --timeout=0.8 --max_duty=D --format=json; K in $KERNELS, D in $DUTIES; python3 bench/torch_add.py 1048576 --modes=cold --dtypes=f16,bf16,f32 --reps=300" >> "$R/command.txt"
  echo "round,kernel,max_duty,samples,median_seconds,min_sm_clock_hz,max_sm_clock_hz,duty_cycle" > "$R/duty.csv"
  server_side() {  # ROUND
    local k d
    for k in ${KERNELS//,/ }; do
      for d in ${DUTIES//,/ }; do
        timeout 30 "$B/gpubench" run "$k" --target="$T" --size="$DUTY_SIZE" --mode=cold --timer=events \
            --min_time=0.05 --timeout=0.8 --max_duty="$d" --format=json > "$R/run.json" 2>> "$R/duty.err" &&
        echo "$1,$k,$d,$(json_fields "$R/run.json" timing.samples timing.medianSeconds \
            measurement.minSmClockHz measurement.maxSmClockHz measurement.dutyCycle)" >> "$R/duty.csv"
      done
    done
  }
  torch_side() {  # ROUND
    ((HAVE_TORCH)) || return 0
    timeout 60 python3 bench/torch_add.py 1048576 --modes=cold --dtypes=f16,bf16,f32 --reps=300 \
        2>> "$R/duty.err" | awk -F, -v r="$1" '{print r","$1",torch,"$4","$5",0,0,0"}' >> "$R/duty.csv"
  }
  alternate_rounds "${DUTY_ROUNDS:-5}" duty server_side torch_side
  stop_server
fi

if has streams; then
  # One server per GPUBENCH_STREAM kind, all up at once, measuring one at a time; rounds alternate
  # the order (odd: servers first, even: torch first).
  KINDS=${STREAM_KINDS:-nonblocking,legacy,per_thread}
  RUNS=${STREAM_RUNS:-add_f16_tuned:1Mi:cold add_bf16_tuned:1Mi:cold add_f32_tuned:1Mi:cold add_f32_bulk_pdl:256Mi:hot cub_add_f32:256Mi:hot}
  declare -A stream_server stream_target
  for kind in ${KINDS//,/ }; do
    export GPUBENCH_STREAM=$kind
    start_server "$R/server_$kind.log" || { unset GPUBENCH_STREAM; pack; exit 1; }
    unset GPUBENCH_STREAM
    stream_server[$kind]=$server stream_target[$kind]=$T
  done
  echo "streams: per GPUBENCH_STREAM in $KINDS: gpubench run K --size=N --mode=M --timer=events --min_time=0.05 --timeout=0.8 --format=json for K:N:M in $RUNS; python3 bench/torch_add.py 1048576 --modes=cold --dtypes=f16,bf16,f32 --reps=300" >> "$R/command.txt"
  echo "round,stream,kernel,elements,mode,samples,median_seconds" > "$R/streams.csv"
  servers_side() {  # ROUND
    local kind run k n m
    for kind in ${KINDS//,/ }; do
      for run in $RUNS; do
        IFS=: read -r k n m <<< "$run"
        timeout 30 "$B/gpubench" run "$k" --target="${stream_target[$kind]}" --size="$n" \
            --mode="$m" --timer=events --min_time=0.05 --timeout=0.8 --format=json \
            > "$R/run.json" 2>> "$R/streams.err" &&
        echo "$1,$kind,$k,$(json_fields "$R/run.json" request.elements),$m,$(json_fields \
            "$R/run.json" timing.samples timing.medianSeconds)" >> "$R/streams.csv"
      done
    done
  }
  torch_side_streams() {  # ROUND
    ((HAVE_TORCH)) || return 0
    timeout 60 python3 bench/torch_add.py 1048576 --modes=cold --dtypes=f16,bf16,f32 --reps=300 \
        2>> "$R/streams.err" | awk -F, -v r="$1" '{print r",torch,"$1","$2","$3","$4","$5}' >> "$R/streams.csv"
  }
  alternate_rounds "${STREAM_ROUNDS:-4}" streams servers_side torch_side_streams
  for kind in ${KINDS//,/ }; do server=${stream_server[$kind]}; stop_server; done
fi

{ echo "# same-process and duty results"; echo
  for f in small large; do
    [[ -s $R/$f.csv ]] && { echo "## $f"; echo; python3 bench/same_process_report.py "$R/$f.csv"; echo; }
  done
  if [[ -s $R/duty.csv ]]; then echo "## duty"; echo; echo '```'; cat "$R/duty.csv"; echo '```'; fi
  if [[ -s $R/streams.csv ]]; then
    echo "## server per stream kind"; echo; echo '```'; cat "$R/streams.csv"; echo '```'
  fi
} > "$R/report.md" 2> "$R/report.err"
pack
cat "$R/report.md"
