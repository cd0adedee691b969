#include <cuda_runtime.h>

#include "kernels/cuda/timing.h"

namespace gpubench::cuda {
namespace {

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void BlockingKernel(const volatile int32_t* flag, int32_t* timed_out,
                               uint64_t timeout_ns) {
  const uint64_t start = GlobalTimerNs();
  while (*flag == 0) {
    if (GlobalTimerNs() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

__global__ void ClockKernel(unsigned long long* out, uint64_t window_ns) {
  const uint64_t t0 = GlobalTimerNs();
  const long long c0 = clock64();
  uint64_t t1 = t0;
  while (t1 - t0 < window_ns) t1 = GlobalTimerNs();
  const long long c1 = clock64();
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = t1 - t0;
}

}  // namespace

int LaunchBlockingKernel(const volatile int32_t* flag, int32_t* timed_out, uint64_t timeout_ns,
                         void* stream) {
  BlockingKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, timed_out, timeout_ns);
  return cudaGetLastError();
}

int LaunchClockKernel(unsigned long long* out, uint64_t window_ns, void* stream) {
  ClockKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(out, window_ns);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
