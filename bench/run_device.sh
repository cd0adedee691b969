#!/usr/bin/env bash
# One device call: GPU tests, then the seed kernels through the real server and CLI at the seed's
# sizes, cold and hot, beside torch.add and an independent CUDA-event timer. Logs under $OUT.
#   bench/run_device.sh [tests|bench|all] [SIZES]
# Expects .bundle/ from bench/make_bundle.sh (carried by the device tool).
set -uo pipefail
what=${1:-all}
sizes=${2:-1Mi,16Mi,256Mi}
OUT=${OUT:-/tmp/gpubench-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.bundle/lib
B=$PWD/.bundle/bin
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,clocks.sm,temperature.gpu,power.draw --format=csv
  uname -r
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

if [[ $what == tests || $what == all ]]; then
  "$B/kernels_test" --gtest_brief=1 > "$OUT/kernels_test.log" 2>&1; echo "kernels_test rc=$?"
  "$B/engine_test" --gtest_brief=1 > "$OUT/engine_test.log" 2>&1; echo "engine_test rc=$?"
  "$B/gpu_test" > "$OUT/gpu_test.log" 2>&1; echo "gpu_test rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|FAILED  \]" "$OUT/gpu_test.log" | tail -15
fi

if [[ $what == bench || $what == all ]]; then
  "$B/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file=/tmp/gpubench.port \
      --max_elements=1073741824 > "$OUT/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do [[ -s /tmp/gpubench.port ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat /tmp/gpubench.port)
  "$B/gpubench" devices --target="$T" | tee "$OUT/devices.txt"
  kernels=add_f32,add_f32x4,add_f16,add_f16x2,add_f16x8,add_f16x8_pack,cub_add_f32,cub_add_f16,cub_add_bf16,copy_d2d,saxpy_minimal,saxpy_sophisticated,saxpy_balanced
  : > "$OUT/server.csv"
  for mode in cold hot; do
    "$B/gpubench" sweep --target="$T" --kernels=$kernels --sizes="$sizes" --mode=$mode \
        --timeout=8 --format=csv --progress=false >> "$OUT/server.csv" 2>> "$OUT/sweep.err"
    echo "sweep $mode rc=$?"
  done
  "$B/gpubench" run saxpy_sophisticated --size=32Mi --target="$T" | tee "$OUT/saxpy_detail.txt"
  kill -TERM $server; wait $server; echo "server exit=$?"
  python3 bench/torch_add.py $(echo "$sizes" | sed 's/Mi/*1048576/g; s/,/ /g' | xargs -n1 | while read e; do echo $((e)); done) \
      > "$OUT/torch.csv" 2> "$OUT/torch.err"; echo "torch rc=$?"
  : > "$OUT/events.csv"
  for k in add_f32 add_f32x4 add_f16x8_pack cub_add_f32 copy_d2d saxpy_minimal; do
    for n in $(echo "$sizes" | sed 's/Mi/*1048576/g; s/,/ /g'); do
      for mode in cold hot; do "$B/event_timer" $k $((n)) $mode >> "$OUT/events.csv"; done
    done
  done
  python3 bench/report.py "$OUT/server.csv" "$OUT/torch.csv" "$OUT/events.csv" | tee "$OUT/report.md"
fi
