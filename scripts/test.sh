#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs every test. GPU tests (ctest
# label "gpu") run where a GPU exists and skip with a printed reason elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
