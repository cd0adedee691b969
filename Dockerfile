# Multi-stage: build in the CUDA devel image, run in the CUDA runtime image as a non-root user.
#   docker build -t gpubench:0.1.0 .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 gpubench:0.1.0
ARG CUDA_VERSION=13.0.1
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
      protobuf-compiler libabsl-dev prometheus-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DGPUBENCH_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
    && cmake --build build -j"$(nproc)" \
    && strip build/gpubench_server build/gpubench

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04
# Only the shared libraries the binaries link (gRPC, Protobuf, Abseil, prometheus-cpp, spdlog),
# plus CUPTI for the optional achieved-occupancy pass. grpc_health_probe is not needed: the
# Kubernetes probes speak gRPC health natively and the HEALTHCHECK below uses the CLI.
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libgrpc++1.51t64 libprotobuf32t64 libspdlog1.12 libprometheus-cpp-core1.0 \
      libprometheus-cpp-pull1.0 cuda-cupti-13-0 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --no-create-home gpubench
COPY --from=build /src/build/gpubench_server /src/build/gpubench /usr/local/bin/
USER 10001:10001
EXPOSE 50051 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD ["/usr/local/bin/gpubench", "devices", "--target=127.0.0.1:50051", "--rpc_timeout_seconds=3"]
ENTRYPOINT ["/usr/local/bin/gpubench_server"]
CMD ["--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464", "--backend=auto"]
