#!/usr/bin/env bash
# Archived beside the results it produced (bench/results/2026-11-30-h200-final/nvml/); it ran from the repository root
# (with .bundle/ carried) as bench/run_device_nvml.sh. To run it again: bash bench/results/2026-11-30-h200-final/nvml/run_device_nvml.sh
# Issue #13's GPU proof (NVML and GPU sharing) in one device call of about two minutes; builds
# nothing. From .bundle/ (bench/make_bundle.sh of a CUDA build):
#  1. NVML facts: `gpubench devices` shows the kernel driver version (e.g. 580.x), the NVML index
#     and the PCI bus id in NVML's format; /metrics carries them as dcgm-exporter's labels
#     (UUID, gpu, pci_bus_id, modelName, Hostname) on gpubench_device_info.
#  2. Clock-event reasons during a run: a 256Mi hot add run's measurement.clockEventReasons.
#  3. The shared-node busy check: a server with --gpu_sharing=shared, and a second process holding
#     GPU 0 (a second gpubench_server measuring a long run there; also a torch process where
#     python3 has torch): an RPC run on GPU 0 answers FAILED_PRECONDITION naming the GPU and the
#     holder's PID, --force runs anyway, the scheduled plan's runs are skipped and counted in
#     gpubench_runs_skipped_total{reason="gpu_busy",source="schedule"}; once the holder exits the
#     same run succeeds.
# Everything lands in $OUT/nvml (and $OUT/nvml.tar.gz, refreshed after each step).
set -uo pipefail
OUT=${OUT:-/tmp/gpubench-out}
R=$OUT/nvml; mkdir -p "$R"
source bench/device_lib.sh
pack() { tar czf "$OUT/nvml.tar.gz" -C "$R" . ; }
say() { echo "== $*" | tee -a "$R/summary.txt"; }
machine_info "$R/machine.txt"; cat "$R/machine.txt"

# start NAME ARGS...: a server on free ports; sets ${NAME}_pid, ${NAME}_T, ${NAME}_M.
start() {
  local name=$1; shift
  rm -f "$R/$name.port" "$R/$name.mport"
  "$B/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 --port_file="$R/$name.port" \
    --metrics_listen=127.0.0.1:0 --metrics_port_file="$R/$name.mport" --node_name=h200-node \
    --max_elements=1073741824 "$@" > "$R/$name.log" 2>&1 &
  printf -v "${name}_pid" %s $!
  for _ in $(seq 1 150); do [[ -s $R/$name.port && -s $R/$name.mport ]] && break; sleep 0.1; done
  printf -v "${name}_T" %s "127.0.0.1:$(cat "$R/$name.port")"
  printf -v "${name}_M" %s "127.0.0.1:$(cat "$R/$name.mport")"
}

cat > "$R/plan.json" <<'JSON'
{"kernels": ["add_f32"], "sizes": ["1048576"], "deviceIndex": 0,
 "measurement": {"minSamples": 3, "minTimeSeconds": 0.01, "timeoutSeconds": 1}}
JSON
start shared --gpu_sharing=shared --schedule_plan="$R/plan.json" --schedule_interval_seconds=3
say "1. NVML facts (shared-node server pid $shared_pid)"
grep -i "nvml\|gpu sharing" "$R/shared.log" | tee -a "$R/summary.txt"
timeout 20 "$B/gpubench" devices --target="$shared_T" > "$R/devices.txt" 2>&1
grep -E "^device|uuid|pci bus id|nvml index|kernel driver|^  driver" "$R/devices.txt" | tee -a "$R/summary.txt"
timeout 10 curl -s "http://$shared_M/metrics" | grep '^gpubench_device_info' | tee "$R/device_info.prom" \
  | head -2 | tee -a "$R/summary.txt"
pack

say "2. clock-event reasons during a 256Mi hot run (GPU 0)"
timeout 60 "$B/gpubench" run add_f32_tuned --target="$shared_T" --size=256Mi --mode=hot --min_time=3 \
  --timeout=5 --format=json > "$R/run_hot.json" 2>&1
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); m = r["measurement"]
print("clockEventReasons:", m.get("clockEventReasons", []), "| unavailable:", m.get("clockEventsUnavailableReason", ""),
      "| SM clock", m.get("minSmClockHz", 0) / 1e6, "-", m.get("maxSmClockHz", 0) / 1e6, "MHz")' "$R/run_hot.json" \
  2>&1 | tee -a "$R/summary.txt"
pack

say "3a. GPU 0 idle: an RPC run succeeds"
timeout 30 "$B/gpubench" run add_f32 --target="$shared_T" --size=1Mi > "$R/run_idle.txt" 2>&1
echo "rc=$?" | tee -a "$R/summary.txt"

say "3b. a second process holds GPU 0 (another gpubench_server measuring a 25 s run)"
start holder --gpu_sharing=exclusive
timeout 40 "$B/gpubench" run add_f32 --target="$holder_T" --size=256Mi --mode=hot --min_time=25 \
  --max_noise=0.0000001 --timeout=25 --rpc_timeout_seconds=35 > "$R/holder_run.txt" 2>&1 &
holder_run=$!
sleep 4
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$R/nvidia-smi-apps.csv" 2>&1
echo "holder pid $holder_pid; nvidia-smi compute apps:" | tee -a "$R/summary.txt"
tee -a "$R/summary.txt" < "$R/nvidia-smi-apps.csv"
timeout 30 "$B/gpubench" run add_f32 --target="$shared_T" --size=1Mi > "$R/run_busy.txt" 2>&1
echo "without --force: rc=$? $(tr '\n' ' ' < "$R/run_busy.txt" | cut -c1-400)" | tee -a "$R/summary.txt"
timeout 30 "$B/gpubench" run add_f32 --target="$shared_T" --size=1Mi --force > "$R/run_forced.txt" 2>&1
echo "with --force: rc=$? $(grep -m1 -i "verif" "$R/run_forced.txt")" | tee -a "$R/summary.txt"
sleep 4  # at least one scheduled pass while busy
timeout 10 curl -s "http://$shared_M/metrics" | grep '^gpubench_runs_skipped_total' | tee -a "$R/summary.txt"
grep "scheduled pass" "$R/shared.log" | tail -2 | tee -a "$R/summary.txt"
pack
wait "$holder_run"
kill -TERM "$holder_pid"; timeout 20 tail --pid="$holder_pid" -f /dev/null
say "3c. holder exited: the same RPC run succeeds again"
timeout 30 "$B/gpubench" run add_f32 --target="$shared_T" --size=1Mi > "$R/run_after.txt" 2>&1
echo "rc=$?" | tee -a "$R/summary.txt"
pack

if timeout 60 python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  say "3d. torch holds GPU 0 (allocates 1 GiB and spins 15 s)"
  python3 -c 'import torch, time, os
x = torch.empty(256 * 1024 * 1024, device="cuda:0"); print("torch pid", os.getpid(), flush=True)
t = time.time()
while time.time() - t < 15: x.add_(1); torch.cuda.synchronize()' > "$R/torch_holder.txt" 2>&1 &
  torch_pid=$!
  sleep 6
  timeout 30 "$B/gpubench" run add_f32 --target="$shared_T" --size=1Mi > "$R/run_torch_busy.txt" 2>&1
  echo "torch pid $torch_pid; without --force: rc=$? $(tr '\n' ' ' < "$R/run_torch_busy.txt" | cut -c1-300)" | tee -a "$R/summary.txt"
  wait "$torch_pid"
else
  say "3d. skipped: python3 has no CUDA torch"
fi
kill -TERM "$shared_pid"; timeout 40 tail --pid="$shared_pid" -f /dev/null
pack
cat "$R/summary.txt"
