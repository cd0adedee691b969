#!/usr/bin/env bash
# Issue #19's goal table as ROUNDS alternating rounds in one device call, so that the rows at the
# edge (ratios within ~1% of 1.00, 256Mi near 92%) are decided by the median of per-round ratios
# and their spread, not by one sample of each side: session 5 measured the same code twice
# (bench/results/2026-11-30-h200-session5.md, calls 5 and 7) and those rows moved 0.4-3.1%
# between calls. Builds nothing. From a directory holding .bundle/ and bench/:
#   OUT=$OUT [ROUNDS=3] [SIZES=1Mi,16Mi,256Mi] bash bench/run_device_goal_rounds.sh
# Each round: the server's sweep of KERNELS (cold, then hot) and bench/torch_add.py at SIZES;
# odd rounds run the server first, even rounds torch first. A round is started only when
# ROUND_S (default 170) of BUDGET_S (default 540) are left. Round r lands in $R/round$r/
# (server.csv, torch.csv); bench/goal_rounds_report.py DIR prints the table (report.md).
# BACKEND=cpu smoke-tests it without a GPU (torch is skipped when it has no CUDA).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh  # BUNDLE, LD_LIBRARY_PATH, B, BACKEND, start_server, size_numbers
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-1Mi,16Mi,256Mi}
MEASURE=${MEASURE:---min_time=0.05 --timeout=0.8 --timer=events}
# The contenders of session 6's call D (bench/results/2026-11-30-h200-session6.md): each row's
# best variant there (the bulk_pdl kernels for 256Mi), the l2keep_pdl ones, CUB.
# torch.add runs on a non-blocking stream from torch's pool, the kind the server times on
# (bench/torch_add.py --stream; session 7: the 1Mi cold event window differs by up to 64 ns between
# stream instances, for both sides alike), and again at TORCH_DEFAULT_STREAM_SIZES (element
# counts, comma-separated; empty: skipped) on the legacy default stream, a plain program's.
TORCH_ARGS=${TORCH_ARGS---stream=nonblocking}
TORCH_DEFAULT_STREAM_SIZES=${TORCH_DEFAULT_STREAM_SIZES-1048576}
KERNELS=${KERNELS:-add_f32_tuned,add_f32x4,add_f32_bulk_pdl,add_f32_l2keep_pdl,add_f16_tuned,add_f16_l2keep_pdl,add_f16_bulk_pdl,add_bf16_tuned,add_bf16_l2keep_pdl,add_bf16_bulk_pdl,cub_add_f32,cub_add_f16,cub_add_bf16}
results_begin goal_rounds "${WORK:-}"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-540} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
cat "$R/machine.txt"
HAVE_TORCH=0
timeout 60 python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && HAVE_TORCH=1
((HAVE_TORCH)) && torch_version "$R/machine.txt"
start_server "$R/server.log" || { pack; exit 1; }
n_sizes=$(size_numbers "$SIZES")
{ echo "rounds: $ROUNDS (odd: server first; even: torch first)"
  echo "$B/gpubench sweep --kernels=$KERNELS --sizes=$SIZES --mode=cold|hot $MEASURE --format=csv --progress=false"
  echo "python3 bench/torch_add.py $n_sizes --modes=cold,hot $TORCH_ARGS"
  [[ -n $TORCH_DEFAULT_STREAM_SIZES ]] &&
    echo "python3 bench/torch_add.py ${TORCH_DEFAULT_STREAM_SIZES//,/ } --modes=cold,hot --stream=default"
} > "$R/command.txt"
server_round() {  # DIR
  local mode
  for mode in cold hot; do
    timeout "${SWEEP_TIMEOUT:-120}" "$B/gpubench" sweep --target="$T" --kernels="$KERNELS" \
        --sizes="$SIZES" --mode=$mode $MEASURE --format=csv --progress=false >> "$1/server.csv" \
        2>> "$1/sweep.err"
    echo "  sweep $mode rc=$? ($(left) s left)"
  done
}
torch_round() {  # DIR
  ((HAVE_TORCH)) || { echo "  torch skipped: no torch with CUDA"; return 0; }
  timeout "${TORCH_TIMEOUT:-90}" python3 bench/torch_add.py $n_sizes --modes=cold,hot $TORCH_ARGS \
      > "$1/torch.csv" 2>> "$1/torch.err"
  echo "  torch rc=$? ($(left) s left)"
  if [[ -n $TORCH_DEFAULT_STREAM_SIZES ]]; then
    timeout 60 python3 bench/torch_add.py ${TORCH_DEFAULT_STREAM_SIZES//,/ } --modes=cold,hot \
        --stream=default > "$1/torch_default.csv" 2>> "$1/torch.err"
    echo "  torch (default stream) rc=$? ($(left) s left)"
  fi
}
for r in $(seq 1 "$ROUNDS"); do
  if (( $(left) < ${ROUND_S:-170} )); then echo "round $r skipped: $(left) s left"; break; fi
  d=$R/round$r; mkdir -p "$d"
  echo "round $r"
  if (( r % 2 )); then server_round "$d"; torch_round "$d"; else torch_round "$d"; server_round "$d"; fi
  pack
done
stop_server
python3 bench/goal_rounds_report.py "$R" > "$R/report.md" 2>> "$R/report.err"
pack
cat "$R/report.md"
