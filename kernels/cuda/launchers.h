// Host-only declarations of the device launchers in kernels/cuda/*.cu, with the CudaLaunchFn
// contract of kernels/launch.h. Nothing here needs CUDA headers, so the catalog can name
// launchers without including device code.
#ifndef GPUBENCH_KERNELS_CUDA_LAUNCHERS_H_
#define GPUBENCH_KERNELS_CUDA_LAUNCHERS_H_

#include "kernels/launch.h"

namespace gpubench::cuda {

#define GPUBENCH_DECLARE_CUDA_LAUNCHER(name) \
  int name(const KernelBuffers& buffers, const LaunchGeometry& geometry, void* stream, \
           const void** symbol)

GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF32);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF32x4);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF16);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF16x2);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF16x8);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF16x8Pack);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddBF16);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddBF16x2);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddBF16x8Pack);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF32Tuned);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF16Tuned);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddBF16Tuned);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchAddF32GridStride);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchSaxpyMinimal);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchSaxpySophisticated);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchSaxpyBalanced);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchCubAddF32);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchCubAddF16);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchCubAddBF16);
GPUBENCH_DECLARE_CUDA_LAUNCHER(LaunchCopyD2D);

#undef GPUBENCH_DECLARE_CUDA_LAUNCHER

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_LAUNCHERS_H_
