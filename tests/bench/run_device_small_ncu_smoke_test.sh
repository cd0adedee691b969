#!/usr/bin/env bash
# CI smoke test of bench/run_device_small_ncu.sh (issue #19's 1Mi cold counters) on the CPU backend,
# with a stand-in for Nsight Compute: it runs the profiled command as is, and on import prints a
# raw-page CSV of two launches. Checks that both steps ran (torch.add's may fail without torch),
# that the server step ran every kernel in profile mode, and that the report has its table rows.
#   run_device_small_ncu_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$(dirname "$0")/smoke_lib.sh"
smoke_begin "$build"
cat > "$work/ncu" <<'NCU'
#!/usr/bin/env bash
# Import (-i REPORT --csv ...): a header row, a units row and two launches of one kernel.
[[ $1 == --version ]] && { echo "stand-in ncu"; exit 0; }
if [[ $1 == -i ]]; then
  [[ -f $2 ]] || exit 1
  echo '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","launch__grid_size"'
  echo '"","","ns","byte",""'
  echo '"0","void AddOnePassKernel<__half, 1, 0, 0>(const uint4 *)","3696","4200000","512"'
  echo '"1","void AddOnePassKernel<__half, 1, 0, 0>(const uint4 *)","3744","4200000","512"'
  exit 0
fi
# Profile: skip ncu's options (those taking a value, then -f), write the report, run the rest.
report=
while [[ $# -gt 0 ]]; do
  case $1 in
    --target-processes|--clock-control|--cache-control|-k|--metrics) shift 2 ;;
    -o) report=$2; shift 2 ;;
    -f) shift ;;
    *) break ;;
  esac
done
[[ -n $report ]] && echo "stand-in report" > "$report.ncu-rep"
exec "$@"
NCU
chmod +x "$work/ncu"
cd "$src"
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu NCU=$work/ncu SIZE=4Ki BUDGET_S=200 \
  KERNELS=add_f16_tuned,add_bf16_tuned bash bench/run_device_small_ncu.sh > "$work/stdout" 2>&1
R=$work/out/small_ncu
fail() { echo "FAIL: $*"; cat "$work/stdout"; exit 1; }
[[ -s $work/out/small_ncu.tar.gz ]] || fail "no archive"
grep -q "^ncu_torch rc=" "$R/steps.txt" || fail "the torch.add step did not run"
for k in add_f16_tuned add_bf16_tuned; do
  grep -q "^ncu_$k rc=0" "$R/steps.txt" || fail "$k did not run under the stand-in"
  grep -q "^$k,.*,pass," "$R/server_runs.csv" || fail "$k: no verified profile-mode result"
done
[[ $(grep -c "^| \`AddOnePassKernel<__half, 1, 0, 0>\` | 2 | 3.720 | 4.20 |" "$R/report.md") -eq 2 ]] ||
  fail "report rows: $(cat "$R/report.md")"
grep -q "## gpubench server, profile mode" "$R/report.md" || fail "no server section"
echo "PASS"
