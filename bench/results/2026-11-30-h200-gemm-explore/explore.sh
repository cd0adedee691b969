#!/usr/bin/env bash
# gemm exploration (issue #17), one device call. Everything time-boxed; results in $OUT/explore.tar.gz.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
R=$OUT/explore; mkdir -p "$R"
pack() { tar czf "$OUT/explore.tar.gz" -C "$R" . ; }
lt=$(dirname "$(find /usr/local -name 'libcublasLt.so.13*' -not -path '*stubs*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$D:$lt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ date -u +%FT%TZ; echo "cublasLt dir: $lt"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,power.draw --format=csv
  timeout 30 python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"; which ncu; } > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
timeout 320 nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 200 > "$R/smi.csv" 2>&1 &
echo "== probe"; date -u +%T
timeout 110 "$D/gemm_lt_probe" 4096,8192 32 1.0 > "$R/probe.txt" 2>&1; echo "probe rc=$?"
grep -E "^fp8|^==|hot|#( 0| 1| 2)" "$R/probe.txt" | head -120
pack
echo "== torch (gpubench discipline, 2 s/case)"; date -u +%T
timeout 90 python3 "$D/torch_gemm.py" --seconds 2 --kernel_names > "$R/torch.csv" 2> "$R/torch.err"; echo "torch rc=$?"
cut -d, -f1-14 "$R/torch.csv"; tail -3 "$R/torch.err"
echo "== torch bf16 short windows (old discipline)"
timeout 40 python3 "$D/torch_gemm.py" --precisions bf16 --seconds 0.05 --batch 20 > "$R/torch_short.csv" 2>&1; cut -d, -f1-14 "$R/torch_short.csv"
pack
echo "== cublasLt log of torch"; date -u +%T
CUBLASLT_LOG_LEVEL=5 CUBLASLT_LOG_FILE=$R/ltlog_%i.txt CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=$R/cublaslog.txt timeout 60 python3 - > "$R/ltlog_stdout.txt" 2>&1 <<'PY'
import torch
torch.backends.cuda.matmul.allow_tf32 = True
for p in ["bf16", "f16", "tf32", "f8e4m3"]:
    for s in [4096, 8192]:
        a = torch.rand(s, s, device="cuda"); b = torch.rand(s, s, device="cuda")
        if p == "f8e4m3":
            sc = torch.tensor(0.125, device="cuda")
            torch._scaled_mm(a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn).t(), scale_a=sc, scale_b=sc, out_dtype=torch.bfloat16)
        else:
            dt = {"bf16": torch.bfloat16, "f16": torch.half, "tf32": torch.float}[p]
            torch.matmul(a.to(dt), b.to(dt).t())
        torch.cuda.synchronize(); print("done", p, s, flush=True)
PY
echo "ltlog rc=$?"; ls -la "$R" | grep -i log
grep -hoE "algo=\[[^]]*\]|algoId=[^ ]*|cublasLtMatmul\(|cublasGemmEx|cublasLtMatmulAlgoGetHeuristic" "$R"/ltlog_*.txt "$R"/cublaslog.txt 2>/dev/null | sort | uniq -c | head -40
pack
echo "== ncu bf16 8192: torch then probe"; date -u +%T
NCU="ncu --target-processes all -k regex:nvjet|gemm|xmma|cutlass --launch-count 1 --section SpeedOfLight --section LaunchStats --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active --csv"
timeout 60 $NCU --launch-skip 3 python3 -c "
import torch
a=torch.rand(8192,8192,device='cuda').mul_(2).sub_(1).bfloat16(); b=torch.rand(8192,8192,device='cuda').mul_(2).sub_(1).bfloat16()
for _ in range(6): torch.matmul(a,b.t())
torch.cuda.synchronize()" > "$R/ncu_torch_bf16_8192.csv" 2>&1; echo "ncu torch rc=$?"
PROBE_ONLY=bf16 timeout 60 $NCU --launch-skip 1 "$D/gemm_lt_probe" 8192 32 0 > "$R/ncu_probe_bf16_8192.csv" 2>&1; echo "ncu probe rc=$?"
for f in "$R"/ncu_*.csv; do echo "-- $f"; grep -E '"(Kernel Name|gpu__time_duration.sum|Duration|SM Frequency|Compute \(SM\) Throughput|sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active|sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active|Grid Size|Block Size|Cluster Size|Registers Per Thread)"' "$f" | awk -F'","' '{print $5" | "$(NF-2)" | "$(NF-1)" | "$NF}' | head -20; grep -m3 -iE "error|==ERR|==WARN" "$f"; done
pack
echo "== end"; date -u +%T
