// Host emulations of every device kernel: each function runs "threads" [begin, end) of a launch
// with the device kernel's own indexing, vector widths and tail handling. Cache hints change no
// result, so the add_*_stream and add_*_l2keep variants (one-pass, like add_*_tuned) run the
// AddF32Tuned / AddF16Tuned / AddBF16Tuned emulations.
#ifndef GPUBENCH_KERNELS_CPU_KERNELS_H_
#define GPUBENCH_KERNELS_CPU_KERNELS_H_

#include "kernels/launch.h"

namespace gpubench::cpu {

#define GPUBENCH_DECLARE_CPU_KERNEL(name)                                          \
  void name(const KernelBuffers& buffers, const LaunchGeometry& geometry, int64_t begin, \
            int64_t end)

GPUBENCH_DECLARE_CPU_KERNEL(AddF32);
GPUBENCH_DECLARE_CPU_KERNEL(AddF32x4);
GPUBENCH_DECLARE_CPU_KERNEL(AddF16);
GPUBENCH_DECLARE_CPU_KERNEL(AddF16x2);
GPUBENCH_DECLARE_CPU_KERNEL(AddF16x8);
GPUBENCH_DECLARE_CPU_KERNEL(AddF16x8Pack);
GPUBENCH_DECLARE_CPU_KERNEL(AddBF16);
GPUBENCH_DECLARE_CPU_KERNEL(AddBF16x2);
GPUBENCH_DECLARE_CPU_KERNEL(AddBF16x8);
GPUBENCH_DECLARE_CPU_KERNEL(AddF32Tuned);
GPUBENCH_DECLARE_CPU_KERNEL(AddF16Tuned);
GPUBENCH_DECLARE_CPU_KERNEL(AddBF16Tuned);
GPUBENCH_DECLARE_CPU_KERNEL(AddF32GridStride);
GPUBENCH_DECLARE_CPU_KERNEL(AddF16GridStride);
GPUBENCH_DECLARE_CPU_KERNEL(AddBF16GridStride);
GPUBENCH_DECLARE_CPU_KERNEL(AddF32Bulk);
GPUBENCH_DECLARE_CPU_KERNEL(AddF16Bulk);
GPUBENCH_DECLARE_CPU_KERNEL(AddBF16Bulk);
GPUBENCH_DECLARE_CPU_KERNEL(SaxpyMinimal);
GPUBENCH_DECLARE_CPU_KERNEL(SaxpySophisticated);
GPUBENCH_DECLARE_CPU_KERNEL(SaxpyBalanced);
GPUBENCH_DECLARE_CPU_KERNEL(CopyF32);

#undef GPUBENCH_DECLARE_CPU_KERNEL

}  // namespace gpubench::cpu

#endif  // GPUBENCH_KERNELS_CPU_KERNELS_H_
