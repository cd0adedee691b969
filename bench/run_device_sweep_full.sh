#!/usr/bin/env bash
# Issue #15's sweep goal on the whole catalog, in one device call on `nvidia-h200-x2`: a
# default-option sweep of every add/copy variant of v1's catalog at 1Mi/16Mi/256Mi, cold and hot,
# by v1 (the server before measurement v2) and by this build, side by side. v1's sweep takes about
# 770 s (its cold 1Mi/16Mi items run to the 15 s timeout), more than one device command may run
# on one GPU, so the variants are split in two lanes, one per GPU, run at the same time; within a
# lane each variant is swept by v1 and then by v2 on the same GPU (both servers stay up, only one
# measures at a time). The sweep's time is the sum of the per-variant sweep wall times of both
# lanes. Builds nothing. From a directory holding .bundle/ (bench/make_bundle.sh; v1's two
# binaries in .bundle/v1/) and bench/:
#   OUT=$OUT bash bench/run_device_sweep_full.sh
# BUDGET_S (default 560) bounds the whole call; a variant is started only when the lane has
# NEED_S (default 55) left, so a short call still returns whole v1/v2 pairs. Results in $WORK
# (default /tmp/gpubench-sweep), packed into $OUT/sweep_full.tar.gz after every variant;
# bench/sweep_full_report.py DIR prints the tables. BACKEND=cpu smoke-tests it without a GPU
# (one lane).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh  # BUNDLE, LD_LIBRARY_PATH, B, BACKEND
OLD=${OLD:-$BUNDLE/v1}
OUT=${OUT:-/tmp/gpubench-out}
R=${WORK:-/tmp/gpubench-sweep}; rm -rf "$R"; mkdir -p "$R" "$OUT"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-560} ))
NEED_S=${NEED_S:-55}
SIZES=${SIZES:-1Mi,16Mi,256Mi}
source bench/device_steps.sh  # log, cmd, left, need, timed, stop_tree
pack() { tar czf "$OUT/sweep_full.tar.gz" -C "$R" . 2>/dev/null; }

# start_on GPU NAME BINDIR: a server of BINDIR on GPU (CUDA_VISIBLE_DEVICES), free port; prints
# "PID TARGET".
start_on() {
  local gpu=$1 name=$2 bin=$3 port_file=$R/$2.port
  : > "$port_file"
  CUDA_VISIBLE_DEVICES=$gpu "$bin/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 \
      --port_file="$port_file" --metrics_listen= --max_elements=1073741824 > "$R/$name.log" 2>&1 &
  local p=$!
  for _ in $(seq 1 600); do [[ -s $port_file ]] && break; sleep 0.1; done
  echo "$p 127.0.0.1:$(cat "$port_file")"
}

{ date -u +%FT%TZ
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  [[ -f BUILD_COMMIT ]] && echo "bundle (v2) built from: $(cat BUILD_COMMIT)"
  [[ -f $OLD/BUILD_COMMIT ]] && echo "v1 built from: $(cat "$OLD/BUILD_COMMIT")"
} > "$R/machine.txt" 2>&1
cat "$R/machine.txt"

# The variants: every add/copy variant of v1's catalog (v2 has them all, and more).
read -r p0 t0 <<< "$(start_on 0 list_v1 "$OLD")"
KERNELS=${KERNELS:-$("$B/gpubench" kernels --target="$t0" --format=csv |
    awk -F, 'NR > 1 && ($2 == "elementwise_add" || $2 == "copy") {print $1}' | paste -sd,)}
stop_tree "$p0"
[[ -z $KERNELS ]] && { log "no variants: v1's server did not answer (see list_v1.log)"; pack; exit 1; }
log "variants (v1's add/copy catalog): $KERNELS"
GPUS=2; [[ $BACKEND == cpu ]] && GPUS=1
cmd "per variant K and mode M, on the lane's GPU: v1/gpubench sweep --kernels=K --sizes=$SIZES --mode=M --format=csv --progress=false; then the same with this build's gpubench against this build's server (both at the server's defaults)"

# lane GPU K1,K2,...: v1 then v2 for each variant, on one GPU.
lane() {
  local gpu=$1 list=$2 k mode who bin p_old t_old p_new t_new
  read -r p_old t_old <<< "$(start_on "$gpu" "v1_gpu$gpu" "$OLD")"
  read -r p_new t_new <<< "$(start_on "$gpu" "v2_gpu$gpu" "$B")"
  log "lane $gpu: v1 $t_old (pid $p_old), v2 $t_new (pid $p_new): $list"
  for k in ${list//,/ }; do
    need "$NEED_S" "lane${gpu}_$k" || break
    for who in v1 v2; do
      if [[ $who == v1 ]]; then bin=$OLD; t=$t_old; else bin=$B; t=$t_new; fi
      for mode in cold hot; do
        timed "sweep gpu=$gpu $who $k $mode" 200 "$bin/gpubench" sweep --target="$t" --kernels="$k" \
            --sizes="$SIZES" --mode=$mode --format=csv --progress=false \
            > "$R/${who}_gpu${gpu}_${k}_$mode.csv" 2>> "$R/err_gpu$gpu.txt"
      done
    done
    pack
  done
  stop_tree "$p_old"; stop_tree "$p_new"
  log "lane $gpu done ($(left) s left)"
}

# Alternate the variants over the lanes (v1's cold items are ~15 s each whatever the variant).
IFS=, read -r -a all <<< "$KERNELS"
lists=("" "")
for i in "${!all[@]}"; do
  l=$(( i % GPUS )); lists[$l]+="${lists[$l]:+,}${all[$i]}"
done
for g in $(seq 0 $((GPUS - 1))); do lane "$g" "${lists[$g]}" & done
# Bounded: the lanes stop starting variants NEED_S before the deadline; then a last pack.
while (( $(left) > -30 )) && [[ -n $(jobs -rp) ]]; do sleep 1; done
for j in $(jobs -rp); do log "lane job $j still running at the deadline; killing"; kill -- "$j" 2>/dev/null; done
pkill -TERM -f "$B/gpubench_server|$OLD/gpubench_server" 2>/dev/null
timeout 30 python3 bench/sweep_full_report.py "$R" > "$R/report.md" 2>> "$R/err.txt"
pack
cat "$R/report.md"
