# Sourced by the time-boxed device scripts (bench/run_device_measure2.sh, run_device_measure3.sh):
# step logging and bounded steps. The script sets R (its results folder) and DEADLINE (epoch
# seconds) before calling these.
exec 3>&1
log() { echo "$*" >> "$R/steps.txt"; echo "$*" >&3; }
cmd() { echo "$*" >> "$R/commands.txt"; }  # the exact commands, for the results file
left() { echo $(( DEADLINE - $(date +%s) )); }
# need SECONDS NAME: true when at least SECONDS of the budget are left, else logs the skip.
need() { (( $(left) >= $1 )) && return 0; log "SKIPPED $2: $(left) s left, needs $1"; return 1; }
now() { date +%s.%N; }
# timed NAME LIMIT CMD...: runs CMD under timeout LIMIT (never past the deadline); logs rc, wall.
timed() {
  local name=$1 limit=$2 t0 rc; shift 2
  (( limit > $(left) )) && limit=$(left)
  (( limit < 1 )) && { log "$name SKIPPED: out of time"; return 124; }
  t0=$(now)
  timeout "$limit" "$@"; rc=$?
  log "$name rc=$rc wall_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}')"
  return $rc
}
descendants() {
  local child
  for child in $(awk -v parent="$1" '$4 == parent {print $1}' /proc/[0-9]*/stat 2>/dev/null); do
    echo "$child"; descendants "$child"
  done
}
# stop_tree PID: SIGTERM to the gpubench_server at or below PID (a profiler around it then writes
# its report), up to 60 s (bounded by the deadline) for PID to end, then SIGKILL. Never `wait`.
stop_tree() {
  local p=$1 q i
  for q in "$p" $(descendants "$p"); do
    [[ $(cat /proc/$q/comm 2>/dev/null) == gpubench_serve* ]] && kill -TERM "$q" 2>/dev/null
  done
  for i in $(seq 1 600); do
    kill -0 "$p" 2>/dev/null || return 0
    (( i % 10 == 0 && $(left) < 2 )) && break
    sleep 0.1
  done
  log "stop: $p still running; killing"
  for q in $(descendants "$p") "$p"; do kill -KILL "$q" 2>/dev/null; done
}
