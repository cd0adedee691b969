#!/usr/bin/env bash
# The bounded loopback load test, optionally under sanitizers:
#   scripts/loadtest.sh                 # release build in build/
#   scripts/loadtest.sh asan            # ASan+UBSan build in build-asan/ (CPU backend)
#   scripts/loadtest.sh tsan            # TSan build in build-tsan/ (CPU backend)
# Starts gpubench_server (CPU backend, 2 simulated devices, queue 16) on a free loopback port,
# runs 32 clients for 20 s (30% RunBenchmark, 70% cheap RPCs), SIGTERMs the server and checks it
# exited 0. Sanitizer reports fail the run (halt_on_error), the device workers' included: each
# process writes them to $tmp/<sanitizer>.<pid> (log_path). Results: bench/results/loadtest-*.md.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-release}
client_env=""
tmp=$(mktemp -d)
case $mode in
  release) dir=${BUILD_DIR:-build}; [ -x "$dir/loadtest" ] || scripts/build.sh ;;
  asan) dir=build-asan
        cmake -S . -B $dir -G Ninja -DGPUBENCH_ENABLE_CUDA=OFF -DGPUBENCH_SANITIZE=address,undefined >/dev/null
        cmake --build $dir -j"$(nproc)" --target gpubench_server loadtest
        # log_path: a worker's report would otherwise only be text in the server's log.
        export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:log_path=$tmp/asan
        export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$tmp/ubsan ;;
  tsan) dir=build-tsan
        cmake -S . -B $dir -G Ninja -DGPUBENCH_ENABLE_CUDA=OFF -DGPUBENCH_SANITIZE=thread >/dev/null
        cmake --build $dir -j"$(nproc)" --target gpubench_server loadtest
        # gRPC, Abseil and protobuf come uninstrumented from Debian: races inside them cannot be
        # judged, so only reports with a gpubench frame count (suppressions file).
        # log_path: the exit code shows the server's reports, not its workers' (they are stopped).
        export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$tmp/tsan"
        TSAN_OPTIONS+=" suppressions=$PWD/scripts/tsan.supp"
        # The load generator is only a client: TSan judges the server. (Client-side reports point
        # into gRPC's inlined headers over uninstrumented libgrpc synchronization.)
        client_env="TSAN_OPTIONS=report_bugs=0" ;;
  *) echo "usage: $0 [release|asan|tsan]"; exit 2 ;;
esac
"$dir/gpubench_server" --listen=127.0.0.1:0 --port_file="$tmp/port" --metrics_listen=127.0.0.1:0 \
    --backend=cpu --cpu_devices=2 --queue_capacity=16 --default_timeout_seconds=1 \
    > "$tmp/server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do [ -s "$tmp/port" ] && break; sleep 0.1; done
env ${client_env:-} "$dir/loadtest" --target="127.0.0.1:$(cat "$tmp/port")" --clients=32 --seconds=20 |
    tee "$tmp/report.txt"
kill -TERM $server
set +e; wait $server; rc=$?; set -e
echo "server exit code: $rc"
echo "server log and sanitizer reports: $tmp"
reports=$(find "$tmp" -name 'asan.*' -o -name 'ubsan.*' -o -name 'tsan.*')
if [ -n "$reports" ]; then
  for f in $reports; do echo "== $f"; head -60 "$f"; done
  exit 1
fi
if grep -qE "(ERROR|WARNING): (Address|Thread|Leak)Sanitizer|runtime error:" "$tmp/server.log"; then
  grep -E -A20 "Sanitizer|runtime error" "$tmp/server.log" | head -60
  exit 1
fi
[ "$rc" -eq 0 ]
