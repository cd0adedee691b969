#include <cuda_runtime.h>

#include "kernels/cuda/timing.h"

namespace gpubench::cuda {
namespace {

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins until %globaltimer moves past `from` (its ticks can be microseconds apart) and returns
// the new value, or returns `from` after `limit_ns` of clock64 cycles at 4 GHz (never hangs).
__device__ __forceinline__ uint64_t NextTimerTick(uint64_t from, uint64_t limit_ns) {
  const long long give_up = clock64() + static_cast<long long>(4 * limit_ns);
  uint64_t t = GlobalTimerNs();
  while (t == from && clock64() < give_up) t = GlobalTimerNs();
  return t;
}

__global__ void BlockingKernel(BlockingState* state, uint64_t min_window_ns, uint64_t timeout_ns) {
  volatile BlockingState* s = state;
  // The clock window starts and ends on a %globaltimer tick edge, paired with clock64 reads at the
  // same instants: a read between ticks is stale by up to a tick, which in a short window would
  // overstate the SM clock (seen on the H200: up to +32% in 20 us cold windows).
  const uint64_t start = NextTimerTick(GlobalTimerNs(), timeout_ns);
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
  now = NextTimerTick(now, timeout_ns);
  const long long end_cycles = clock64();
  s->clock_cycles = static_cast<uint64_t>(end_cycles - start_cycles);
  s->clock_ns = now - start;
  __threadfence_system();
}

// Grid-stride read of 16-byte packets; the XOR of everything read is stored only when non-zero.
__global__ void L2ReadFlushKernel(const uint4* __restrict__ buffer, uint64_t packets,
                                  uint32_t* sink) {
  uint32_t x = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < packets;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint4 v = buffer[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x != 0) *sink = x;
}

}  // namespace

int LaunchL2ReadFlush(const void* buffer, uint64_t bytes, uint32_t* sink, void* stream) {
  // 1024 blocks of 256 threads keep every SM of a large GPU busy; the pass is bandwidth-bound.
  L2ReadFlushKernel<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(buffer), bytes / 16, sink);
  return cudaGetLastError();
}

int LaunchBlockingKernel(BlockingState* state, uint64_t min_window_ns, uint64_t timeout_ns,
                         void* stream) {
  BlockingKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(state, min_window_ns, timeout_ns);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
