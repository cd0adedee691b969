// What one launch of a kernel variant operates on, and the function types that bind a variant to
// the CPU emulation and the CUDA launcher. Host-only: shared by the CPU emulation and the CUDA
// launchers (nvcc compiles it too), so it names no CUDA type (the stream travels as an opaque
// pointer) and no absl type.
#ifndef GPUBENCH_KERNELS_LAUNCH_H_
#define GPUBENCH_KERNELS_LAUNCH_H_

#include <cstdint>
#include <memory>
#include <string>

namespace gpubench {

// What one run's request resolves to (kernels/family.h: KernelFamily::resolve_shape).
struct RunShape {
  int64_t elements = 0;          // the request's element count (elementwise families: n)
  int64_t m = 0, n = 0, k = 0;   // matrix dimensions (GEMM); 0 where the family has none
};

// Most buffers a family may declare.
inline constexpr int kMaxBuffers = 8;

// Per-session state a variant's setup function creates (a library handle, a workspace, the
// chosen algorithm, a second stream); launches see it as KernelBuffers::state. Subclass it.
class LaunchState {
 public:
  virtual ~LaunchState() = default;
};

// The buffers of one run, in the order of the family's declaration (KernelFamily::buffers).
// Elementwise add: a, b (in), c (out). SAXPY: x (in), y (in-out, y = alpha x + y in place, as in
// the seed). Copy: src (in), dst (out). Pointers are host or device memory per the buffer's
// placement.
struct KernelBuffers {
  void* data[kMaxBuffers] = {};
  int64_t elements[kMaxBuffers] = {};
  int count = 0;
  RunShape shape;
  int64_t n = 0;         // shape.elements
  float alpha = 2.5f;    // SAXPY coefficient (the seed's ALPHA)
  int device = 0;        // the run's device
  int peer_device = -1;  // the second device of a family with a peer buffer; -1: none
  LaunchState* state = nullptr;  // what the variant's setup function made; null without one

  template <typename T>
  T* at(int i) const {
    return static_cast<T*>(data[i]);
  }
};

// A resolved launch configuration: grid = ceil(launch items / (block_size * items_per_thread)).
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
// the kernel, and returns 0. Defined in kernels/cuda/*.cu, declared where the variant is
// registered (kernels/families/*.cc) with GPUBENCH_CUDA_LAUNCHER.
using CudaLaunchFn = int (*)(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                             void* stream, const void** symbol);

// Optional per-session setup, run once after the buffers are filled and before any launch,
// outside every timed window: create handles, pick an algorithm, allocate a workspace, make a
// second stream. Stores what the launches need in *state (owned by the session, destroyed before
// the buffers are freed) and may say what it chose in *report ("cuBLASLt algo 23, tile
// 256x128"), which reaches the run's result (RunResult::launch_report). The CUDA form returns a
// cudaError_t as an int (0 = success) and runs with the run's device current; on failure *report
// says why, and the run fails with FAILED_PRECONDITION(report) for cudaErrorNotSupported (a
// library that cannot load, no algorithm for the shape, no peer access), RESOURCE_EXHAUSTED for
// cudaErrorMemoryAllocation, and the CUDA error's status otherwise.
using CudaSetupFn = int (*)(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                            void* stream, std::unique_ptr<LaunchState>* state,
                            std::string* report);
using CpuSetupFn = void (*)(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                            std::unique_ptr<LaunchState>* state, std::string* report);

}  // namespace gpubench

// Declare (or define, with a body after it) a CPU emulation in namespace gpubench::cpu or a CUDA
// launcher in namespace gpubench::cuda with the contract above. The registration list declares
// the functions it binds with these; the definitions use them too, so a signature cannot drift.
#define GPUBENCH_CPU_KERNEL(name)                                                         \
  void name(const ::gpubench::KernelBuffers& buffers, const ::gpubench::LaunchGeometry& geometry, \
            int64_t thread_begin, int64_t thread_end)
#define GPUBENCH_CUDA_LAUNCHER(name)                                                     \
  int name(const ::gpubench::KernelBuffers& buffers, const ::gpubench::LaunchGeometry& geometry, \
           void* stream, const void** symbol)

#endif  // GPUBENCH_KERNELS_LAUNCH_H_
