// Host-only entry points of the measurement kernels in timing_kernels.cu.
#ifndef GPUBENCH_KERNELS_CUDA_TIMING_H_
#define GPUBENCH_KERNELS_CUDA_TIMING_H_

#include <cstdint>

namespace gpubench::cuda {

// What the blocking kernel reports, in pinned host-mapped memory the host reads after the sample.
struct BlockingState {
  int32_t release;         // host writes 1 to let the kernel end
  int32_t timed_out;       // kernel writes 1 when it gave up waiting
  uint64_t clock_cycles;   // SM cycles (clock64) over the wait; 0 on timeout
  uint64_t clock_ns;       // %globaltimer ns over the same wait; 0 on timeout
};

// Enqueues a one-thread kernel that spins until state->release becomes non-zero (and at least
// `min_window_ns` have passed, so its clock reading is precise) or `timeout_ns` of GPU time
// passes; on timeout it sets state->timed_out = 1. Holding the stream this way lets the timed
// launches queue up first, so host launch latency stays out of the timing (nvbench's blocking
// kernel). While it spins it counts SM cycles against %globaltimer: clock_cycles / clock_ns is
// the SM clock just before the timed launches, for throttling detection without another launch.
// `state` is the device pointer of host-mapped memory. Returns the cudaError_t of the launch.
int LaunchBlockingKernel(BlockingState* state, uint64_t min_window_ns, uint64_t timeout_ns,
                         void* stream);

// Enqueues the clean L2 flush: a read-only pass over the first `bytes` (a multiple of 16) of
// `buffer`, which the caller filled with zeros once. Every line it loads lands in L2 clean, and a
// line the timed kernel left dirty is written back during the flush, not during the next timed
// launch; so a cold sample starts from an L2 holding no run data and no dirty lines, like Nsight
// Compute's --cache-control all (a memset flush leaves an L2's worth of dirty lines instead). The
// kernel stores nothing unless the buffer was not all zeros: then it writes one word to `sink`
// (which must lie outside the bytes read), so the compiler cannot drop the loads.
int LaunchL2ReadFlush(const void* buffer, uint64_t bytes, uint32_t* sink, void* stream);

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_TIMING_H_
