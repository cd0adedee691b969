#!/usr/bin/env bash
# Issue #17's copy families in one device call (two GPUs); builds nothing. Starts the server from
# .bundle/, sweeps every copy kernel (H2D and D2H from pinned and pageable memory, bidirectional,
# peer by copy engine and by SM pull/push) at 64 MiB and 1 GiB, hot and cold; times torch
# copy_(non_blocking=True) between pinned host tensors and the device (bench/torch_copy.py) in the
# same call; prints the table with ratios and the goal table (bench/copy_report.py); runs the copy
# GPU tests. Every step is time-boxed; $OUT/copies.tar.gz is refreshed after each.
#   bench/run_device_copies.sh [SIZES]     (default 16Mi,256Mi f32 elements = 64 MiB, 1 GiB)
# MEASURE (default "--min_time=0.2 --timeout=2") narrows the sampling; KERNELS the sweep.
# BACKEND=cpu (with a CPU build's bundle) smoke-tests the script without a GPU: the server then
# simulates two devices (--cpu_devices=2) so the peer kernels run.
# Expects .bundle/ from bench/make_bundle.sh (carried by the device tool); python3 with torch.
set -uo pipefail
sizes=${1:-16Mi,256Mi}
source "$(dirname "$0")/device_lib.sh"
results_begin copies
{ timeout 20 nvidia-smi topo -m; timeout 20 nvidia-smi -q -d PCIE 2>/dev/null | grep -iE "gpu 0|generation|width|max|current" | head -40
} >> "$R/machine.txt" 2>&1
cat "$R/machine.txt"
[[ $BACKEND == cpu ]] && SERVER_ARGS="--cpu_devices=2 ${SERVER_ARGS:-}"
start_server "$R/server.log" || { pack; exit 1; }
MEASURE=${MEASURE:---min_time=0.2 --timeout=2}
kernels=${KERNELS:-copy_h2d_pinned,copy_d2h_pinned,copy_h2d_pageable,copy_d2h_pageable,copy_bidir_pinned,copy_peer_ce,copy_peer_sm_pull,copy_peer_sm_push}
echo "kernels: $kernels" | tee -a "$R/command.txt"
for mode in hot cold; do
  echo "$B/gpubench sweep --kernels=$kernels --sizes=$sizes --mode=$mode $MEASURE --format=json" >> "$R/command.txt"
  timeout "${SWEEP_TIMEOUT:-150}" "$B/gpubench" sweep --target="$T" --kernels="$kernels" --sizes="$sizes" \
      --mode=$mode $MEASURE --format=json --progress=false > "$R/server_$mode.json" 2>> "$R/sweep.err"
  echo "sweep $mode rc=$?"; pack
done
# The peer kernels the other way round (device 1 -> device 0), hot, at the largest size.
largest=${sizes##*,}
for k in copy_peer_ce copy_peer_sm_pull; do
  [[ ,$kernels, == *,$k,* ]] || continue
  echo "$B/gpubench run $k --size=$largest --device=1 --peer_device=0 --mode=hot $MEASURE --format=json" >> "$R/command.txt"
  timeout 60 "$B/gpubench" run $k --target="$T" --size="$largest" --device=1 --peer_device=0 --mode=hot \
      $MEASURE --format=json > "$R/reverse_$k.json" 2>> "$R/sweep.err"
  echo "reverse $k rc=$?"
done
stop_server
pack
n_bytes=$(size_numbers "$sizes" 4)
echo "python3 bench/torch_copy.py $n_bytes" >> "$R/command.txt"
timeout 150 python3 bench/torch_copy.py $n_bytes > "$R/torch.csv" 2> "$R/torch.err"; echo "torch rc=$?"
torch_version "$R/machine.txt"
pack
if [[ -x $B/copy_gpu_test ]]; then
  echo "$B/copy_gpu_test" >> "$R/command.txt"
  timeout 120 "$B/copy_gpu_test" > "$R/copy_gpu_test.log" 2>&1; echo "copy_gpu_test rc=$?"
  tail -3 "$R/copy_gpu_test.log"
fi
python3 bench/copy_report.py "$R/torch.csv" "$R"/server_hot.json "$R"/server_cold.json "$R"/reverse_*.json > "$R/report.md" 2>&1
pack
cat "$R/report.md"
