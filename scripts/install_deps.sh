#!/usr/bin/env bash
# Installs gpubench's build and test dependencies from Debian 12 packages. Idempotent.
# CUDA is optional: with the CUDA toolkit's nvcc on PATH (or /usr/local/cuda), the CUDA backend
# is built too; without it the CPU backend alone is built.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev nlohmann-json3-dev
  prometheus python3 python3-yaml curl openssl libssl-dev
  kubectl nodejs yamllint buildah mmdebstrap
  nginx-light  # the h2-proxy sidecar's rapid-reset test (tests/e2e/rapid_reset_e2e_test.cc)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Schema validation of the Kubernetes manifests (tests/deploy/validate.mjs): pinned by the lock file.
deploy_tests="$(dirname "$0")/../tests/deploy"
if [ ! -d "$deploy_tests/node_modules" ]; then
  npm ci --prefix "$deploy_tests" --no-audit --no-fund --loglevel=error
fi
# The README examples' reflection client (tests/e2e/readme): pinned by the lock file.
readme_tests="$(dirname "$0")/../tests/e2e/readme"
if [ ! -d "$readme_tests/node_modules" ]; then
  npm ci --prefix "$readme_tests" --no-audit --no-fund --loglevel=error
fi
