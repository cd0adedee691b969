#!/usr/bin/env bash
# Session 5, call 6: add_*_l2keep_pdl (programmatic dependent launch) against add_*_l2keep, 16Mi
# hot, 4 rounds alternating the order, default placement and the 34 MiB pad; 1Mi/256Mi hot and
# 16Mi cold once each (no regression); torch.add at 16Mi hot in the same call; the GPU tests of
# the new variants first.
set -uo pipefail
cp .dev/lead/BUILD_COMMIT .
export BUNDLE=$PWD/.dev/lead/.bundle
S0=$(date +%s)
el() { echo $(( $(date +%s) - S0 )); }
source bench/device_lib.sh
timeout 60 "$B/gpu_test" --gtest_filter='*l2keep_pdl*' > "$OUT/gpu_test.log" 2>&1; echo "gpu_test rc=$? at $(el) s"
grep -E '^\[  (PASSED|FAILED)|^\[  SKIPPED \] [0-9]' "$OUT/gpu_test.log"; grep -E '^\[  FAILED' "$OUT/gpu_test.log" | head
P=$OUT/pdl; mkdir -p "$P"; : > "$P/port"
"$B/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file="$P/port" --metrics_listen= > "$P/server.log" 2>&1 &
spid=$!
for _ in $(seq 1 300); do [[ -s $P/port ]] && break; sleep 0.1; done
T=127.0.0.1:$(cat "$P/port")
r() { local name=$1; shift; timeout 30 "$B/gpubench" run "$@" --target="$T" --format=json > "$P/$name.json" 2>> "$P/err.txt" || echo "$name rc=$?"; }
for i in 1 2 3 4; do
  for d in f16 bf16; do
    cfgs="l2keep pdl pdlpad"; (( i % 2 == 0 )) && cfgs="pdlpad pdl l2keep"
    for c in $cfgs; do
      case $c in
        l2keep) r "${d}_16Mi_hot_l2keep_r$i" add_${d}_l2keep --size=16Mi --mode=hot ;;
        pdl) r "${d}_16Mi_hot_pdl_r$i" add_${d}_l2keep_pdl --size=16Mi --mode=hot ;;
        pdlpad) r "${d}_16Mi_hot_pdlpad_r$i" add_${d}_l2keep_pdl --size=16Mi --mode=hot --placement_pad=34Mi ;;
      esac
    done
  done
done
echo "16Mi rounds done at $(el) s"
for k in add_f16_l2keep add_f16_l2keep_pdl add_f32_l2keep add_f32_l2keep_pdl; do
  r "${k}_1Mi_hot" $k --size=1Mi --mode=hot
  r "${k}_256Mi_hot" $k --size=256Mi --mode=hot
  r "${k}_16Mi_cold" $k --size=16Mi --mode=cold
done
echo "other sizes done at $(el) s"
kill -TERM $spid
timeout 60 python3 bench/torch_add.py 16777216 --dtypes=f16,bf16 --modes=hot > "$P/torch.csv" 2> "$P/torch.err"; echo "torch rc=$? at $(el) s"
cat "$P/torch.csv"
python3 - "$P" <<'PY'
import json, os, statistics, sys
d = sys.argv[1]; got = {}
for f in sorted(os.listdir(d)):
    if not f.endswith('.json'): continue
    name = f[:-5]
    try:
        j = json.load(open(os.path.join(d, f))); t = float(j['timing']['medianSeconds'])
        n = int(j['request']['elements']); es = 4 if j['request']['dtype'] == 'f32' else 2
    except Exception as e:
        print('bad', f, e); continue
    key = name.rsplit('_r', 1)[0] if '_r' in name[-3:] else name
    got.setdefault(key, []).append((t * 1e6, 3 * n * es / t / 1e12))
print('| item | runs | median us | TB/s median | TB/s min-max |')
print('|---|---|---|---|---|')
for k, v in sorted(got.items()):
    us = [a for a, _ in v]; tb = [b for _, b in v]
    print(f'| {k} | {len(v)} | {statistics.median(us):.2f} | {statistics.median(tb):.3f} | {min(tb):.3f}-{max(tb):.3f} |')
PY
tar czf "$OUT/pdl.tar.gz" -C "$OUT" pdl && rm -rf "$P"
echo "total $(el) s"
