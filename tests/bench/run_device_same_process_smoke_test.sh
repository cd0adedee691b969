#!/usr/bin/env bash
# CI smoke test of bench/run_device_same_process.sh (issue #19) on the CPU backend: the duty step
# runs every kernel at every --max_duty through the server and writes its rows, the streams step
# one server per GPUBENCH_STREAM kind (the torch steps need a GPU and are skipped where torch has
# none); then bench/same_process_report.py turns a
# two-round CSV into per-round ratio medians, checked against the figures worked out by hand.
#   run_device_same_process_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$(dirname "$0")/smoke_lib.sh"
smoke_begin "$build"
cd "$src"
fail() { echo "FAIL: $*"; cat "$work/stdout" 2>/dev/null; exit 1; }
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu STEPS=duty,streams DUTY_ROUNDS=1 DUTIES=0,0.5 \
  DUTY_KERNELS=add_f16_tuned,add_f32_tuned DUTY_SIZE=4Ki STREAM_ROUNDS=1 \
  STREAM_RUNS="add_f16_tuned:64Ki:cold cub_add_f32:64Ki:hot" BUDGET_S=200 \
  bash bench/run_device_same_process.sh > "$work/stdout" 2>&1 || fail "script exit $?"
R=$work/out/same_process
[[ -s $work/out/same_process.tar.gz ]] || fail "no archive"
for k in add_f16_tuned add_f32_tuned; do
  for d in 0 0.5; do
    grep -qE "^1,$k,$d,[0-9]+,[0-9.e+-]+," "$R/duty.csv" || fail "no duty row for $k at $d"
  done
done
# The paced run's duty cycle is at most its max_duty (plus rounding): 4Ki samples are short, so
# the pause after each keeps the loop at the bound (a few long samples, as 1Mi on a loaded CPU,
# can end on a sample with no pause after it and read higher).
awk -F, '$3 == "0.5" && $8 > 0.55 {bad = 1} END {exit bad}' "$R/duty.csv" ||
  fail "a run paced at 0.5 reports a higher duty: $(cat "$R/duty.csv")"
grep -q "^## duty" "$R/report.md" || fail "no duty section in the report"
# One server per GPUBENCH_STREAM kind ran both runs (the CPU backend ignores the variable).
for kind in nonblocking legacy per_thread; do
  grep -qE "^1,$kind,add_f16_tuned,65536,cold,[0-9]+,[0-9.e+-]+$" "$R/streams.csv" ||
    fail "no cold row for $kind: $(cat "$R/streams.csv")"
  grep -qE "^1,$kind,cub_add_f32,65536,hot,[0-9]+," "$R/streams.csv" || fail "no hot row for $kind"
done

# The report: torch 10/12 us, ours 8/12 us in rounds 1/2 -> per-round ratios 1.25 and 1.0.
cat > "$work/small.csv" <<'CSV'
experiment,dtype,elements,mode,kernel,hold,flush,buffers,stream,round,samples,median_seconds,clock_hz
small,f16,1048576,cold,torch,blocking,read,torch,nonblocking,1,200,1.0e-05,1.98e9
small,f16,1048576,cold,add_f16_tuned,blocking,read,torch,nonblocking,1,200,8.0e-06,1.98e9
small,f16,1048576,cold,torch,blocking,read,torch,nonblocking,2,200,1.2e-05,1.96e9
small,f16,1048576,cold,add_f16_tuned,blocking,read,torch,nonblocking,2,200,1.2e-05,1.96e9
CSV
python3 bench/same_process_report.py "$work/small.csv" > "$work/report.md" || fail "report failed"
grep -q "| f16 | 1048576 | cold | blocking | read | torch | nonblocking | add_f16_tuned | 10.000 | 1.125 (1.000–1.250) |" \
  "$work/report.md" || fail "report row: $(cat "$work/report.md")"
grep -q "f16 1048576 cold blocking read torch nonblocking: 1970" "$work/report.md" ||
  fail "clock line: $(cat "$work/report.md")"
echo "PASS"
