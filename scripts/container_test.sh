#!/usr/bin/env bash
# Builds the Dockerfile for real and runs the image, with no Docker daemon and no registry:
#  1. a Debian 12 base from Debian's archive (mmdebstrap --variant=minbase bookworm), imported with
#     buildah from scratch + add + commit, stands in for the nvidia/cuda base images;
#  2. buildah bud --isolation chroot --storage-driver vfs --pull=never builds the server image and
#     the slim client image; where the host has the CUDA toolkit it is mounted read-only at
#     /usr/local/cuda so the CUDA backend is compiled in the image too (one architecture);
#  3. buildah run starts the server image as the non-root user on a read-only root filesystem with
#     a bearer token; from the host: grpc.health.v1.Health/Check is SERVING, a verified benchmark
#     runs through the CLI, /metrics serves the run's series, and the image's own HEALTHCHECK passes
#     with the token given (and fails without it: the check is real);
#  4. both images carry the OCI labels (source, revision, version, licenses) of this checkout
#     (scripts/image_build_args.sh), and the server reports the same revision on /metrics.
# Prints the image sizes and the time of each step.
#   scripts/container_test.sh <build dir with gpubench and tests/grpc_health_check>
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${1:-${BUILD_DIR:-build}}" && pwd)
work=${CONTAINER_WORK_DIR:-$build/container}
mkdir -p "$work"
B=(buildah --storage-driver vfs)
base=localhost/gpubench-ci-base:bookworm
image=localhost/gpubench:ci
client_image=localhost/gpubench-client:ci
t0=$SECONDS
step() { echo "[container +$((SECONDS - t0))s] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

step "base image"
if ! "${B[@]}" inspect --type image "$base" >/dev/null 2>&1; then
  [ -s "$work/base.tar" ] || { mmdebstrap --variant=minbase --quiet bookworm "$work/base.tar.part" \
                               && mv "$work/base.tar.part" "$work/base.tar"; }
  ctr=$("${B[@]}" from scratch)
  "${B[@]}" add "$ctr" "$work/base.tar" /
  "${B[@]}" commit --quiet "$ctr" "$base" >/dev/null
  "${B[@]}" rm "$ctr" >/dev/null
fi

cuda=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=(--volume "$(readlink -f /usr/local/cuda):/usr/local/cuda:ro")
  step "host CUDA toolkit $(readlink -f /usr/local/cuda) mounted: the CUDA backend is built (sm_90)"
else
  step "no CUDA toolkit on the host: the image gets the CPU backend only"
fi
# The metadata arguments (version, git revision, source URL) as a release build passes them. A
# checkout without an origin remote gets a file:// source, so that the label check below can tell
# a passed argument from the Dockerfile's default.
git remote get-url origin >/dev/null 2>&1 || export GPUBENCH_SOURCE_URL=${GPUBENCH_SOURCE_URL:-file://$src}
mapfile -t meta < <(scripts/image_build_args.sh)
bud=("${B[@]}" bud --isolation chroot --pull=never --layers --format docker
     --build-arg "BUILD_IMAGE=$base" --build-arg "RUNTIME_IMAGE=$base"
     --build-arg "CLIENT_IMAGE=$base" --build-arg "CUDA_ARCHITECTURES=90" "${meta[@]}" "${cuda[@]}")
if [ "${CONTAINER_TEST_REUSE_IMAGES:-0}" = 1 ] && "${B[@]}" inspect --type image "$image" >/dev/null 2>&1 \
   && "${B[@]}" inspect --type image "$client_image" >/dev/null 2>&1; then
  step "CONTAINER_TEST_REUSE_IMAGES=1: running the images already built (no bud)"
else
step "buildah bud (server)"
"${bud[@]}" --target server -t "$image" "$src" > "$work/bud-server.log" 2>&1 \
  || { tail -40 "$work/bud-server.log"; fail "buildah bud --target server"; }
step "buildah bud (client)"
"${bud[@]}" --target client -t "$client_image" "$src" > "$work/bud-client.log" 2>&1 \
  || { tail -40 "$work/bud-client.log"; fail "buildah bud --target client"; }
grep -q "GPUBENCH_HAVE_CUDA\|CUDA backend ON" "$work/bud-server.log" && step "image build log: CUDA backend ON"
fi
# OCI labels: what image_build_args.sh derived from this checkout, on both images.
for img in "$image" "$client_image"; do
  "${B[@]}" inspect --type image "$img" | python3 -c 'import json, sys
labels = json.load(sys.stdin)["OCIv1"]["config"].get("Labels") or {}
want = dict(a.split("=", 1)[1].split("=", 1) for a in sys.argv[2:])
want = {"source": want["SOURCE_URL"], "revision": want["REVISION"], "version": want["VERSION"],
        "licenses": "Apache-2.0"}
got = {k: labels.get("org.opencontainers.image." + k) for k in want}
if got != want:
    sys.exit(f"FAIL: {sys.argv[1]} OCI labels {got}, expected {want}")
print(f"ok: {sys.argv[1]} OCI labels {got}")' "$img" "${meta[@]}" || fail "OCI labels of $img"
done
# The same values in the file the images carry (the step that keeps buildah's cache honest).
for img in "$image" "$client_image"; do
  c=$("${B[@]}" from --pull=never "$img")
  got=$(cat "$("${B[@]}" mount "$c")/usr/share/doc/gpubench/BUILD-INFO" 2>/dev/null || true)
  "${B[@]}" umount "$c" >/dev/null; "${B[@]}" rm "$c" >/dev/null
  for kv in "${meta[@]}"; do
    kv=${kv#--build-arg=}; k=${kv%%=*}; v=${kv#*=}
    k=$(printf '%s' "$k" | tr 'A-Z' 'a-z'); k=${k%_url}
    grep -qxF "$k=$v" <<<"$got" || fail "$img BUILD-INFO lacks $k=$v: $got"
  done
done
echo "ok: both images' BUILD-INFO matches their labels"
grep -q "Apache License" LICENSE && grep -q "Version 2.0" LICENSE || fail "LICENSE is not Apache-2.0"
"${B[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep -E "gpubench(-client)?:ci|gpubench-ci-base" \
  | sed 's/^/image size: /'

# --- run: non-root, read-only root filesystem, host network, bearer token -------------------
# buildah run --isolation chroot (podman's OCI runtime needs cgroups and rlimits that CI's sandbox
# refuses). The container's root is bind-mounted read-only first (only the runtime's mount points,
# /etc/hosts, /etc/resolv.conf, /etc/hostname and /run/.containerenv, are created before), and
# /tmp is a writable volume, as the DaemonSet's emptyDir. buildah 1.28 may crash while cleaning up
# the read-only root after the process exits, so exit codes are written to /tmp by the command.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
grpc_port=$(free_port)
metrics_port=$(free_port)
vol=$work/tmp
rm -rf "$vol" && mkdir -p "$vol" && chmod 1777 "$vol"
echo "ci-token-$RANDOM$RANDOM" > "$vol/token"
chmod 644 "$vol/token"
ctr=$("${B[@]}" from --pull=never "$image")
root=$("${B[@]}" mount "$ctr")
server_pid=""
# The server itself (a child of buildah run), found by its unique listen address.
stop_server() {
  local pid
  pid=$(pgrep -f -- "gpubench_server --listen=127.0.0.1:$grpc_port" || true)
  if [ -n "$pid" ]; then kill -TERM $pid 2>/dev/null || true; sleep 2; fi
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
cleanup() {
  stop_server
  umount "$root" 2>/dev/null || true
  "${B[@]}" umount "$ctr" >/dev/null 2>&1 || true
  "${B[@]}" rm "$ctr" >/dev/null 2>&1 || true
}
trap cleanup EXIT
touch "$root/etc/hosts" "$root/etc/resolv.conf" "$root/etc/hostname"
mkdir -p "$root/run" && touch "$root/run/.containerenv"
mount --bind "$root" "$root" && mount -o remount,bind,ro "$root"
run_in() { "${B[@]}" run --isolation chroot --user 10001:10001 --volume "$vol:/tmp" "$@"; }
step "run the server image: user 10001, read-only root, token on; gRPC :$grpc_port metrics :$metrics_port"
user=$("${B[@]}" inspect --format '{{.OCIv1.Config.User}}' "$image")
[ "$user" = "10001:10001" ] || fail "the image's user is $user, not 10001:10001"
run_in "$ctr" -- sh -c 'touch /usr/local/bin/x 2>/dev/null; echo $? > /tmp/rootfs.rc; id -u > /tmp/uid' \
  >/dev/null 2>&1 || true
[ "$(cat "$vol/rootfs.rc")" != 0 ] || fail "the root filesystem is writable"
echo "ok: runs as uid $(cat "$vol/uid") (image USER $user), root filesystem read-only"
run_in "$ctr" -- /usr/local/bin/gpubench_server --listen=127.0.0.1:$grpc_port \
  --metrics_listen=127.0.0.1:$metrics_port --backend=auto --token_file=/tmp/token \
  --default_min_time_seconds=0.05 > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 60); do
  "$build/tests/grpc_health_check" "127.0.0.1:$grpc_port" >/dev/null 2>&1 && break
  sleep 1
done
head -20 "$work/server.log"
health=$("$build/tests/grpc_health_check" "127.0.0.1:$grpc_port" gpubench.v1.Benchmark) \
  || fail "grpc.health.v1.Health/Check: $health"
echo "ok: grpc.health.v1.Health/Check gpubench.v1.Benchmark from the host: $health"
"$build/gpubench" run add_f32 --target="127.0.0.1:$grpc_port" --token_file="$vol/token" \
  --size=1Mi --format=json > "$work/run.json" || fail "gpubench run"
python3 - "$work/run.json" <<'PY' || fail "verified run"
import json, sys
r = json.load(open(sys.argv[1]))
r = r.get("result", r)
v = r["verification"]
assert v["requested"] and v["passed"], v
print(f"ok: verified run from the host: {r['request']['kernel']} n={r['request']['elements']} "
      f"backend={r['backend']} bandwidth={r['throughput']['bandwidthBytesPerSecond']:.3g} B/s")
PY
curl -sf "http://127.0.0.1:$metrics_port/metrics" > "$work/metrics.txt" || fail "/metrics"
grep -q '^gpubench_run_verification_passed{.*kernel="add_f32".*} 1' "$work/metrics.txt" \
  || fail "/metrics lacks the run"
echo "ok: /metrics serves the run ($(grep -c '^gpubench_' "$work/metrics.txt") gpubench samples)"
# The run was measured in the device's worker process, a child of the server in the container.
# (buildah's own command line names the server too: look under every process that matches.)
server_proc=""
for p in $(pgrep -f -- "gpubench_server --listen=127.0.0.1:$grpc_port" || true); do
  if pgrep -P "$p" -x gpubench_worker > /dev/null; then server_proc=$p; fi
done
[ -n "$server_proc" ] || fail "no gpubench_worker under the server"
grep -q '^gpubench_device_up{.*} 1' "$work/metrics.txt" || fail "/metrics lacks gpubench_device_up"
echo "ok: the device's gpubench_worker runs under the server (pid $server_proc)"
# The image's binaries know the commit they were built from (.git is not in the build context).
# The revision the images were built from (a commit made while the test ran moves HEAD on).
rev=$(printf '%s\n' "${meta[@]}" | sed -n 's/^--build-arg=REVISION=//p')
grep -q "^gpubench_build_info{.*revision=\"${rev:0:12}\"" "$work/metrics.txt" \
  || fail "gpubench_build_info lacks revision ${rev:0:12}: $(grep '^gpubench_build_info' "$work/metrics.txt")"
echo "ok: gpubench_build_info carries the image's revision ${rev:0:12}"
hc=$("${B[@]}" inspect --type image "$image" | python3 -c 'import json, sys
d = json.load(sys.stdin)["Docker"]
print(" ".join((d.get("config") or d.get("Config"))["Healthcheck"]["Test"]))')
echo "image HEALTHCHECK: $hc"
[[ $hc == CMD-SHELL* ]] || fail "the image has no HEALTHCHECK (built without --format docker?)"
# The same command, against this test's port (host network: 50051 may be taken on CI).
hc=${hc//127.0.0.1:50051/127.0.0.1:$grpc_port}
run_in --env GPUBENCH_HEALTHCHECK_FLAGS=--token_file=/tmp/token "$ctr" -- \
  sh -c "${hc#CMD-SHELL } > /tmp/hc.out 2>&1; echo \$? > /tmp/hc.rc" >/dev/null 2>&1 || true
[ "$(cat "$vol/hc.rc")" = 0 ] || { cat "$vol/hc.out"; fail "HEALTHCHECK with the token"; }
echo "ok: the image's HEALTHCHECK passes with GPUBENCH_HEALTHCHECK_FLAGS=--token_file=/tmp/token"
run_in "$ctr" -- sh -c "${hc#CMD-SHELL } > /tmp/hc.out 2>&1; echo \$? > /tmp/hc.rc" >/dev/null 2>&1 || true
[ "$(cat "$vol/hc.rc")" != 0 ] || fail "HEALTHCHECK passed without the token"
echo "ok: without the token the same HEALTHCHECK fails ($(head -c 120 "$vol/hc.out"))"
cctr=$("${B[@]}" from --pull=never "$client_image")
"${B[@]}" run --isolation chroot --volume "$vol:/tmp" "$cctr" -- sh -c \
  "/usr/local/bin/gpubench devices --target=127.0.0.1:$grpc_port --token_file=/tmp/token > /tmp/client.out 2>&1; echo \$? > /tmp/client.rc" \
  >/dev/null 2>&1 || true
"${B[@]}" rm "$cctr" >/dev/null 2>&1 || true
[ "$(cat "$vol/client.rc")" = 0 ] || { cat "$vol/client.out"; fail "client image: gpubench devices"; }
echo "ok: the client image's CLI lists the server's devices ($(grep -c '^device' "$vol/client.out") device(s))"
stop_server
step "PASS"
