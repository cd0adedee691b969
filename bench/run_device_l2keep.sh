#!/usr/bin/env bash
# Issue #19, 16Mi: does add_*_l2keep, now the probe's own code (bench/results/
# 2026-11-30-l2keep-codegen.md), run at the probe's speed through the server? One device call of
# at most BUDGET_S seconds (default 150; BUDGET_SECONDS is the same), builds nothing. From a
# directory holding .bundle/ (bench/make_bundle.sh) with .bundle/bin/l2_probe
# (nvcc -O3 -std=c++17 -arch=sm_90 -o .bundle/bin/l2_probe bench/l2_probe.cu) and bench/:
#   OUT=$OUT bash bench/run_device_l2keep.sh
# At SIZE (default 16Mi) elements, hot and cold, f16/bf16/f32, in the process order A B B A
# (round 2 runs round 1's steps backwards):
#   server_pad0, server_pad2M, server_pad32M: a server with --default_placement_pad_bytes = 0,
#       2097152, 33554432; `gpubench run add_<dtype>_l2keep --mode=M` at its defaults and with
#       --timer=events
#   probe: bench/l2_probe keep25_768x1 (L2_PROBE_FILTER; the same kernel and policy) with its
#       default buffers (64 MiB + 64 bytes each, as round 3) and probe_exact with buffers of the
#       operand's exact size (L2_PROBE_ALLOC_BYTES, as the server allocates)
#   torch: python3 bench/torch_add.py SIZE --modes=cold,hot
# Raw output in $OUT/l2keep.tar.gz (refreshed after every step); the table (median us, TB/s,
# ratio to the probe and to torch.add) from bench/l2keep_report.py on stdout and in report.md.
# RUN_ARGS: more `gpubench run` flags (default none: the server's defaults, as asked). BACKEND=cpu
# smoke-tests it without a GPU (the probe and torch are skipped when absent).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh  # BUNDLE, B, BACKEND, results_begin, pack, start_server, stop_server
results_begin l2keep
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-${BUDGET_SECONDS:-150}} ))
source bench/device_steps.sh  # log, cmd, need, timed
SIZE=${SIZE:-16Mi}
n=$(size_numbers "$SIZE")
DTYPES=(f16 bf16 f32)
[[ -f BUILD_COMMIT ]] && echo "bundle built from: $(cat BUILD_COMMIT)" >> "$R/machine.txt"
cat "$R/machine.txt"
echo "size=$SIZE elements=$n" >> "$R/machine.txt"

# server PAD ROUND: one server with the placement pad; every dtype x mode x timer.
server_step() {
  local pad=$1 round=$2 dtype mode timer
  need 15 "server_pad$pad r$round" || return
  SERVER_ARGS="${SERVER_ARGS:-} --default_placement_pad_bytes=$pad" \
      start_server "$R/server_pad${pad}_r$round.log" || return
  for dtype in "${DTYPES[@]}"; do
    for mode in hot cold; do
      for timer in default events; do
        local flag=; [[ $timer == events ]] && flag=--timer=events
        timed "server_pad${pad}_${timer}_${dtype}_${mode}_r$round" 20 "$B/gpubench" run \
            "add_${dtype}_l2keep" --size="$SIZE" --mode=$mode $flag ${RUN_ARGS:-} --target="$T" --format=json \
            > "$R/server_pad${pad}_${timer}_${dtype}_${mode}_r$round.json" 2>> "$R/err.txt"
      done
    done
  done
  stop_server
  pack
}
# probe ROUND: the probe's keep25_768x1 with its default buffers, then with exact-size ones.
probe_step() {
  local round=$1
  [[ -x $B/l2_probe ]] || { log "probe r$round SKIPPED: no $B/l2_probe"; return; }
  need 10 "probe r$round" || return
  L2_PROBE_FILTER=keep25_768x1 timed "probe_r$round" 20 "$B/l2_probe" "$n" \
      > "$R/probe_r$round.csv" 2>> "$R/err.txt"
  # Exact sizes: 2 bytes per element for f16/bf16 ("16_keep" matches both), 4 for f32.
  L2_PROBE_FILTER=16_keep25_768x1 L2_PROBE_ALLOC_BYTES=$((2 * n)) timed "probe_exact16_r$round" 20 \
      "$B/l2_probe" "$n" > "$R/probe_exact_r$round.csv" 2>> "$R/err.txt"
  L2_PROBE_FILTER=f32_keep25_768x1 L2_PROBE_ALLOC_BYTES=$((4 * n)) timed "probe_exact32_r$round" 20 \
      "$B/l2_probe" "$n" 2>> "$R/err.txt" | grep -v '^variant' >> "$R/probe_exact_r$round.csv"
  pack
}
torch_step() {
  local round=$1
  need 30 "torch r$round" || return
  timed "torch_r$round" 45 python3 bench/torch_add.py "$n" --dtypes=f16,bf16,f32 --modes=cold,hot \
      > "$R/torch_r$round.csv" 2>> "$R/err.txt"
  pack
}

cmd "rounds 1 and 2 (A B B A): server pads 0, 2097152, 33554432 x {gpubench run add_<dtype>_l2keep --size=$SIZE --mode=hot|cold [--timer=events] --format=json}; L2_PROBE_FILTER=keep25_768x1 l2_probe $n; L2_PROBE_FILTER=16_keep25_768x1 L2_PROBE_ALLOC_BYTES=$((2 * n)) l2_probe $n; L2_PROBE_FILTER=f32_keep25_768x1 L2_PROBE_ALLOC_BYTES=$((4 * n)) l2_probe $n; python3 bench/torch_add.py $n --dtypes=f16,bf16,f32 --modes=cold,hot"
steps=("server_step 0" "server_step 2097152" "server_step 33554432" probe_step torch_step)
for i in "${!steps[@]}"; do ${steps[$i]} 1; done
for (( i = ${#steps[@]} - 1; i >= 0; i-- )); do ${steps[$i]} 2; done
torch_version "$R/machine.txt"
log "done ($(left) s left)"
timeout 20 python3 bench/l2keep_report.py "$R" > "$R/report.md" 2>> "$R/err.txt"
pack
echo
cat "$R/report.md"
