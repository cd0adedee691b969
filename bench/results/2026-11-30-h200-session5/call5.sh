#!/usr/bin/env bash
# Session 5, call 5: the GPU tests of the final bundle; issue #19's goal table (as session 4's call C:
# every add family's best vs torch.add and CUB at 1Mi/16Mi/256Mi, cold and hot, events on both
# sides, one call); then the 16Mi hot rows with the per-request placement pad, alternating with the
# default placement, through the CLI flag.
set -uo pipefail
cp .dev/lead/BUILD_COMMIT .
export BUNDLE=$PWD/.dev/lead/.bundle
S0=$(date +%s)
el() { echo $(( $(date +%s) - S0 )); }
source bench/device_lib.sh
timeout 150 "$B/gpu_test" > "$OUT/gpu_test.log" 2>&1; echo "gpu_test rc=$? at $(el) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED)|tests ran' "$OUT/gpu_test.log" | tail -4
grep -E '^\[  FAILED' "$OUT/gpu_test.log" | head -10
KERNELS=add_f32_tuned,add_f32_l2keep,add_f32x4,add_f32_bulk,add_f16_tuned,add_f16_l2keep,add_f16_bulk,add_bf16_tuned,add_bf16_l2keep,add_bf16_bulk,cub_add_f32,cub_add_f16,cub_add_bf16 \
  MEASURE="--min_time=0.05 --timeout=0.8 --timer=events" EVENT_KERNELS="" SWEEP_TIMEOUT=70 OUT=$OUT \
  timeout 230 bash bench/run_device_add.sh 1Mi,16Mi,256Mi > "$OUT/add_stdout.txt" 2>&1; echo "add rc=$? at $(el) s"
# 16Mi hot, default placement vs --placement_pad=34Mi, 4 rounds alternating which goes first.
P=$OUT/pad; mkdir -p "$P"; : > "$P/port"
"$B/gpubench_server" --backend=cuda --listen=127.0.0.1:0 --port_file="$P/port" --metrics_listen= > "$P/server.log" 2>&1 &
spid=$!
for _ in $(seq 1 300); do [[ -s $P/port ]] && break; sleep 0.1; done
T=127.0.0.1:$(cat "$P/port")
for i in 1 2 3 4; do
  order="default pad"; (( i % 2 == 0 )) && order="pad default"
  for k in add_f16_l2keep add_bf16_l2keep cub_add_f16 cub_add_bf16; do
    for c in $order; do
      flag=; [[ $c == pad ]] && flag=--placement_pad=34Mi
      timeout 30 "$B/gpubench" run $k --size=16Mi --mode=hot $flag --target="$T" --format=json > "$P/${k}_${c}_r$i.json" 2>> "$P/err.txt"
    done
  done
  (( $(el) > 470 )) && break
done
echo "pad rounds done at $(el) s"
kill -TERM $spid
python3 - "$P" <<'PY'
import json, os, statistics, sys
d = sys.argv[1]; got = {}
for f in sorted(os.listdir(d)):
    if not f.endswith('.json'): continue
    k, c, r = f[:-5].rsplit('_', 2)
    try:
        j = json.load(open(os.path.join(d, f)))
        t = float(j['timing']['medianSeconds']); pad = j.get('request', {}).get('placementPadBytes', '0')
    except Exception as e:
        print('bad', f, e); continue
    got.setdefault((k, c), []).append((3 * 16777216 * 2 / t / 1e12, pad))
print('| kernel | placement | runs | TB/s median | min-max | echoed pad bytes |')
print('|---|---|---|---|---|---|')
for (k, c), v in sorted(got.items()):
    x = [a for a, _ in v]
    print(f'| {k} | {c} | {len(x)} | {statistics.median(x):.3f} | {min(x):.3f}-{max(x):.3f} | {v[0][1]} |')
PY
tar czf "$OUT/pad.tar.gz" -C "$OUT" pad && rm -rf "$P"
grep -A40 "Goal table" "$OUT/add_stdout.txt" | head -45
echo "total $(el) s"
