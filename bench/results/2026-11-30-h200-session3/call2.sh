#!/usr/bin/env bash
# Session 3, device call 2 (final tree): GPU tests, #15 measure3, #19 add comparison (events timer on both sides).
set -uo pipefail
export BUNDLE=$PWD/.dev/lead/.bundle
source bench/device_lib.sh
R=$OUT/call2; mkdir -p "$R"
pack() { tar czf "$OUT/call2.tar.gz" -C "$OUT" call2 $(cd $OUT && ls measure3.tar.gz add.tar.gz 2>/dev/null); }
machine_info "$R/machine.txt"
S0=$(date +%s)
( time timeout 120 "$B/gpu_test" > "$R/gpu_test.txt" 2>&1 ) 2>> "$R/steps.txt"; echo "gpu_test rc=$? at $(( $(date +%s) - S0 )) s" >> "$R/steps.txt"
( time timeout 40 "$B/copy_gpu_test" > "$R/copy_gpu_test.txt" 2>&1 ) 2>> "$R/steps.txt"; echo "copy_gpu_test rc=$?" >> "$R/steps.txt"
grep -E "^\[  (PASSED|FAILED) |FAILED TEST" "$R/gpu_test.txt" "$R/copy_gpu_test.txt" | tail -12
pack
# GEMM 4096: same kernel as torch yet slower in call 1 -- the batch span by CUPTI (kernel durations) vs events.
for pad in default 0; do
  if [ $pad = 0 ]; then export GPUBENCH_PLACEMENT_PAD_BYTES=0; fi
  start_server "$R/server_gemm_pad$pad.log"
  for p in f16 bf16; do
    for t in events cupti events; do
      timeout 30 "$B/gpubench" run gemm_$p --target="$T" --size=4096 --mode=hot --min_time=0.5 --timeout=8 --timer=$t --format=json > "$R/gemm_${p}_${t}_pad$pad.json" 2>> "$R/gemm_ab.err"
      python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); s=r["timing"]; print("pad", sys.argv[4], sys.argv[2], sys.argv[3], s.get("medianSeconds"), s.get("timer"), s.get("eventMedianSeconds"), r.get("hotBatchSize"), r.get("throughput",{}).get("operationsPerSecond"))' "$R/gemm_${p}_${t}_pad$pad.json" $p $t $pad >> "$R/gemm_ab.txt" 2>&1
      [ $pad = 0 ] && [ $t = cupti ] && break
    done
  done
  stop_server_bounded
  unset GPUBENCH_PLACEMENT_PAD_BYTES
done
timeout 60 python3 bench/torch_gemm.py --sizes 4096 --precisions f16,bf16 --seconds 2 --batch 11 --kernel_names >> "$R/gemm_ab.txt" 2>> "$R/gemm_ab.err"
cat "$R/gemm_ab.txt"; echo "gemm ab at $(( $(date +%s) - S0 )) s" >> "$R/steps.txt"
pack
OUT=$OUT BUDGET_S=200 timeout 220 bash bench/run_device_measure3.sh > "$R/measure3_stdout.txt" 2>&1; echo "measure3 rc=$? at $(( $(date +%s) - S0 )) s" >> "$R/steps.txt"
pack
KERNELS=add_f32_tuned,add_f32_l2keep,add_f32x4,add_f32_bulk,add_f16_tuned,add_f16_l2keep,add_f16_bulk,add_bf16_tuned,add_bf16_l2keep,add_bf16_bulk,cub_add_f32,cub_add_f16,cub_add_bf16 \
  MEASURE="--min_time=0.05 --timeout=0.8 --timer=events" EVENT_KERNELS="" SWEEP_TIMEOUT=70 OUT=$OUT \
  timeout 190 bash bench/run_device_add.sh 1Mi,16Mi,256Mi > "$R/add_stdout.txt" 2>&1; echo "add rc=$? at $(( $(date +%s) - S0 )) s" >> "$R/steps.txt"
pack
tail -45 "$R/measure3_stdout.txt"; grep -A40 "Goal table" "$R/add_stdout.txt" | head -45; cat "$R/steps.txt" | grep rc
