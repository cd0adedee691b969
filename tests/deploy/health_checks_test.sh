#!/usr/bin/env bash
# The node checks of deploy/health/ against a stand-in gpubench that exits with each code
# `gpubench health` can: the NPD plugin maps 0/1/2 (and 3, 4: unreachable, refused) to OK,
# NonOK, Unknown and prints the summary line first; the NHC check fails (die) on 1 only, and on
# 2 too when strict.
set -u
src=${1:-$(dirname "$0")/../..}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if [ "$1" = "$2" ]; then echo "PASS $3"; else echo "FAIL $3: got $1, want $2"; fails=$((fails + 1)); fi; }
for code in 0 1 2 3 4; do
  cat > "$tmp/gpubench" <<FAKE
#!/bin/sh
echo "VERDICT-$code node: summary"
echo "evidence line"
exit $code
FAKE
  chmod +x "$tmp/gpubench"
  out=$(GPUBENCH="$tmp/gpubench" sh "$src/deploy/health/node-problem-detector/check_gpubench_health.sh")
  rc=$?
  want=$([ $code -le 1 ] && echo $code || echo 2)
  check "$rc" "$want" "NPD plugin: gpubench exit $code -> $want"
  check "$out" "VERDICT-$code node: summary" "NPD plugin: the summary line only (exit $code)"
  for mode in "" strict; do
    res=$(GPUBENCH="$tmp/gpubench" bash -c '
      die() { echo "DIE $2"; }; log() { :; }
      source "'"$src"'/deploy/health/slurm/gpubench.nhc"
      check_gpubench_health 127.0.0.1:1 '"$mode"' >/dev/null; echo $?')
    want=$([ $code -eq 1 ] || { [ -n "$mode" ] && [ $code -ne 0 ]; } && echo 1 || echo 0)
    check "$res" "$want" "NHC check ${mode:-default}: gpubench exit $code -> $want"
  done
done
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$src/deploy/health/node-problem-detector/gpubench-health.json" \
  && echo "PASS NPD config parses" || { echo "FAIL NPD config"; fails=$((fails + 1)); }
echo "$([ $fails -eq 0 ] && echo OK || echo FAILED): $fails failed checks"
[ $fails -eq 0 ]
