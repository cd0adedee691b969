#!/usr/bin/env bash
# Packs the CUDA build's binaries and every shared library they need (except glibc, libstdc++
# and libgcc, which the GPU machine has) into .bundle/, stripped, for the device tool to carry.
# Never libcublas*: the gemm family dlopens libcublasLt.so.13 (541 MB) from the device's CUDA
# toolkit or torch's wheel (set LD_LIBRARY_PATH there); the bundle must stay under 64 MiB.
#   [BINS="gpubench_server gpubench ..."] bench/make_bundle.sh [BUILD_DIR]
# BINS (paths relative to BUILD_DIR) narrows the bundle to the binaries a device script needs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rm -rf .bundle && mkdir -p .bundle/bin .bundle/lib
for b in ${BINS:-gpubench_server gpubench_worker gpubench tests/gpu_test tests/engine_test tests/kernels_test}; do
  cp "$build/$b" .bundle/bin/
done
# Device tests of the newer families and the gemm probe (CUDA builds), where the build has them.
for b in tests/copy_gpu_test tests/e2e_test tests/grpc_health_check event_timer pchase; do
  if [[ -e $build/$b ]]; then cp "$build/$b" .bundle/bin/; fi
done
# The same-process harness's library (bench/add_same_process.py loads it with ctypes).
if [[ -e $build/libgpubench_add_probe.so ]]; then cp "$build/libgpubench_add_probe.so" .bundle/lib/; fi
for b in .bundle/bin/*; do
  ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
  grep -vE '/libcublas' |  # cuBLASLt is dlopened from the device's toolkit
  while read -r lib; do cp -L "$lib" .bundle/lib/; done
strip --strip-unneeded .bundle/bin/* .bundle/lib/* 2>/dev/null || true
du -sh .bundle
