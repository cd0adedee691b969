#!/usr/bin/env bash
# Session 6, call E: issue #15's "no loss of truth" item that session 5 left at -0.62%
# (add_f32x4 16Mi cold, v2 with v1's memset flush against v1's long default run): v1 (d8f0c84)
# and v2 servers both up, runs alternating v1, v2, ROUNDS times, at server defaults, so v1's own
# run-to-run spread is measured beside the difference. From a directory holding .bundle/ (v1's
# binaries in .bundle/v1/) and bench/:  OUT=$OUT [ROUNDS=4] bash run_device_callE.sh
set -uo pipefail
cd "$(dirname "$0")"
source bench/device_lib.sh
results_begin callE
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-150} ))
source bench/device_steps.sh
ROUNDS=${ROUNDS:-4}
K=${K:-add_f32x4}; N=${N:-16Mi}
cat BUILD_COMMIT >> "$R/machine.txt"
start_one() {  # DIR LOG [ENV...]: sets $server $T
  local dir=$1 log=$2; shift 2
  local port_file; port_file=$(mktemp); : > "$port_file"
  env "$@" "$dir/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file="$port_file" \
      --metrics_listen= > "$log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do [[ -s $port_file ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat "$port_file"); rm -f "$port_file"
}
start_one .bundle/v1 "$R/v1.log"; p1=$server; t1=$T
start_one "$B" "$R/v2.log" GPUBENCH_L2_FLUSH=memset; p2=$server; t2=$T
log "v1 $t1 v2(memset) $t2"
cmd "v1: gpubench run $K --size=$N --format=csv (v1's CLI and server, defaults); v2: GPUBENCH_L2_FLUSH=memset gpubench_server, gpubench run $K --size=$N --format=csv; alternating, $ROUNDS rounds"
for r in $(seq 1 "$ROUNDS"); do
  need 20 "round $r" || break
  timed "v1_$r" 20 .bundle/v1/gpubench run "$K" --size="$N" --target="$t1" --format=csv > "$R/v1_$r.csv" 2>> "$R/err.txt"
  timed "v2_$r" 10 "$B/gpubench" run "$K" --size="$N" --target="$t2" --format=csv > "$R/v2_$r.csv" 2>> "$R/err.txt"
  pack
done
server=$p1; stop_server; server=$p2; stop_server
python3 - "$R" <<'PY' | tee "$R/report.md"
import csv, glob, os, statistics, sys
R = sys.argv[1]
def med(side):
    out = []
    for p in sorted(glob.glob(os.path.join(R, f"{side}_*.csv"))):
        for r in csv.DictReader(open(p)):
            if r.get("median_seconds"):
                out.append((float(r["median_seconds"]) * 1e6, r.get("samples", "?")))
    return out
v1, v2 = med("v1"), med("v2")
print("| round | v1 µs (samples) | v2 memset µs (samples) | v2/v1 - 1 |\n|---|---|---|---|")
for i, (a, b) in enumerate(zip(v1, v2), 1):
    print(f"| {i} | {a[0]:.2f} ({a[1]}) | {b[0]:.2f} ({b[1]}) | {100 * (b[0] / a[0] - 1):+.2f}% |")
if v1 and v2:
    m1 = statistics.median(x for x, _ in v1); m2 = statistics.median(x for x, _ in v2)
    s1 = 100 * (max(x for x, _ in v1) / min(x for x, _ in v1) - 1)
    s2 = 100 * (max(x for x, _ in v2) / min(x for x, _ in v2) - 1)
    print(f"\nmedian of runs: v1 {m1:.2f} µs, v2 {m2:.2f} µs, v2/v1 - 1 = {100 * (m2 / m1 - 1):+.2f}%; "
          f"spread of v1's own runs {s1:.2f}%, of v2's {s2:.2f}%")
PY
pack
