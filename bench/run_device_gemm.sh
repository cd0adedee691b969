#!/usr/bin/env bash
# Issue #17's GEMM proof in one device call; builds nothing. From .bundle/ (bench/make_bundle.sh):
#  1. the GEMM GPU tests (cuBLASLt wrapper against the host reference, every precision; the gemm
#     variants through the engine) -> gpu_test.txt
#  2. per precision (f16, bf16, tf32, f8e4m3): gpubench run gemm_<p> at 4096^3 and 8192^3, hot,
#     verified -> run_<p>_<size>.json; then, adjacent in time (same clocks and temperature),
#     bench/torch_gemm.py for the same precision and sizes (torch.matmul / torch._scaled_mm, hot,
#     CUDA events) -> torch.csv
#  3. f32 and f64 at 4096^3, one non-square M/N/K run and one cold run (the rest of the family)
#  4. bench/gemm_report.py: FLOP/s side by side, ratio gpubench / torch (goal >= 0.97), percent of
#     the datasheet peak, the cuBLASLt algorithm chosen -> report.md (also printed)
# Every step is time-boxed; $OUT/gemm.tar.gz is refreshed after each.
#   bench/run_device_gemm.sh [SIZES] [PRECISIONS]   (default 4096,8192 and f16,bf16,tf32,f8e4m3)
# MEASURE (default "--min_time=0.5 --timeout=8") sets gpubench's measurement flags; EXTRA (default
# 4096) the size of step 3 (non-square: M = 2 EXTRA, N = EXTRA / 4, K = EXTRA).
# Expects .bundle/ (carried by the device tool) and python3 with torch on the device.
set -uo pipefail
sizes=${1:-4096,8192}
precisions=${2:-f16,bf16,tf32,f8e4m3}
MEASURE=${MEASURE:---min_time=0.5 --timeout=8}
extra=${EXTRA:-4096}
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/gemm; mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
pack() { tar czf "$OUT/gemm.tar.gz" -C "$R" . ; }
machine_info "$R/machine.txt"
{ echo "cuBLASLt directory: ${GPUBENCH_CUBLASLT_DIR:-<none found>}"
  timeout 60 python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
} >> "$R/machine.txt" 2>&1
cat "$R/machine.txt"

# 1. GPU tests of the family.
echo "$B/gpu_test --gtest_filter='CublasLt*:GemmLt*:*Gemm*:*gemm*'" >> "$R/command.txt"
timeout 240 "$B/gpu_test" --gtest_filter='CublasLt*:GemmLt*:*Gemm*:*gemm*' > "$R/gpu_test.txt" 2>&1
echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$R/gpu_test.txt" | tr '\n' ' ')"
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

start_server "$R/server.log"
timeout 30 "$B/gpubench" devices --target="$T" > "$R/devices.txt" 2>&1
timeout 30 "$B/gpubench" kernels --target="$T" > "$R/kernels.txt" 2>&1
: > "$R/torch.csv"
for p in ${precisions//,/ }; do
  for s in ${sizes//,/ }; do run "${p}_$s" "gemm_$p" --size="$s" --mode=hot; done
  pack
  echo "python3 bench/torch_gemm.py --sizes $sizes --precisions $p" >> "$R/command.txt"
  timeout 150 python3 bench/torch_gemm.py --sizes "$sizes" --precisions "$p" \
      >> "$R/torch.csv" 2>> "$R/torch.err"
  echo "torch $p rc=$?"
  pack
done
# 3. The rest of the family: CUDA-core f32, f64, a non-square shape, a cold (L2 flushed) run.
run "f32_$extra" gemm_f32 --size="$extra" --mode=hot
run "f64_$extra" gemm_f64 --size="$extra" --mode=hot
run "bf16_m$((2 * extra))_n$((extra / 4))_k$extra" gemm_bf16 --m=$((2 * extra)) --n=$((extra / 4)) \
    --k="$extra" --mode=hot
run "bf16_${extra}_cold" gemm_bf16 --size="$extra" --mode=cold
# The CLI's table too, for the README.
echo "$B/gpubench run gemm_bf16 --size=$extra --mode=hot $MEASURE" >> "$R/command.txt"
timeout 120 "$B/gpubench" run gemm_bf16 --target="$T" --size="$extra" --mode=hot $MEASURE \
    > "$R/table_bf16_$extra.txt" 2>&1
stop_gemm_server
pack

# 4. Report.
python3 bench/gemm_report.py "$R" > "$R/report.md" 2> "$R/report.err"
echo "report rc=$?"
pack
cat "$R/report.md"
