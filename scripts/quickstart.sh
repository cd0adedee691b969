#!/usr/bin/env bash
# The README's main command: installs dependencies, builds, starts gpubench_server (CUDA backend
# when a GPU is present, CPU otherwise) and runs a first benchmark through the CLI. The server
# keeps running in the foreground afterwards; Ctrl-C stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# The service's binaries only: no tests, no bench/ tools (those compile CUDA code for every
# architecture and are built by scripts/test.sh or by name).
GPUBENCH_TARGETS="gpubench_server gpubench gpubench_worker?" \
  scripts/build.sh -DGPUBENCH_BUILD_TESTS=OFF -DGPUBENCH_BUILD_BENCH=OFF
bin=${BUILD_DIR:-build}
listen=${GPUBENCH_LISTEN:-127.0.0.1:50051}
"$bin/gpubench_server" --listen="$listen" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server' EXIT INT TERM
target=${listen/0.0.0.0/127.0.0.1}
for _ in $(seq 1 100); do
  "$bin/gpubench" devices --target="$target" --rpc_timeout_seconds=1 >/dev/null 2>&1 && break
  sleep 0.1
done
"$bin/gpubench" devices --target="$target"
echo
"$bin/gpubench" run add_f32x4 --size=16Mi --target="$target"
echo
echo "gpubench_server is serving on $listen (pid $server). Try:"
echo "  $bin/gpubench sweep --target=$target --kernels=add_f16,add_f16x8_pack --sizes=1Mi,16Mi"
echo "Ctrl-C to stop."
wait $server
