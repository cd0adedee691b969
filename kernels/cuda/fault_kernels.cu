// Device code of the test-only fault variants (kernels/test_faults.h): each leaves its CUDA
// context unusable or never returns. Not in the production catalog.
#include <cstdint>

#include "kernels/cuda/launch_helpers.cuh"
#include "kernels/launch.h"
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
