// Device-side helpers shared by the kernel files: global thread index and the launch wrapper that
// implements the CudaLaunchFn contract (kernels/launch.h).
#ifndef GPUBENCH_KERNELS_CUDA_LAUNCH_HELPERS_CUH_
#define GPUBENCH_KERNELS_CUDA_LAUNCH_HELPERS_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch.h"

namespace gpubench::cuda {

// 64-bit global thread index: grids past 2^31 threads index correctly.
__device__ __forceinline__ int64_t GlobalThreadIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// Launches `kernel` over the request's geometry with `args`, or reports its symbol.
template <typename... KernelArgs, typename... Args>
int LaunchOrReport(void (*kernel)(KernelArgs...), const LaunchGeometry& g, void* stream,
                   const void** symbol, Args... args) {
  if (symbol != nullptr) {
    *symbol = reinterpret_cast<const void*>(kernel);
    return cudaSuccess;
  }
  kernel<<<static_cast<unsigned int>(g.grid_size), g.block_size, g.dynamic_shared_bytes,
           static_cast<cudaStream_t>(stream)>>>(args...);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_LAUNCH_HELPERS_CUH_
