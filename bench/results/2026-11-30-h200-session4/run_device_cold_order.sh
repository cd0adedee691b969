#!/usr/bin/env bash
# ARCHIVED (session 4, call 0, built from b5c073e): GPUBENCH_COLD_FLUSH_ORDER was removed after this A/B showed no difference.
# Where a cold sample's L2 flush runs (issues #15 and #19), A/B in one device call: two servers
# of the same bundle, one with the flush right before the timed launch (behind the blocking
# kernel: GPUBENCH_COLD_FLUSH_ORDER=adjacent, the default since 2026-11-30 session 4) and one with
# the order used until then (flush, blocking kernel, launch: before_hold). Runs alternate between
# the servers (ABBA by round), at the server's default measurement options with --timer=events;
# then torch.add cold (bench/torch_add.py, whose flush is adjacent too) in the same call.
# From a directory holding .bundle/ (bench/make_bundle.sh BUILD_DIR) and bench/:
#   OUT=$OUT bash bench/run_device_cold_order.sh
# KERNELS, SIZES, ROUNDS, BUDGET_S (default 150 s) adjust it. Raw JSON and report.md are packed
# into $OUT/cold_order.tar.gz after every step; the report is printed on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/device_lib.sh
results_begin cold_order
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-150} ))
source bench/device_steps.sh  # log, cmd, need, timed
KERNELS=${KERNELS:-add_f32x4,add_f16x8_pack,add_f32_tuned,add_f32_l2keep,add_f16_l2keep,add_bf16_l2keep}
SIZES=${SIZES:-1Mi,16Mi,256Mi}
ROUNDS=${ROUNDS:-2}
[[ -f BUILD_COMMIT ]] && echo "bundle built from: $(cat BUILD_COMMIT)" >> "$R/machine.txt"

declare -A target pid
for order in adjacent before_hold; do
  export GPUBENCH_COLD_FLUSH_ORDER=$order
  start_server "$R/server_$order.log" || exit 1
  target[$order]=$T; pid[$order]=$server
done
unset GPUBENCH_COLD_FLUSH_ORDER
cmd "gpubench run K --size=N --timer=events --format=json (cold, server defaults; K in $KERNELS, N in $SIZES; servers with GPUBENCH_COLD_FLUSH_ORDER=adjacent and =before_hold, alternating ABBA over $ROUNDS rounds)"
for round in $(seq 1 "$ROUNDS"); do
  orders="adjacent before_hold"; (( round % 2 == 0 )) && orders="before_hold adjacent"
  for k in ${KERNELS//,/ }; do
    for n in ${SIZES//,/ }; do
      need 10 "round $round $k $n" || break 3
      for order in $orders; do
        timed "${order}_${k}_${n}_r$round" 30 "$B/gpubench" run "$k" --size="$n" --timer=events \
            --target="${target[$order]}" --format=json > "$R/${order}_${k}_${n}_r$round.json" \
            2>> "$R/err.txt"
      done
    done
  done
  pack
done
for order in adjacent before_hold; do server=${pid[$order]}; stop_server; done

if need 30 torch; then
  torch_version "$R/machine.txt"
  cmd "python3 bench/torch_add.py $(size_numbers "$SIZES") --dtypes=f32,f16,bf16 --modes=cold"
  timed torch 60 python3 bench/torch_add.py $(size_numbers "$SIZES") --dtypes=f32,f16,bf16 \
      --modes=cold > "$R/torch.csv" 2>> "$R/err.txt"
fi

timeout 30 python3 - "$R" > "$R/report.md" 2>> "$R/err.txt" <<'EOF'
import csv, glob, json, os, re, statistics, sys
r = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(r, "*_r[0-9]*.json")):
    m = re.match(r"(adjacent|before_hold)_(.+)_(\d+[KMG]i?)_r(\d+)\.json", os.path.basename(f))
    try:
        t = json.load(open(f))["timing"]["medianSeconds"]
    except Exception:
        continue
    runs.setdefault((m[2], m[3]), {}).setdefault(m[1], []).append(float(t))
torch = {}
if os.path.exists(os.path.join(r, "torch.csv")):
    for row in csv.reader(open(os.path.join(r, "torch.csv"))):
        if len(row) >= 5 and row[2] == "cold":
            torch[(row[0], int(row[1]))] = float(row[4])
unit = {"Ki": 1 << 10, "Mi": 1 << 20, "K": 1000, "M": 10**6}
print("| kernel | N | adjacent (us, rounds) | before_hold (us, rounds) | adjacent / before_hold | torch.add cold (us) | torch / adjacent |")
print("|---|---|---|---|---|---|---|")
for (k, n), v in sorted(runs.items()):
    a, b = v.get("adjacent", []), v.get("before_hold", [])
    fmt = lambda xs: " / ".join(f"{x * 1e6:.2f}" for x in xs) or "-"
    ratio = f"{statistics.mean(a) / statistics.mean(b):.4f}" if a and b else "-"
    dtype = next((d for d in ("bf16", "f16", "f32") if f"_{d}" in k), "f32")
    num = int(re.match(r"\d+", n)[0]) * unit[re.sub(r"\d+", "", n)]
    t = torch.get((f"torch_add_{dtype}", num))
    tr = f"{t / statistics.mean(a):.3f}" if t and a else "-"
    print(f"| {k} | {n} | {fmt(a)} | {fmt(b)} | {ratio} | {t * 1e6:.2f} | {tr} |" if t else
          f"| {k} | {n} | {fmt(a)} | {fmt(b)} | {ratio} | - | - |")
print()
print("torch.csv rows:", len(torch))
EOF
pack
cat "$R/report.md"
