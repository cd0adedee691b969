# Sourced by the device scripts (bench/run_device_*.sh, the archived ones under bench/results/):
# the bundle's environment, a results folder packed after each step, and a gpubench server on a
# free loopback port, every step time-boxed.
#   BACKEND=cpu lets the scripts be smoke-tested on a machine without a GPU (bundle from a CPU build).
#   BUNDLE=DIR takes the binaries from DIR/bin and DIR/lib instead of ./.bundle (the CI smoke test).
BUNDLE=${BUNDLE:-$PWD/.bundle}
export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cupti=$(find /usr/local -name 'libcupti.so.13*' 2>/dev/null | head -1)
[[ -n $cupti ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$cupti")
# cuBLASLt (the gemm family dlopens libcublasLt.so.13; 541 MB, so never in the bundle): the CUDA
# toolkit under /usr/local first, else torch's nvidia-cublas wheel in a python site-packages.
# GPUBENCH_CUBLASLT_DIR says which (empty: none found, gemm runs answer FAILED_PRECONDITION).
GPUBENCH_CUBLASLT_DIR=$(dirname "$(find /usr/local -name 'libcublasLt.so.13*' -not -path '*stubs*' 2>/dev/null | head -1)" 2>/dev/null)
[[ $GPUBENCH_CUBLASLT_DIR == . ]] && GPUBENCH_CUBLASLT_DIR=
if [[ -z $GPUBENCH_CUBLASLT_DIR ]]; then
  for site in $(timeout 20 python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
    for lib in "$site"/nvidia/cublas/lib/libcublasLt.so.13* "$site"/nvidia/cu13/lib/libcublasLt.so.13*; do
      [[ -e $lib ]] && { GPUBENCH_CUBLASLT_DIR=$(dirname "$lib"); break 2; }
    done
  done
fi
[[ -n $GPUBENCH_CUBLASLT_DIR ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$GPUBENCH_CUBLASLT_DIR
B=$BUNDLE/bin
BACKEND=${BACKEND:-cuda}

# results_begin NAME [DIR]: results go to $R (DIR, default $OUT/NAME, created); pack (re)writes
# $OUT/NAME.tar.gz from it (call it after every step: the device call may end at any moment);
# $R/machine.txt gets the machine's facts (machine_info).
results_begin() {
  OUT=${OUT:-/tmp/gpubench-out}
  R=${2:-$OUT/$1}
  RESULTS_ARCHIVE=$OUT/$1.tar.gz
  mkdir -p "$OUT" "$R"
  machine_info "$R/machine.txt"
}
pack() { tar czf "$RESULTS_ARCHIVE" -C "$R" . ; }

# start_server LOG: starts the server, sets $server (pid) and $T (host:port), and (with $R set)
# lists its devices into $R/devices.txt. SERVER_ARGS: more flags. Waits at most 10 s for the
# port; returns 1 (and says why) when the server did not come up or exited.
start_server() {
  local port_file
  port_file=$(mktemp)
  : > "$port_file"
  "$B/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 --port_file="$port_file" \
      --metrics_listen= --max_elements=1073741824 ${SERVER_ARGS:-} > "$1" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do
    [[ -s $port_file ]] && break
    kill -0 "$server" 2>/dev/null || break  # exited: no port will come
    sleep 0.1
  done
  T=127.0.0.1:$(cat "$port_file")
  rm -f "$port_file"
  if [[ $T == 127.0.0.1: ]]; then
    echo "start_server: the server did not come up (no port within 10 s); its log $1:"
    tail -5 "$1"
    return 1
  fi
  [[ -n ${R:-} ]] && timeout 30 "$B/gpubench" devices --target="$T" > "$R/devices.txt" 2>&1
  return 0
}

# stop_server: SIGTERM, at most 10 s for a clean exit, then SIGKILL; never blocks longer (no
# `wait` on the server: a hung one must not hang the device call).
stop_server() {
  kill -TERM "$server" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$server" 2>/dev/null
}
stop_server_bounded() { stop_server; }  # the older name (archived scripts under bench/results/)

# machine_info FILE: date, GPU, driver and clocks (nvidia-smi), for the results.
machine_info() {
  { date -u +%FT%TZ
    timeout 20 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  } > "$1" 2>&1
}

# torch_version FILE: appends torch's and its CUDA's versions (or why there is no torch).
torch_version() {
  timeout 60 python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" >> "$1" 2>&1
}

# json_fields FILE PATH...: the values at the dotted PATHs (timing.medianSeconds) of a JSON file,
# such as a `gpubench run --format=json` result, comma-separated; 0 for a path it does not have.
json_fields() {
  python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
def get(path):
    v = doc
    for key in path.split("."):
        v = v.get(key, 0) if isinstance(v, dict) else 0
    return str(v)
print(",".join(get(p) for p in sys.argv[2:]))
PY
}

# size_numbers SIZES [FACTOR]: a size list (16Ki,1Mi,4096) as plain numbers times FACTOR
# (default 1), space-separated: the arguments of torch_*.py and pchase.
size_numbers() {
  python3 -c "import sys; m={'Ki':1<<10,'Mi':1<<20,'Gi':1<<30}; f=int(sys.argv[2]); print(' '.join(str(f*int(s[:-2])*m[s[-2:]]) if s[-2:] in m else str(f*int(s)) for s in sys.argv[1].split(',')))" "$1" "${2:-1}"
}
