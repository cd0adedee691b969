// What one launch of a kernel variant operates on. Host-only: shared by the CPU emulation and the
// CUDA launchers, so it names no CUDA type (the stream travels as an opaque pointer).
#ifndef GPUBENCH_KERNELS_LAUNCH_H_
#define GPUBENCH_KERNELS_LAUNCH_H_

#include <cstdint>

namespace gpubench {

// Buffers of one run. Elementwise add: out = in0 + in1. SAXPY: out (y) = alpha * in0 (x) + out,
// in place, as in the seed. Copy: out = in0.
struct KernelBuffers {
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  void* out = nullptr;
  int64_t n = 0;        // elements
  float alpha = 2.5f;   // SAXPY coefficient (the seed's ALPHA)
};

// A resolved launch configuration: grid = ceil(n / (block_size * items_per_thread)).
struct LaunchGeometry {
  int block_size = 0;        // threads per block
  int items_per_thread = 1;  // elements each thread owns
  int64_t grid_size = 0;     // blocks; 0 when the library picks its own configuration
  int dynamic_shared_bytes = 0;
};

// Emulates threads [thread_begin, thread_end) of a launch on the host, with the kernel's exact
// indexing (each "thread" owns the elements the device thread would own). Called concurrently on
// disjoint thread ranges.
using CpuKernelFn = void (*)(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                             int64_t thread_begin, int64_t thread_end);

// Enqueues one launch on `stream` (a cudaStream_t) and returns the cudaError_t of the launch as an
// int (0 = success). When `symbol` is not null it launches nothing: it stores the __global__
// function (for cudaFuncGetAttributes and the occupancy API), or null where a library chooses
// the kernel, and returns 0. Defined in kernels/cuda/*.cu; declared in kernels/cuda/launchers.h.
using CudaLaunchFn = int (*)(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                             void* stream, const void** symbol);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_LAUNCH_H_
