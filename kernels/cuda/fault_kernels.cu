// Device code of the test-only fault variants (kernels/test_faults.h): each leaves its CUDA
// context unusable or never returns. Not in the production catalog.
#include <cstdint>

#include "kernels/cuda/launch_helpers.cuh"
#include "kernels/launch.h"
#include "kernels/test_corrupt.h"
#include "kernels/test_fault_actions.h"

namespace gpubench::cuda {
namespace {

__global__ void TrapKernel(const float*, const float*, float*, long long) { __trap(); }

// A store 1 TiB past the output: no allocation of this process is there, so the store faults
// (cudaErrorIllegalAddress, sticky).
__global__ void WildStoreKernel(const float*, const float*, float* c, long long n) {
  volatile float* wild = c + n + (static_cast<long long>(1) << 38);
  wild[threadIdx.x] = 1.0f;
}

// Never returns: only killing the process (its context) stops it. The store that never happens
// keeps the loop from being optimized away.
__global__ void SpinKernel(const float*, const float*, float* c, long long) {
  for (;;) {
    if (clock64() == -1) c[0] = 0.0f;
  }
}

// test_corrupt_one_add_f32: the seed's add, with one element (kernels/test_corrupt.h) wrong.
__global__ void CorruptOneAddKernel(const float* a, const float* b, float* c, long long n) {
  const int64_t bad = test_faults::CorruptedIndex(__float_as_uint(a[0]), __float_as_uint(b[0]), n);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = GlobalThreadIndex(); i < n; i += step) {
    float v = a[i] + b[i];
    if (i == bad) v += test_faults::kCorruption;
    c[i] = v;
  }
}

// test_write_nothing_add_f32: returns at once, so the output keeps its poison.
__global__ void WriteNothingKernel(const float*, const float*, float*, long long) {}

template <auto kKernel>
int LaunchFault(const KernelBuffers& b, const LaunchGeometry& g, void* stream,
                const void** symbol) {
  return LaunchOrReport(kKernel, g, stream, symbol, b.at<const float>(0), b.at<const float>(1),
                        b.at<float>(2), static_cast<long long>(b.n));
}

}  // namespace

GPUBENCH_CUDA_LAUNCHER(LaunchFaultTrap) { return LaunchFault<TrapKernel>(buffers, geometry, stream, symbol); }
GPUBENCH_CUDA_LAUNCHER(LaunchFaultOob) {
  return LaunchFault<WildStoreKernel>(buffers, geometry, stream, symbol);
}
GPUBENCH_CUDA_LAUNCHER(LaunchFaultHang) {
  return LaunchFault<SpinKernel>(buffers, geometry, stream, symbol);
}
GPUBENCH_CUDA_LAUNCHER(LaunchCorruptOneAdd) {
  return LaunchFault<CorruptOneAddKernel>(buffers, geometry, stream, symbol);
}
GPUBENCH_CUDA_LAUNCHER(LaunchWriteNothingAdd) {
  return LaunchFault<WriteNothingKernel>(buffers, geometry, stream, symbol);
}
// The host-side faults: the launch itself ends the process.
GPUBENCH_CUDA_LAUNCHER(LaunchFaultExit) {
  if (symbol != nullptr) return LaunchFault<TrapKernel>(buffers, geometry, stream, symbol);
  test_faults::ExitAbruptly();
}
GPUBENCH_CUDA_LAUNCHER(LaunchFaultAlloc) {
  if (symbol != nullptr) return LaunchFault<TrapKernel>(buffers, geometry, stream, symbol);
  test_faults::AllocateWithoutBound();
}

}  // namespace gpubench::cuda
