#!/usr/bin/env bash
# Issue #19: does rotating cold samples over buffer placements (--placements, new in session 7)
# make a small cold result repeatable from run to run, where each run's one allocation moved it by
# up to 9% (bench/results/2026-11-30-h200-session7.md, call 6)? One device call, steps time-boxed:
#   gpu_test  CudaTest.Placements*:CudaTest.StreamKind* (when .bundle/bin/gpu_test exists)
#   runs      RUNS rounds; each: every K:SIZE of CASES cold with --placements=1 and =P (default 8)
#             through one server (every run allocates anew), then bench/torch_add.py cold on a
#             non-blocking stream with --placements=1 and =P (a new process each time)
# From a directory holding .bundle/ and bench/:
#   OUT=$OUT [RUNS=5] [P=8] [BUDGET_S=200] bash bench/run_device_placements.sh
# Results: $OUT/placements.tar.gz (runs.csv, report.md). BACKEND=cpu smoke-tests the plumbing.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh
results_begin placements "${WORK:-}"
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-200} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
cat "$R/machine.txt"
P=${P:-8}
CASES=${CASES:-add_f16_tuned:1Mi add_bf16_tuned:1Mi add_f32_tuned:1Mi add_f32x4:16Mi}
TORCH_SIZES=${TORCH_SIZES:-1048576 16777216}
HAVE_TORCH=0
timeout 60 python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && HAVE_TORCH=1
((HAVE_TORCH)) && torch_version "$R/machine.txt"
if [[ -x $B/gpu_test ]]; then
  ( cd "$B" && timeout 90 ./gpu_test --gtest_filter='CudaTest.Placements*:CudaTest.StreamKind*' ) \
      > "$R/gpu_test.txt" 2>&1
  echo "gpu_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$R/gpu_test.txt" | tr '\n' ' ')"
fi
start_server "$R/server.log" || { pack; exit 1; }
{ echo "server: gpubench run K --size=S --mode=cold --timer=events --min_time=0.05 --timeout=0.8 --placements=p --format=json, K:S in $CASES, p in 1 $P"
  echo "torch: python3 bench/torch_add.py $TORCH_SIZES --modes=cold --dtypes=f16,bf16,f32 --reps=300 --stream=nonblocking --placements=p"
} > "$R/command.txt"
echo "round,side,placements,kernel,elements,median_seconds" > "$R/runs.csv"
for r in $(seq 1 "${RUNS:-5}"); do
  (( $(left) < 25 )) && { echo "round $r skipped: $(left) s left"; break; }
  for p in 1 "$P"; do
    for c in $CASES; do
      IFS=: read -r k size <<< "$c"
      timeout 30 "$B/gpubench" run "$k" --target="$T" --size="$size" --mode=cold --timer=events \
          --min_time=0.05 --timeout=0.8 --placements="$p" --format=json > "$R/run.json" 2>> "$R/runs.err" &&
      echo "$r,gpubench,$p,$k,$(json_fields "$R/run.json" request.elements timing.medianSeconds)" \
          >> "$R/runs.csv"
    done
    if ((HAVE_TORCH)); then
      timeout 60 python3 bench/torch_add.py $TORCH_SIZES --modes=cold --dtypes=f16,bf16,f32 \
          --reps=300 --stream=nonblocking --placements="$p" 2>> "$R/runs.err" |
        awk -F, -v r="$r" -v p="$p" '{print r",torch,"p","$1","$2","$5}' >> "$R/runs.csv"
    fi
  done
  echo "round $r done ($(left) s left)"; pack
done
stop_server
python3 - "$R/runs.csv" > "$R/report.md" 2> "$R/report.err" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
med = defaultdict(dict)  # (side, p, dtype, n) -> round -> seconds
for r in rows:
    dtype = r["kernel"].split("_")[-1] if r["side"] == "torch" else r["kernel"].split("_")[1]
    dtype = dtype.replace("f32x4", "f32")
    med[(r["side"], int(r["placements"]), dtype, int(r["elements"]))][r["round"]] = float(r["median_seconds"])
print("| dtype | N | placements | gpubench µs: median (min–max over runs) | torch.add µs | torch / gpubench per round: median (min–max) |")
print("|---|---|---|---|---|---|")
for key in sorted(k for k in med if k[0] == "gpubench"):
    _, p, dtype, n = key
    ours, theirs = med[key], med.get(("torch", p, dtype, n), {})
    def cell(v):
        v = [x * 1e6 for x in v.values()]
        return f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f})" if v else "-"
    ratios = [theirs[r] / ours[r] for r in ours if r in theirs]
    rc = f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f})" if ratios else "-"
    print(f"| {dtype} | {n} | {p} | {cell(ours)} | {cell(theirs)} | {rc} |")
PY
pack
cat "$R/report.md"
