#!/usr/bin/env bash
# Session 3, device call 1 (2 x H200): GPU tests, the GEMM proof (issue #17), peer copies re-measured.
set -uo pipefail
export BUNDLE=$PWD/.dev/lead/.bundle
source bench/device_lib.sh
R=$OUT/call1; mkdir -p "$R"
pack() { tar czf "$OUT/call1.tar.gz" -C "$OUT" call1 $(cd $OUT && ls gemm.tar.gz 2>/dev/null); }
machine_info "$R/machine.txt"; nvidia-smi topo -m >> "$R/machine.txt" 2>&1
( time timeout 150 "$B/gpu_test" > "$R/gpu_test.txt" 2>&1 ) 2>> "$R/steps.txt"; echo "gpu_test rc=$?" >> "$R/steps.txt"
( time timeout 60 "$B/copy_gpu_test" > "$R/copy_gpu_test.txt" 2>&1 ) 2>> "$R/steps.txt"; echo "copy_gpu_test rc=$?" >> "$R/steps.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|FAILED  \]" "$R/gpu_test.txt" "$R/copy_gpu_test.txt" | tail -20
pack
start_server "$R/server.log"
for k in copy_peer_ce copy_peer_sm_push copy_peer_sm_pull; do
  for s in 16Mi 256Mi; do
    echo "$B/gpubench run $k --size=$s --mode=hot --format=json" >> "$R/commands.txt"
    timeout 30 "$B/gpubench" run $k --target="$T" --size=$s --mode=hot --format=json > "$R/peer_${k}_$s.json" 2>> "$R/peer.err"
    echo "$k $s rc=$? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r.get("throughput",{}); print(r["timing"]["medianSeconds"], t.get("bandwidthBytesPerSecond"), r.get("verification",{}).get("status"), r.get("launchReport",""))' "$R/peer_${k}_$s.json" 2>&1 | cut -c1-200)"
  done
done | tee "$R/peer.txt"
stop_server_bounded
pack
OUT=$OUT timeout 330 bash bench/run_device_gemm.sh > "$R/gemm_stdout.txt" 2>&1; echo "gemm rc=$?" >> "$R/steps.txt"
pack
tail -80 "$R/gemm_stdout.txt"; cat "$R/steps.txt"
