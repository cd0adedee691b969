#!/usr/bin/env bash
# CI smoke test of bench/run_device_l2keep.sh (issue #19's 16Mi l2keep call) on the CPU backend:
# three servers (placement pads) in the order A B B A, every dtype x mode x timer verified in both
# rounds, the missing probe and torch skipped with a line, and the report table printed.
#   run_device_l2keep_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$(dirname "$0")/smoke_lib.sh"
smoke_begin "$build"
# A stand-in for the CUDA-only bench/l2_probe: its CSV format, the variants its filter selects.
cat > "$work/bundle/bin/l2_probe" <<'PROBE'
#!/usr/bin/env bash
echo "variant,elements,mode,median_us,tb_per_s,check"
for v in f16_keep25_768x1 f32_keep25_768x1 bf16_keep25_768x1; do
  [[ $v == *"$L2_PROBE_FILTER"* ]] || continue
  echo "$v,$1,hot,1.000,0.001,ok"; echo "$v,$1,cold,2.000,0.001,ok"
  echo "$v ${L2_PROBE_ALLOC_BYTES:-default}" >> "$(dirname "$0")/probe_calls.txt"
done
PROBE
chmod +x "$work/bundle/bin/l2_probe"
cd "$src"
OUT=$work/out BUNDLE=$work/bundle BACKEND=cpu SIZE=1Ki BUDGET_S=240 \
  RUN_ARGS="--min_time=0.01 --timeout=0.3" bash bench/run_device_l2keep.sh > "$work/stdout" 2>&1
R=$work/out/l2keep
fail() { echo "FAIL: $*"; cat "$work/stdout"; exit 1; }
[[ -s $work/out/l2keep.tar.gz ]] || fail "no archive"
rows=$(grep -c "^| [a-z0-9]* | \(hot\|cold\) | server, pad .* | [0-9.]* | [0-9.]* |" "$R/report.md" || true)
# 3 pads x 2 timers x 3 dtypes x 2 modes, each with a median from both rounds.
[[ $rows -eq 36 ]] || fail "$rows server rows with both rounds, expected 36"
! grep -q "^Problems" "$R/report.md" || fail "problems: $(sed -n '/^Problems/,$p' "$R/report.md")"
probe_rows=$(grep -c "^| [a-z0-9]* | \(hot\|cold\) | l2_probe keep25_768x1 .* | [0-9.]* | [0-9.]* |" "$R/report.md" || true)
[[ $probe_rows -eq 12 ]] || fail "$probe_rows probe rows with both rounds, expected 12 (default and exact buffers)"
calls=$(sort "$work/bundle/bin/probe_calls.txt" | uniq -c | awk '{print $1, $2, $3}' | tr '\n' ';')
[[ $calls == "2 bf16_keep25_768x1 2048;2 bf16_keep25_768x1 default;2 f16_keep25_768x1 2048;2 f16_keep25_768x1 default;2 f32_keep25_768x1 4096;2 f32_keep25_768x1 default;" ]] ||
  fail "probe calls: $calls"
grep -q "| f16 | hot | server, pad 0, default timer | .* | 0\.[0-9]* | - |$" "$R/report.md" ||
  fail "no ratio to the probe in the server rows"
grep -q "torch_r1 rc=" "$R/steps.txt" || fail "torch.add was not tried"
order=$(grep -o "^server_pad[0-9]*_default_f16_hot_r[12]" "$R/steps.txt" | tr '\n' ' ')
[[ $order == "server_pad0_default_f16_hot_r1 server_pad2097152_default_f16_hot_r1 server_pad33554432_default_f16_hot_r1 server_pad33554432_default_f16_hot_r2 server_pad2097152_default_f16_hot_r2 server_pad0_default_f16_hot_r2 " ]] ||
  fail "servers not in the order A B B A: $order"
echo "ok: $rows server rows, order $order"
