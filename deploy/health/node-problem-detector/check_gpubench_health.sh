#!/bin/sh
# node-problem-detector custom plugin: the node's gpubench health verdict (docs/health.md).
# NPD's plugin protocol is gpubench health's own: exit 0 OK (PASS), 1 NonOK (DEGRADED or FAIL),
# 2 Unknown (UNKNOWN); the first line of stdout is the condition's message (NPD keeps 80 bytes
# by default: the summary line comes first). An unreachable server (gpubench exits 3 or 4) is
# Unknown, never NonOK: a node is not cordoned because its benchmark pod restarts.
GPUBENCH=${GPUBENCH:-/usr/local/bin/gpubench}
TARGET=${GPUBENCH_TARGET:-127.0.0.1:50051}
out=$("$GPUBENCH" health --target="$TARGET" --rpc_timeout_seconds=10 2>&1)
rc=$?
printf '%s\n' "$out" | head -n 1
case $rc in
  0) exit 0 ;;
  1) exit 1 ;;
  *) exit 2 ;;
esac
