#!/usr/bin/env bash
# Configures and builds gpubench into ${BUILD_DIR:-build}. Extra arguments go to cmake.
# GPUBENCH_WERROR=ON makes compiler warnings errors (scripts/test.sh, so CI, sets it; a plain build
# leaves it off, so a newer compiler's new warnings never break the quickstart).
# GPUBENCH_TARGETS="a b c?" builds only those targets (default: all); a name ending in ? is built
# only if the configured tree has it.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
cmake -S . -B "$build_dir" -G Ninja -DGPUBENCH_WERROR="${GPUBENCH_WERROR:-OFF}" "$@"
targets=()
read -ra wanted <<< "${GPUBENCH_TARGETS:-}"
for t in "${wanted[@]}"; do
  if [[ $t == *\? ]]; then
    t=${t%\?}
    ninja -C "$build_dir" -t query "$t" >/dev/null 2>&1 || continue
  fi
  targets+=(--target "$t")
done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
