#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs every test. GPU tests (ctest
# label "gpu") run where a GPU exists and skip with a printed reason elsewhere. Then builds the
# Dockerfile's images with buildah and runs them (scripts/container_test.sh; set
# GPUBENCH_SKIP_CONTAINER_TEST=1 to leave that out of a local run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# Warnings are errors here (the build is warning-free under -Wall -Wextra and must stay so);
# GPUBENCH_WERROR=OFF scripts/test.sh for a compiler newer than CI's that warns about more.
GPUBENCH_WERROR=${GPUBENCH_WERROR:-ON} scripts/build.sh
build_dir=${BUILD_DIR:-build}
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 600)
if [ "${GPUBENCH_SKIP_CONTAINER_TEST:-0}" != 1 ]; then
  scripts/container_test.sh "$build_dir"
fi
