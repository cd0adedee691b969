#!/usr/bin/env bash
# CI smoke test of bench/run_device_add.sh (issue #7's one-call proof script) on the CPU backend:
# the script must start the server, sweep every add/copy variant cold and hot, survive the missing
# torch and event timer, and print the ratio and goal tables with every run verified.
#   run_device_add_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$(dirname "$0")/smoke_lib.sh"
smoke_begin "$build"
cd "$src"
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu bash bench/run_device_add.sh 1Ki > "$work/stdout" 2>&1
report=$work/out/add/report.md
fail() { echo "FAIL: $*"; cat "$work/stdout"; exit 1; }
grep -q "^Goal table" "$report" || fail "no goal table"
kernels=$(tr ',' '\n' < <(sed -n 's/^kernels: //p' "$work/out/add/command.txt") | grep -c .)
[[ $kernels -ge 20 ]] || fail "only $kernels kernels swept"
rows=$(grep -c "| pass |" "$report")
[[ $rows -eq $((2 * kernels)) ]] || fail "$rows verified rows, expected $((2 * kernels)) (cold + hot)"
! grep -q "FAIL\|ERROR" "$report" || fail "a run failed"
[[ ! -s $work/out/add/sweep.err ]] || fail "sweep errors: $(cat "$work/out/add/sweep.err")"
grep -q "not evaluated" "$report" || fail "cases without torch.add were not marked unevaluated"
echo "ok: $kernels kernels, $rows verified rows"
