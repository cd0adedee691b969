# Sourced by the device scripts (bench/run_device_add.sh, the archived ones under bench/results/): the bundle's
# environment and a gpubench server on a free loopback port.
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

# start_server LOG: starts the server, sets $server (pid) and $T (host:port). SERVER_ARGS: more flags.
start_server() {
  local port_file
  port_file=$(mktemp)
  : > "$port_file"
  "$B/gpubench_server" --backend="$BACKEND" --listen=127.0.0.1:0 --port_file="$port_file" \
      --metrics_listen= --max_elements=1073741824 ${SERVER_ARGS:-} > "$1" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do [[ -s $port_file ]] && break; sleep 0.1; done
  T=127.0.0.1:$(cat "$port_file")
  rm -f "$port_file"
}

stop_server() { kill -TERM "$server"; wait "$server"; }

# stop_server_bounded: SIGTERM, at most 10 s for a clean exit, then SIGKILL; never blocks longer.
stop_server_bounded() {
  kill -TERM "$server" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$server" 2>/dev/null
}

# machine_info FILE: date, GPU, driver and clocks (nvidia-smi), for the results.
machine_info() {
  { date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  } > "$1" 2>&1
}
