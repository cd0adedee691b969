#!/usr/bin/env bash
# Issue #17, GEMM 4096: where gpubench's hot sample loses time against torch's, in one device call
# of at most ~120 s; builds nothing. From .bundle/ (bench/make_bundle.sh packs gemm_hot_probe in
# CUDA builds):
#  1. gemm_hot_probe SIZE bf16,f16: gpubench's own cuBLASLt plan (the heuristic's first, and the
#     setup trials' choice where it differs) timed in batches of 11 under seven stream holds,
#     ABBA-interleaved (none, block = gpubench's TimeLaunches, sleep = a fixed spin like
#     torch.cuda._sleep, block_warm = one untimed launch before the start event, block_cupti =
#     block with the kernels' CUPTI span, block_idle = block with the host idle HOT_IDLE_US after
#     each sample, as torch's Python loop, and block_idle3x with three times that) -> hot_probe.csv
#     (see the probe's header comment)
#  2. bench/torch_gemm.py at SIZE for bf16 and f16, batch 11, 2 s (the comparison's other side)
#     -> torch.csv, with its duty cycle (timed seconds / wall seconds of its sampling loop)
#  3. gpubench through a server, same size, --mode=hot --timer=events --min_time=2 (torch's 2 s)
#     --throttle_threshold=0
#     (every sample kept, as torch keeps them) -> run_<p>.json, and their duty cycles
#  4. summary.txt: all of it side by side (also printed)
# $OUT/gemm_hot.tar.gz is refreshed after each step.
#   bench/run_device_gemm_hot.sh [SIZE=4096]
# PROBE_ARGS (default "0.25 4 11": seconds per mode and round, rounds, batch) go to the probe.
set -uo pipefail
size=${1:-4096}
probe_args=${PROBE_ARGS:-0.25 4 11}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/device_lib.sh"
results_begin gemm_hot  # $R = $OUT/gemm_hot, packed into $OUT/gemm_hot.tar.gz by pack
torch_version "$R/machine.txt"
echo "cuBLASLt directory: ${GPUBENCH_CUBLASLT_DIR:-<none found>}" >> "$R/machine.txt"
cat "$R/machine.txt"
S0=$SECONDS

# 1. The probe (about 8.5 s per plan and precision with the defaults, plus setup). Step time-outs
# 50 + 35 + 2 x 12 s: the whole call stays under 115 s (about 60-70 s when nothing hangs).
if [[ -x $B/gemm_hot_probe ]]; then
  echo "$B/gemm_hot_probe $size bf16,f16 $probe_args" >> "$R/command.txt"
  # shellcheck disable=SC2086  # PROBE_ARGS is a list of arguments
  timeout 50 "$B/gemm_hot_probe" "$size" bf16,f16 $probe_args > "$R/hot_probe.csv" 2> "$R/hot_probe.err"
  echo "probe rc=$? at $((SECONDS - S0)) s" | tee -a "$R/steps.txt"
else
  echo "no $B/gemm_hot_probe in the bundle (a CPU build?)" | tee -a "$R/steps.txt"
fi
pack

# 2. torch, the same batch and seconds as gpubench's hot runs at 4096 (11 launches, ~2 s).
echo "python3 bench/torch_gemm.py --sizes $size --precisions bf16,f16 --seconds 2 --batch 11 --kernel_names" >> "$R/command.txt"
timeout 35 python3 "$here/torch_gemm.py" --sizes "$size" --precisions bf16,f16 --seconds 2 \
    --batch 11 --kernel_names > "$R/torch.csv" 2> "$R/torch.err"
echo "torch rc=$? at $((SECONDS - S0)) s" | tee -a "$R/steps.txt"
pack

# 3. gpubench through its server, every sample kept (--throttle_threshold=0).
if start_server "$R/server.log"; then
  for p in bf16 f16; do
    echo "$B/gpubench run gemm_$p --size=$size --mode=hot --timer=events --min_time=2 --timeout=4 --throttle_threshold=0 --format=json" >> "$R/command.txt"
    timeout 12 "$B/gpubench" run "gemm_$p" --target="$T" --size="$size" --mode=hot --timer=events \
        --min_time=2 --timeout=4 --throttle_threshold=0 --format=json > "$R/run_$p.json" 2> "$R/run_$p.err"
    echo "gpubench $p rc=$? at $((SECONDS - S0)) s" | tee -a "$R/steps.txt"
  done
  stop_server
fi
pack

# 4. Side by side.
timeout 20 python3 - "$R" > "$R/summary.txt" 2>&1 <<'PY'
import csv, json, os, sys
r = sys.argv[1]
print("== gemm_hot_probe (per-launch us; duty = timed / wall seconds of the mode's rounds)")
try:
    for line in open(os.path.join(r, "hot_probe.csv")):
        print(line.rstrip())
except OSError as e:
    print("no probe output:", e)
print("\n== torch.matmul (events, torch.cuda._sleep hold)")
try:
    for row in csv.DictReader(l for l in open(os.path.join(r, "torch.csv")) if not l.startswith("torch ")):
        wall = float(row["finished_unix"]) - float(row["started_unix"])
        print(f"{row['precision']}: median {float(row['median_seconds'])*1e6:.2f} us, "
              f"{float(row['flops_per_second'])/1e12:.1f} TFLOP/s, {row['samples']} samples, "
              f"duty {float(row['measured_seconds'])/wall:.3f}, clock MHz "
              f"{row['clock_min_mhz']}/{row['clock_median_mhz']}/{row['clock_max_mhz']}, {row['kernel']}")
except (OSError, KeyError, ValueError) as e:
    print("no torch output:", e)
print("\n== gpubench run --timer=events --throttle_threshold=0")
for p in ("bf16", "f16"):
    try:
        j = json.load(open(os.path.join(r, f"run_{p}.json")))
        t, m = j["timing"], j["measurement"]
        gpu = m["measuredSeconds"]  # every sample kept: no recovery pauses in the wall time
        print(f"{p}: median {t['medianSeconds']*1e6:.2f} us, {j['throughput']['operationsPerSecond']/1e12:.1f} "
              f"TFLOP/s, {m['samplesTaken']} samples ({m.get('lowClockSamples', 0)} under 75% clock, "
              f"kept), batch {m['hotBatchSize']}, duty {gpu / m['samplingWallSeconds']:.3f}, clock MHz "
              f"{m.get('minSmClockHz', 0)/1e6:.0f}-{m.get('maxSmClockHz', 0)/1e6:.0f}, "
              f"reasons {m.get('clockEventReasons', [])}")
    except (OSError, KeyError, ValueError, ZeroDivisionError) as e:
        print(f"{p}: no result ({e})")
PY
pack
cat "$R/summary.txt"
