#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-30-h200-final/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_final.sh. To run it again: bash bench/results/2026-11-30-h200-final/run_device_final.sh
# Lead's combined H200 proof for 2026-11-30: gpu_test on final main, measurement clock fix,
# warm-up deadline, NVML/sharing (#13), fleet identities (#14).
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root (or a copy holding .bundle/ from bench/make_bundle.sh, bench/ and REV)
export OUT=${OUT:-/tmp/out}; R=$OUT/lead; mkdir -p $R
export BUNDLE=$PWD/.bundle
source bench/device_lib.sh
pack() { tar czf "$OUT/lead.tar.gz" -C "$OUT" lead nvml fleet 2>/dev/null; }
machine_info $R/machine.txt; cat $R/machine.txt
git_rev=$(cat REV 2>/dev/null); echo "rev $git_rev" >> $R/machine.txt
echo "== gpu_test"; t0=$(date +%s)
timeout 150 $B/gpu_test > $R/gpu_test.log 2>&1; echo "gpu_test rc=$? in $(( $(date +%s)-t0 )) s"
grep -E "PASSED|FAILED|SKIPPED" $R/gpu_test.log | tail -8
pack
echo "== server checks"
start_server $R/server.log
echo "target $T"
timeout 20 $B/gpubench info --target=$T > $R/info.txt 2>&1; echo "info rc=$?"; head -20 $R/info.txt
for s in 16Mi 256Mi; do
  timeout 30 $B/gpubench run add_f32 --size=$s --format=json --target=$T > $R/cold_$s.json 2>&1; echo "cold $s rc=$?"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); m=r["measurement"]; print(sys.argv[1], "min/max SM clock MHz", m.get("minSmClockHz",0)/1e6, m.get("maxSmClockHz",0)/1e6, "stop", m.get("stopRule"), "samples", m.get("sampleCount") or m.get("samples"))' $R/cold_$s.json 2>&1 | tail -1
done
t0=$(date +%s.%N); timeout 20 $B/gpubench run add_f32 --size=64Mi --warmup=1000 --rpc_timeout_seconds=1 --target=$T > $R/warmup_deadline.txt 2>&1; echo "warmup deadline rc=$? $(head -c 300 $R/warmup_deadline.txt)"
t1=$(date +%s.%N); timeout 20 $B/gpubench run add_f32 --size=1Mi --target=$T > $R/after_deadline.txt 2>&1; t2=$(date +%s.%N)
echo "next run rc=$? took $(python3 -c "print(round($t2-$t1,2))") s (deadline call took $(python3 -c "print(round($t1-$t0,2))") s)"
timeout 15 $B/gpubench run add_f32 --size=1000 --target=$T > $R/small.txt 2>&1; echo "size 1000 rc=$?"
kill -TERM $server; timeout 30 tail --pid=$server -f /dev/null
pack
echo "== nvml"; timeout 170 bash bench/results/2026-11-30-h200-final/nvml/run_device_nvml.sh > $R/nvml_stdout.txt 2>&1; echo "nvml rc=$?"; cat $OUT/nvml/summary.txt 2>/dev/null | head -40
pack
echo "== fleet"; timeout 130 bash bench/results/2026-11-30-h200-final/fleet/run_device_fleet.sh > $R/fleet_stdout.txt 2>&1; echo "fleet rc=$?"; cat $OUT/fleet/command.txt $OUT/fleet/summary.md 2>/dev/null | head -30
rm -f $OUT/nvml.tar.gz
pack; ls -la $OUT
