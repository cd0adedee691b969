#!/usr/bin/env bash
# Issue #7's proof in one device call; builds nothing. Starts the server from .bundle/, runs every
# elementwise-add variant (seed, bf16 seed patterns, tuned, grid-stride, bulk copy, CUB) and
# copy_d2d at 1Mi, 16Mi and 256Mi elements, cold and hot, then torch.add under the same cold/hot
# discipline (bench/torch_add.py), and prints the side-by-side table with ratios and the goal
# table (bench/report.py). Every step is time-boxed; $OUT/results.tar.gz is refreshed after each.
#   [PROFILE=1] bench/run_device_add.sh [SIZES] [AUTOTUNE]   (default 1Mi,16Mi,256Mi; AUTOTUNE=autotune)
# KERNELS, SWEEP_TIMEOUT, MEASURE (default "--min_time=0.1 --timeout=1.5") and EVENT_KERNELS (the
# kernels the independent event timer checks; empty for none) narrow the run to fit a device call.
# PROFILE=1 adds a counter pass (achieved occupancy, DRAM throughput %) for the contenders at the
# largest size, hot, into profile.csv.
# With AUTOTUNE = "autotune", the fp16/bf16 tuned and bulk variants are first autotuned at 64Mi hot
# with --apply, so the sweep runs them at the configuration this GPU measured best (the results
# say so: block_size_source "tuned").
# Expects .bundle/ from bench/make_bundle.sh (carried by the device tool); python3 with torch.
set -uo pipefail
sizes=${1:-1Mi,16Mi,256Mi}
autotune=${2:-}
source "$(dirname "$0")/device_lib.sh"
results_begin add
cat "$R/machine.txt"
start_server "$R/server.log" || { pack; exit 1; }
if [[ $autotune == autotune ]]; then
  for k in add_f16_tuned add_bf16_tuned; do
    echo "$B/gpubench autotune $k --size=64Mi --mode=hot --block_sizes=256,384,512,768,1024 --items_per_thread=8 --min_time=0.05 --timeout=1 --apply" >> "$R/command.txt"
    timeout 40 "$B/gpubench" autotune $k --target="$T" --size=64Mi --mode=hot --block_sizes=256,384,512,768,1024 \
        --items_per_thread=8 --min_time=0.05 --timeout=1 --apply > "$R/autotune_$k.txt" 2>&1
    echo "autotune $k rc=$? $(grep best "$R/autotune_$k.txt")"
  done
  for k in add_f16_bulk add_bf16_bulk; do
    echo "$B/gpubench autotune $k --size=64Mi --mode=hot --block_sizes=128,192,256,384 --items_per_thread=4,6,8,12 --min_time=0.05 --timeout=1 --apply" >> "$R/command.txt"
    timeout 60 "$B/gpubench" autotune $k --target="$T" --size=64Mi --mode=hot --block_sizes=128,192,256,384 \
        --items_per_thread=4,6,8,12 --min_time=0.05 --timeout=1 --apply > "$R/autotune_$k.txt" 2>&1
    echo "autotune $k rc=$? $(grep best "$R/autotune_$k.txt")"
  done
  pack
fi
# KERNELS=a,b,... narrows the sweep (default: every add and copy variant); SWEEP_TIMEOUT (s, per mode);
# MEASURE: the sweep's measurement flags.
MEASURE=${MEASURE:---min_time=0.1 --timeout=1.5}
kernels=${KERNELS:-$("$B/gpubench" kernels --target="$T" --format=csv | awk -F, 'NR > 1 && ($2 == "elementwise_add" || $2 == "copy") {print $1}' | paste -sd,)}
echo "kernels: $kernels" | tee -a "$R/command.txt"
: > "$R/server.csv"
for mode in cold hot; do
  echo "$B/gpubench sweep --kernels=<above> --sizes=$sizes --mode=$mode $MEASURE --format=csv" >> "$R/command.txt"
  timeout "${SWEEP_TIMEOUT:-240}" "$B/gpubench" sweep --target="$T" --kernels="$kernels" --sizes="$sizes" --mode=$mode \
      $MEASURE --format=csv --progress=false >> "$R/server.csv" 2>> "$R/sweep.err"
  echo "sweep $mode rc=$?"; pack
done
if [[ ${PROFILE:-0} == 1 ]]; then
  # Hardware counters (CUPTI range profiler, in the server) for the contenders at the largest
  # size, hot: achieved occupancy and DRAM throughput as % of peak — the "why" behind the ratios.
  largest=${sizes##*,}
  echo "kernel,elements,mode,median_seconds,achieved_occupancy,dram_throughput_percent,note" > "$R/profile.csv"
  for k in add_f32_tuned add_f32_bulk cub_add_f32 add_f16_tuned add_f16_bulk cub_add_f16 copy_d2d; do
    echo "$B/gpubench run $k --size=$largest --mode=hot --profile --format=json" >> "$R/command.txt"
    timeout 60 "$B/gpubench" run $k --target="$T" --size="$largest" --mode=hot --profile \
        --min_time=0.1 --timeout=1.5 --format=json 2>> "$R/sweep.err" |
      python3 -c 'import json, sys; r = json.load(sys.stdin); o = r.get("occupancy", {}); print(",".join(str(x) for x in (r["request"]["kernel"], r["request"]["elements"], "hot", r["timing"]["medianSeconds"], o.get("achievedOccupancy", ""), o.get("dramThroughputPercent", ""), o.get("achievedUnavailableReason", "").replace(",", ";"))))' \
      >> "$R/profile.csv" 2>> "$R/sweep.err"
  done
  pack
fi
stop_server
n_sizes=$(size_numbers "$sizes")
echo "python3 bench/torch_add.py $n_sizes" >> "$R/command.txt"
timeout 170 python3 bench/torch_add.py $n_sizes > "$R/torch.csv" 2> "$R/torch.err"; echo "torch rc=$?"
torch_version "$R/machine.txt"
pack
: > "$R/events.csv"  # independent CUDA-event timer for the default-launch tuned/bulk kernels
for k in ${EVENT_KERNELS-add_f32_tuned add_f32_bulk add_f16_tuned add_f16_bulk}; do
  for n in 16777216 268435456; do
    for mode in cold hot; do timeout 20 "$B/event_timer" $k $n $mode 50 >> "$R/events.csv"; done
  done
done
python3 bench/report.py "$R/server.csv" "$R/torch.csv" "$R/events.csv" > "$R/report.md"
pack
cat "$R/report.md"
