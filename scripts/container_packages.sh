#!/bin/sh
# Installs what one stage of the Dockerfile needs, on Ubuntu 24.04 (the nvidia/cuda images) or
# Debian 12 (CI's stand-in base), whose runtime library packages are named differently.
#   container_packages.sh build     compilers and -dev packages (the build stage)
#   container_packages.sh server    the server's and CLI's shared libraries (the runtime stage)
#   container_packages.sh client    the CLI's shared libraries only (the slim client stage)
set -eu
stage=${1:?usage: container_packages.sh build|server|client}
. /etc/os-release
case "$ID-$VERSION_ID" in
  ubuntu-24.04)
    grpc=libgrpc++1.51t64 protobuf=libprotobuf32t64 absl=libabsl20220623t64 spdlog=libspdlog1.12 ;;
  debian-12)
    grpc=libgrpc++1.51 protobuf=libprotobuf32 absl=libabsl20220623 spdlog=libspdlog1.10 ;;
  *)
    echo "container_packages.sh: unsupported base $ID $VERSION_ID (Ubuntu 24.04 or Debian 12)" >&2
    exit 1 ;;
esac
case "$stage" in
  build)
    packages="cmake ninja-build g++ pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
      protobuf-compiler libabsl-dev prometheus-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
      binutils" ;;
  server)
    packages="$grpc $protobuf $absl $spdlog libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0" ;;
  client)
    packages="$grpc $protobuf $absl" ;;
  *)
    echo "container_packages.sh: unknown stage '$stage'" >&2
    exit 1 ;;
esac
apt-get update -qq
# shellcheck disable=SC2086  # word splitting of the package list is intended
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages
apt-get clean
rm -rf /var/lib/apt/lists/*
