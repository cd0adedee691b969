#!/usr/bin/env bash
# HTTP/2 rapid reset against gpubench_server, directly or through a proxy, with a raw-frame
# flooder that never reads (bench/h2flood): the server's peak memory, the normal client's calls,
# whether the server survived. Loopback only. Figures: bench/results/loadtest-cpu.md.
#   bench/rapid_reset.sh BUILD_DIR direct|nginx|haproxy CONNECTIONS SECONDS [MEMORY_LIMIT_BYTES] [server flags...]
# MEMORY_LIMIT_BYTES (0: none) puts the server in a new cgroup v1 memory group under this
# process's (root; cgroup v1 as on the CI machines), so a flood that would take the host's memory
# is OOM-killed at that size instead.
set -uo pipefail
build=$1 mode=$2 connections=$3 seconds=$4 limit=${5:-0}
shift 5 2>/dev/null || shift $#
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cleanup() {
  [ -n "${client_pid:-}" ] && kill "$client_pid" 2>/dev/null
  [ -n "${proxy_pid:-}" ] && kill "$proxy_pid" 2>/dev/null
  [ -n "${server_pid:-}" ] && kill -9 "$server_pid" 2>/dev/null
  wait 2>/dev/null
  [ -n "${group:-}" ] && rmdir "$group" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

launch=()
if [ "$limit" != 0 ]; then
  self=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
  group=/sys/fs/cgroup/memory${self%/}/gpubench_rapid_reset_$$
  mkdir "$group" && echo "$limit" > "$group/memory.limit_in_bytes" || exit 1
  launch=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group")
fi
"${launch[@]}" "$build/gpubench_server" --backend=cpu --listen=127.0.0.1:0 \
  --port_file="$tmp/port" --metrics_listen= "$@" > "$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
server_port=$(cat "$tmp/port")
target=127.0.0.1:$server_port
case $mode in
  direct) ;;
  nginx)
    port=$(free_port)
    sed -e "s|listen 50051|listen 127.0.0.1:$port|" -e "s|127.0.0.1:50052|127.0.0.1:$server_port|" \
        -e "s|/tmp/|$tmp/|g" "$src/deploy/kubernetes/components/h2-proxy/nginx.conf" > "$tmp/nginx.conf"
    /usr/sbin/nginx -p "$tmp" -c "$tmp/nginx.conf" -g 'daemon off;' 2> "$tmp/proxy.log" &
    proxy_pid=$! target=127.0.0.1:$port ;;
  haproxy)
    port=$(free_port)
    cat > "$tmp/haproxy.cfg" <<EOF
global
  maxconn 4096
  tune.h2.max-concurrent-streams 100
defaults
  mode http
  timeout connect 5s
  timeout client 1h
  timeout server 1h
frontend grpc
  bind 127.0.0.1:$port proto h2
  default_backend gpubench
backend gpubench
  server s1 127.0.0.1:$server_port proto h2
EOF
    /usr/sbin/haproxy -db -f "$tmp/haproxy.cfg" 2> "$tmp/proxy.log" &
    proxy_pid=$! target=127.0.0.1:$port ;;
  *) echo "mode: direct, nginx or haproxy" >&2; exit 2 ;;
esac
sleep 1
# The normal client: ListKernels every 200 ms through the same address, for the flood's length.
(
  ok=0 failed=0
  end=$((SECONDS + ${seconds%.*} + 2))
  while [ $SECONDS -lt $end ]; do
    if timeout 5 "$build/gpubench" kernels --target="$target" --rpc_timeout_seconds=4 >/dev/null 2>&1
    then ok=$((ok + 1)); else failed=$((failed + 1)); fi
    sleep 0.2
  done
  echo "$ok $failed" > "$tmp/client"
) &
client_pid=$!
flood=$("$build/h2flood" --target="$target" --connections="$connections" --seconds="$seconds" \
        --settle_seconds=5 --watch_pid="$server_pid")
wait "$client_pid"; client_pid=
read -r ok failed < "$tmp/client"
alive=yes; kill -0 "$server_pid" 2>/dev/null || alive="no ($(tail -1 "$tmp/server.log"))"
oom=""
[ -n "${group:-}" ] && oom=", \"cgroup_oom_kills\": $(awk '/oom_kill /{print $2}' "$group/memory.oom_control" 2>/dev/null || echo '?')"
proxy_rss=""
if [ -n "${proxy_pid:-}" ]; then  # the proxy's processes: nginx's master and worker
  pids="$proxy_pid $(cat /proc/$proxy_pid/task/$proxy_pid/children 2>/dev/null)"
  proxy_rss=", \"proxy_rss_after_bytes\": $(for p in $pids; do awk '/VmRSS/{print $2*1024}' /proc/$p/status; done | awk '{s+=$1} END {print s+0}')"
fi
echo "{\"mode\": \"$mode\", \"memory_limit_bytes\": $limit, \"flood\": $flood, \"normal_calls_ok\": $ok, \"normal_calls_failed\": $failed, \"server_alive\": \"$alive\"$oom$proxy_rss}"
