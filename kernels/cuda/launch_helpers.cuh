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

// Launches `kernel` over the request's geometry with `args`, or reports its symbol. kPdl: with
// programmatic stream serialization (sm_90's programmatic dependent launch): the kernel may be
// scheduled before the previous kernel of the stream has finished, so it must wait for it
// (griddepcontrol.wait) before touching memory; AddOnePassPdlKernel does.
template <bool kPdl = false, typename... KernelArgs, typename... Args>
int LaunchOrReport(void (*kernel)(KernelArgs...), const LaunchGeometry& g, void* stream,
                   const void** symbol, Args... args) {
  if (symbol != nullptr) {
    *symbol = reinterpret_cast<const void*>(kernel);
    return cudaSuccess;
  }
  if constexpr (kPdl) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned int>(g.grid_size));
    config.blockDim = dim3(static_cast<unsigned int>(g.block_size));
    config.dynamicSmemBytes = static_cast<size_t>(g.dynamic_shared_bytes);
    config.stream = static_cast<cudaStream_t>(stream);
    config.attrs = &attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, static_cast<KernelArgs>(args)...);
  } else {
    kernel<<<static_cast<unsigned int>(g.grid_size), g.block_size, g.dynamic_shared_bytes,
             static_cast<cudaStream_t>(stream)>>>(args...);
    return cudaGetLastError();
  }
}

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_LAUNCH_HELPERS_CUH_
