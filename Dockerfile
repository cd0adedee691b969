# gpubench images. Multi-stage; the base images are build arguments.
#   docker build -t gpubench:0.1.0 .                          # the server (and CLI), CUDA 13.0
#   docker build --target client -t gpubench-client:0.1.0 .   # the CLI alone, no CUDA libraries
#   docker build --target h2-proxy -t gpubench-h2-proxy:0.1.0 .  # the optional rapid-reset proxy
#   docker run --gpus all -p 50051:50051 -p 9464:9464 gpubench:0.1.0
# Defaults build in the CUDA devel image and run in the CUDA *base* image (cudart is linked
# statically; CUPTI for the optional counter pass is copied from the build stage). CI builds the
# same file with buildah from a Debian 12 base and the host's CUDA toolkit mounted at
# /usr/local/cuda (scripts/container_test.sh).
# Metadata (OCI labels, the binaries' revision): docker build $(scripts/image_build_args.sh) ...
ARG BUILD_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04
ARG RUNTIME_IMAGE=nvidia/cuda:13.0.1-base-ubuntu24.04
ARG CLIENT_IMAGE=ubuntu:24.04
ARG PROXY_IMAGE=debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
# One architecture builds much faster (CI: 90); the default covers Turing to Blackwell.
ARG CUDA_ARCHITECTURES="75-real;80-real;86-real;89-real;90-real;100-real;120"
COPY scripts/container_packages.sh /usr/local/sbin/
RUN container_packages.sh build
WORKDIR /src
COPY . .
# .git is not in the context: the revision comes in as an argument (CMake's short form).
ARG REVISION=unknown
# CUPTI: extras/CUPTI/lib64 in the CUDA images and .run installs, lib/ or lib64/ elsewhere.
# NVRTC for user kernels (the worker links it; docs/user-kernels.md) and the two headers the
# worker puts before a user's source, copied to the path the worker was built with.
RUN set -eu; \
    if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi; \
    cmake -S . -B /build -G Ninja -DGPUBENCH_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
      "-DGPUBENCH_GIT_REVISION=$(printf %.12s "${REVISION}")"; \
    cmake --build /build -j"$(nproc)" --target gpubench_server gpubench_worker gpubench; \
    mkdir -p /out/bin /out/lib; \
    strip -o /out/bin/gpubench_server /build/gpubench_server; \
    strip -o /out/bin/gpubench_worker /build/gpubench_worker; \
    strip -o /out/bin/gpubench /build/gpubench; \
    for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/lib; do \
      if [ -e "$d/libcupti.so.13" ]; then cp -L "$d/libcupti.so.13" /out/lib/; break; fi; \
    done; \
    mkdir -p /out/include; \
    if ldd /build/gpubench_worker | grep -q libnvrtc; then \
      cp -L /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda/lib64/libnvrtc-builtins.so.13.* \
        /out/lib/; \
      cp /usr/local/cuda/include/cuda_fp16.h /usr/local/cuda/include/cuda_fp16.hpp \
        /usr/local/cuda/include/cuda_bf16.h /usr/local/cuda/include/cuda_bf16.hpp /out/include/; \
    fi; \
    ls -l /out/bin /out/lib /out/include

FROM ${CLIENT_IMAGE} AS client
COPY scripts/container_packages.sh /usr/local/sbin/
RUN container_packages.sh client && rm /usr/local/sbin/container_packages.sh \
    && useradd --system --uid 10001 --user-group --no-create-home gpubench
COPY --from=build /out/bin/gpubench /usr/local/bin/
RUN ! ldd /usr/local/bin/gpubench | grep "not found"
# OCI metadata (client image), last so that new values rebuild no earlier layer.
ARG VERSION=unknown REVISION=unknown SOURCE_URL=https://github.com/gpubench/gpubench
COPY LICENSE /usr/share/doc/gpubench/LICENSE
# A RUN that reads the arguments: buildah's layer cache (1.28) keys ARG, COPY and LABEL steps
# without their values, so without it a rebuild with new values can reuse stale labels.
RUN printf 'version=%s\nrevision=%s\nsource=%s\n' "$VERSION" "$REVISION" "$SOURCE_URL" \
      > /usr/share/doc/gpubench/BUILD-INFO
LABEL org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/gpubench"]

# Debian's nginx (with its CVE-2023-44487 backport) for the optional sidecar in front of the
# server (deploy/kubernetes/components/h2-proxy, docs/security.md); its nginx.conf comes from
# that component's ConfigMap. Before the server stage, which stays the default target.
FROM ${PROXY_IMAGE} AS h2-proxy
RUN apt-get update && apt-get install -y --no-install-recommends nginx-light \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --no-create-home gpubench
EXPOSE 50051
ARG VERSION=unknown REVISION=unknown SOURCE_URL=https://github.com/gpubench/gpubench
COPY LICENSE /usr/share/doc/gpubench/LICENSE
# A RUN that reads the arguments: buildah's layer cache (1.28) keys ARG, COPY and LABEL steps
# without their values, so without it a rebuild with new values can reuse stale labels.
RUN printf 'version=%s\nrevision=%s\nsource=%s\n' "$VERSION" "$REVISION" "$SOURCE_URL" \
      > /usr/share/doc/gpubench/BUILD-INFO
LABEL org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 10001:10001
ENTRYPOINT ["nginx", "-g", "daemon off;"]
CMD ["-c", "/etc/gpubench-h2-proxy/nginx.conf"]

FROM ${RUNTIME_IMAGE} AS server
COPY scripts/container_packages.sh /usr/local/sbin/
RUN container_packages.sh server && rm /usr/local/sbin/container_packages.sh \
    && useradd --system --uid 10001 --user-group --no-create-home gpubench
COPY --from=build /out/bin/ /usr/local/bin/
# CUPTI where dlopen finds it (the server loads it only for a counter pass).
COPY --from=build /out/lib/ /usr/local/lib/gpubench/
COPY --from=build /out/include/ /usr/local/cuda/include/
RUN echo /usr/local/lib/gpubench > /etc/ld.so.conf.d/gpubench.conf && ldconfig \
    && ! ldd /usr/local/bin/gpubench_server /usr/local/bin/gpubench_worker /usr/local/bin/gpubench \
         | grep "not found"
# NVML (libnvidia-ml.so.1) comes from the driver, mounted by the NVIDIA container runtime;
# "utility" asks for it. CUDA ordinals in PCI order, as NVML indexes them.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility CUDA_DEVICE_ORDER=PCI_BUS_ID
EXPOSE 50051 9464
# Token or TLS on? Give the CLI its flags: -e GPUBENCH_HEALTHCHECK_FLAGS="--token_file=/path"
# (or --ca_cert=... --tls_server_name=...). The check is a real ListDevices call.
ENV GPUBENCH_HEALTHCHECK_FLAGS=""
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD /usr/local/bin/gpubench devices --target=127.0.0.1:50051 --rpc_timeout_seconds=3 $GPUBENCH_HEALTHCHECK_FLAGS
# OCI metadata, last so that new values rebuild no earlier layer.
ARG VERSION=unknown REVISION=unknown SOURCE_URL=https://github.com/gpubench/gpubench
COPY LICENSE /usr/share/doc/gpubench/LICENSE
# A RUN that reads the arguments: buildah's layer cache (1.28) keys ARG, COPY and LABEL steps
# without their values, so without it a rebuild with new values can reuse stale labels.
RUN printf 'version=%s\nrevision=%s\nsource=%s\n' "$VERSION" "$REVISION" "$SOURCE_URL" \
      > /usr/share/doc/gpubench/BUILD-INFO
LABEL org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/gpubench_server"]
CMD ["--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464", "--backend=auto"]
