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

// The first statement of a kernel launched with programmatic dependent launch (LaunchOrReport<true>):
// waits until the previous kernel of the stream has completed and its writes are visible
// (griddepcontrol.wait), so no load or store moves ahead of stream order, then lets the next
// launch be scheduled (griddepcontrol.launch_dependents), which the hardware does once every
// block of this grid has said so. Nothing below sm_90, where such kernels are never launched.
__device__ __forceinline__ void WaitForPreviousGridThenReleaseNext() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
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
