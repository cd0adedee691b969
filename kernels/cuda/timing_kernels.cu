#include <cuda_runtime.h>

#include "kernels/cuda/timing.h"

namespace gpubench::cuda {
namespace {

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void BlockingKernel(BlockingState* state, uint64_t min_window_ns, uint64_t timeout_ns) {
  volatile BlockingState* s = state;
  const uint64_t start = GlobalTimerNs();
  const long long start_cycles = clock64();
  uint64_t now = start;
  while (s->release == 0 || now - start < min_window_ns) {
    now = GlobalTimerNs();
    if (now - start > timeout_ns) {
      s->clock_cycles = 0;
      s->clock_ns = 0;
      s->timed_out = 1;
      return;
    }
  }
  const long long end_cycles = clock64();
  s->clock_cycles = static_cast<uint64_t>(end_cycles - start_cycles);
  s->clock_ns = now - start;
  __threadfence_system();
}

}  // namespace

int LaunchBlockingKernel(BlockingState* state, uint64_t min_window_ns, uint64_t timeout_ns,
                         void* stream) {
  BlockingKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(state, min_window_ns, timeout_ns);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
