#!/usr/bin/env bash
# Runs one benchmark suite (a plan file of bench/suites/) against a gpubench server and writes one
# result file: the gpubench.v1.FleetReport of `gpubench fleet` (rows with node, GPU model, UUID,
# driver, kernel, size, mode, median and rate), so results compare through fleet's own baseline
# and regression report (docs/fleet.md) instead of a parser per experiment.
#
#   bench/run_suite.sh SUITE [REPORT] [-- FLEET_FLAGS...]
#     SUITE   a name in bench/suites (add, copies, gemm, latency, health) or a plan file's path
#     REPORT  where the FleetReport JSON goes (default: SUITE-<UTC date>.json here)
#     FLEET_FLAGS go to `gpubench fleet`, e.g. --baseline=old.json --regression_threshold=0.05
#
# TARGET=host:port uses a running server; without it the script starts
# $BUILD_DIR/gpubench_server (BUILD_DIR default build) on a free loopback port with
# SERVER_FLAGS (e.g. "--backend=cpu"), and stops it afterwards. Exit status: fleet's (0, 1 when a
# run failed, 5 on a regression against --baseline).
set -euo pipefail
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -h && $1 != --help ]] || usage
suite=$1
shift
report=
if [[ $# -gt 0 && $1 != -- ]]; then report=$1; shift; fi
[[ $# -eq 0 || $1 == -- ]] || usage
[[ $# -gt 0 ]] && shift
here=$(cd "$(dirname "$0")" && pwd)
plan=$suite
[[ -f $plan ]] || plan=$here/suites/$suite.json
[[ -f $plan ]] || { echo "run_suite: no suite $suite (bench/suites: $(cd "$here/suites" && ls | sed 's/\.json$//' | paste -sd' '))" >&2; exit 2; }
name=$(basename "$plan" .json)
report=${report:-$name-$(date -u +%Y-%m-%d).json}
bin=${BUILD_DIR:-build}
cli=$bin/gpubench

target=${TARGET:-}
server=
work=$(mktemp -d)
cleanup() {
  if [[ -n $server ]]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
if [[ -z $target ]]; then
  read -ra server_flags <<< "${SERVER_FLAGS:-}"
  "$bin/gpubench_server" --listen=127.0.0.1:0 --port_file="$work/port" --metrics_listen= \
      "${server_flags[@]}" > "$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 300); do
    [[ -s $work/port ]] && break
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
  done
  [[ -s $work/port ]] || { echo "run_suite: the server did not start" >&2; exit 1; }
  target=127.0.0.1:$(cat "$work/port")
fi

command=("$cli" fleet --plan="$plan" --targets="$target" --report_file="$report" --progress=false "$@")
echo "suite $name: ${command[*]}" >&2
status=0
"${command[@]}" || status=$?
echo "suite $name: report $report (exit $status)" >&2
exit "$status"
