#!/usr/bin/env bash
# Issue #17's GEMM proof in one device call; builds nothing. From .bundle/ (bench/make_bundle.sh,
# whose default BINS include gemm_lt_probe in CUDA builds):
#  1. the GEMM GPU tests (cuBLASLt wrapper against the host reference: every precision, every
#     heuristic candidate, the setup trials; the gemm variants through the engine) -> gpu_test.txt
#  2. per precision (f16, bf16, tf32, f8e4m3), ROUNDS (default 2) rounds in ABBA order so neither
#     side always runs second on a hotter, power-capped GPU: round 1 gpubench then torch, round 2
#     torch then gpubench. gpubench: `gpubench run gemm_<p> --size=S --mode=hot` (verified, the
#     setup trials pick the algorithm; --throttle_threshold=0: every sample kept, as the torch
#     script keeps them) -> run_<p>_<S>_r<i>.json; then one run under gpubench's default rule
#     (samples under 75% of the default SM clock discarded) at each of DEFAULT_RULE_SIZES
#     -> run_<p>_<S>_t75.json. torch: bench/torch_gemm.py
#     (torch.matmul / torch._scaled_mm) under the same discipline: gpubench's hot batch size and
#     its measured seconds from the round-1 run, inputs uniform in [-1, 1), SM clock through NVML
#     -> torch_r<i>.csv
#  3. f32 and f64 at EXTRA^3, one non-square M/N/K run and one cold run (the rest of the family)
#  4. cuBLASLt's fp8 requirements (gemm_lt_probe: scale alignment, workspace) -> probe_fp8.txt;
#     where ncu exists, one bf16 8192^3 launch of each side under ncu (kernel name, duration, SM
#     clock, SM and memory throughput): torch.matmul, and gemm_lt_probe running the candidate gpubench's trials
#     chose -> ncu_torch.csv, ncu_gpubench.csv
#  5. bench/gemm_report.py: both sides per round, mean ratio (goal >= 0.97), clocks, batches,
#     chosen algorithms, kernels -> report.md (also printed)
# Every step is time-boxed; $OUT/gemm.tar.gz is refreshed after each.
#   bench/run_device_gemm.sh [SIZES] [PRECISIONS]   (default 4096,8192 and f16,bf16,tf32,f8e4m3)
# MEASURE (default "--min_time=0.5 --timeout=8") sets gpubench's measurement flags; EXTRA (default
# 4096) the size of step 3 (non-square: M = 2 EXTRA, N = EXTRA / 4, K = EXTRA); ROUNDS (1 or 2).
# THRESHOLD (default 0) is the goal runs' --throttle_threshold; DEFAULT_RULE_SIZES (default: the
# largest size, where a power-capped GPU throttles; empty: none) the sizes of the extra run.
# MAX_DUTY (default empty: off) is passed as --max_duty to the goal runs: gpubench paces its sampling
# loop so timed seconds stay <= MAX_DUTY x its wall time (an H200 at its 700 W cap clocks higher the
# more it idles between samples; torch_gemm.py prints its own duty, ~0.77-0.83 at 4096 on the H200).
# bench/torch_gemm.py gets the same --max_duty, so both sides run at the same duty; the report's
# discipline line names it.
# BUDGET_SECONDS (default 300): steps 3 and 4 are skipped (and said so) when less than 90 s of it is
# left, so the report (step 5, also rebuildable from the archive) is always written.
# Expects .bundle/ (carried by the device tool) and python3 with torch on the device.
set -uo pipefail
sizes=${1:-4096,8192}
precisions=${2:-f16,bf16,tf32,f8e4m3}
MEASURE=${MEASURE:---min_time=0.5 --timeout=8}
extra=${EXTRA:-4096}
rounds=${ROUNDS:-2}
threshold=${THRESHOLD:-0}
max_duty=${MAX_DUTY:-}
default_rule_sizes=${DEFAULT_RULE_SIZES-${sizes##*,}}
budget=${BUDGET_SECONDS:-300}
# time_left_for STEP: true while at least 90 s of the budget remain.
time_left_for() {
  (( SECONDS + 90 <= budget )) && return 0
  echo "skipped $1: ${SECONDS} s of the ${budget} s budget used"
  return 1
}
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/gemm; mkdir -p "$R"
here=$(cd "$(dirname "$0")" && pwd)
source "$here/device_lib.sh"
pack() { tar czf "$OUT/gemm.tar.gz" -C "$R" . ; }
machine_info "$R/machine.txt"
{ echo "cuBLASLt directory: ${GPUBENCH_CUBLASLT_DIR:-<none found>}"
  timeout 60 python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
} >> "$R/machine.txt" 2>&1
cat "$R/machine.txt"

# 1. GPU tests of the family.
echo "$B/gpu_test --gtest_filter='CublasLt*:GemmLt*:GemmPlan*:*Gemm*:*gemm*'" >> "$R/command.txt"
timeout 150 "$B/gpu_test" --gtest_filter='CublasLt*:GemmLt*:GemmPlan*:*Gemm*:*gemm*' \
    > "$R/gpu_test.txt" 2>&1
echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$R/gpu_test.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED  \] [A-Za-z]' "$R/gpu_test.txt" | sort -u | head -10
pack

# stop_server without `wait`: TERM, up to 10 s for a clean exit, then KILL.
stop_gemm_server() {
  kill -TERM "$server" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$server" 2>/dev/null
}

# run NAME KERNEL ARGS...: one gpubench run, JSON to run_NAME.json.
run() {
  local name=$1 kernel=$2; shift 2
  echo "$B/gpubench run $kernel $* $MEASURE --format=json" >> "$R/command.txt"
  timeout 120 "$B/gpubench" run "$kernel" --target="$T" "$@" $MEASURE --format=json \
      > "$R/run_$name.json" 2> "$R/run_$name.err"
  echo "run $name rc=$?"
}

# discipline P FIELD: per size of $sizes, FIELD (measuredSeconds or hotBatchSize) of gpubench's
# round-1 run of precision P, comma-separated; 2.0 / 0 (torch_gemm.py's defaults) where missing.
discipline() {
  local p=$1 field=$2 out="" v
  for s in ${sizes//,/ }; do
    v=$(timeout 20 python3 - "$R/run_${p}_${s}_r1.json" "$field" <<'PY' 2>/dev/null
import json, sys
def find(o, k):
    if isinstance(o, dict):
        if k in o: return o[k]
        for x in o.values():
            r = find(x, k)
            if r is not None: return r
    return None
print(find(json.load(open(sys.argv[1])), sys.argv[2]))
PY
)
    [[ $v =~ ^[0-9.]+$ ]] || v=$([[ $field == hotBatchSize ]] && echo 0 || echo 2.0)
    out+=${out:+,}$v
  done
  echo "$out"
}

# torch_side P ROUND: bench/torch_gemm.py for precision P under gpubench's discipline.
torch_side() {
  local p=$1 i=$2 seconds batch names=
  seconds=$(discipline "$p" measuredSeconds)
  batch=$(discipline "$p" hotBatchSize)
  [[ $i == 1 ]] && names=--kernel_names
  echo "python3 bench/torch_gemm.py --sizes $sizes --precisions $p --seconds $seconds --batch $batch $names ${max_duty:+--max_duty $max_duty}" >> "$R/command.txt"
  timeout 90 python3 "$here/torch_gemm.py" --sizes "$sizes" --precisions "$p" \
      --seconds "$seconds" --batch "$batch" $names ${max_duty:+--max_duty "$max_duty"} \
      --no_header >> "$R/torch_r$i.csv" 2>> "$R/torch.err"
  echo "torch $p round $i rc=$?"
}

gpubench_side() {
  local p=$1 i=$2
  for s in ${sizes//,/ }; do
    run "${p}_${s}_r$i" "gemm_$p" --size="$s" --mode=hot --throttle_threshold="$threshold" \
        ${max_duty:+--max_duty="$max_duty"}
  done
}

start_server "$R/server.log"
timeout 30 "$B/gpubench" devices --target="$T" > "$R/devices.txt" 2>&1
timeout 30 "$B/gpubench" kernels --target="$T" > "$R/kernels.txt" 2>&1
# 2. ABBA rounds per precision.
for p in ${precisions//,/ }; do
  gpubench_side "$p" 1
  torch_side "$p" 1
  if [[ $rounds -ge 2 ]]; then
    torch_side "$p" 2
    gpubench_side "$p" 2
  fi
  for s in ${default_rule_sizes//,/ }; do run "${p}_${s}_t75" "gemm_$p" --size="$s" --mode=hot; done
  pack
done
# 3. The rest of the family: CUDA-core f32, f64, a non-square shape, a cold (L2 flushed) run.
if time_left_for "the rest of the family"; then
  run "f32_$extra" gemm_f32 --size="$extra" --mode=hot
  run "f64_$extra" gemm_f64 --size="$extra" --mode=hot
  run "bf16_m$((2 * extra))_n$((extra / 4))_k$extra" gemm_bf16 --m=$((2 * extra)) --n=$((extra / 4)) \
      --k="$extra" --mode=hot
  run "bf16_${extra}_cold" gemm_bf16 --size="$extra" --mode=cold
  # The CLI's table too, for the README.
  echo "$B/gpubench run gemm_bf16 --size=$extra --mode=hot $MEASURE" >> "$R/command.txt"
  timeout 120 "$B/gpubench" run gemm_bf16 --target="$T" --size="$extra" --mode=hot $MEASURE \
      > "$R/table_bf16_$extra.txt" 2>&1
fi
stop_gemm_server
pack

# 4. cuBLASLt's fp8 requirements, and the kernels each side launches under ncu.
if [[ -x $B/gemm_lt_probe ]]; then
  echo "$B/gemm_lt_probe ''  (fp8 descriptor variants)" >> "$R/command.txt"
  timeout 30 "$B/gemm_lt_probe" "" > "$R/probe_fp8.txt" 2>&1
  echo "probe rc=$?"; grep '^fp8' "$R/probe_fp8.txt"
fi
big=${sizes##*,}
if command -v ncu > /dev/null && [[ $BACKEND == cuda ]] && time_left_for "ncu"; then
  ncu_args=(--target-processes all -k 'regex:nvjet|gemm|xmma|cutlass|sm90' --launch-count 1
            --section SpeedOfLight --section LaunchStats
            --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
            --csv)
  echo "ncu ${ncu_args[*]} --launch-skip 3 python3 (torch.matmul bf16 ${big}^3)" >> "$R/command.txt"
  timeout 90 ncu "${ncu_args[@]}" --launch-skip 3 python3 -c "
import torch
g = torch.Generator(device='cuda').manual_seed(1)
a = torch.rand($big, $big, device='cuda', generator=g).mul_(2).sub_(1).bfloat16()
b = torch.rand($big, $big, device='cuda', generator=g).mul_(2).sub_(1).bfloat16()
for _ in range(5): torch.matmul(a, b.t())
torch.cuda.synchronize()" > "$R/ncu_torch.csv" 2>&1
  echo "ncu torch rc=$?"
  # The candidate gpubench's trials chose for bf16 at this size ("the heuristic's #K of N").
  rank=$(grep -ohE "heuristic's #[0-9]+" "$R/run_bf16_${big}_r1.json" 2>/dev/null | head -1 | tr -dc 0-9)
  if [[ -x $B/gemm_lt_probe && -n $rank ]]; then
    echo "PROBE_ONLY=bf16 PROBE_CANDIDATE=$rank ncu ${ncu_args[*]} --launch-skip 1 gemm_lt_probe $big" >> "$R/command.txt"
    PROBE_ONLY=bf16 PROBE_CANDIDATE=$rank timeout 90 ncu "${ncu_args[@]}" --launch-skip 1 \
        "$B/gemm_lt_probe" "$big" 32 0 > "$R/ncu_gpubench.csv" 2>&1
    echo "ncu gpubench candidate #$rank rc=$?"
  fi
  pack
fi

# 5. Report.
python3 "$here/gemm_report.py" "$R" > "$R/report.md" 2> "$R/report.err"
echo "report rc=$?"
pack
cat "$R/report.md"
