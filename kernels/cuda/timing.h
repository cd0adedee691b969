// Host-only entry points of the measurement kernels in timing_kernels.cu.
#ifndef GPUBENCH_KERNELS_CUDA_TIMING_H_
#define GPUBENCH_KERNELS_CUDA_TIMING_H_

#include <cstdint>

namespace gpubench::cuda {

// Enqueues a one-thread kernel that spins until *flag (host-mapped memory) becomes non-zero or
// `timeout_ns` of GPU time passes; on timeout it sets *timed_out = 1. Holding the stream this way
// lets the timed launches queue up first, so host launch latency stays out of the timing
// (nvbench's blocking kernel). Returns the cudaError_t of the launch.
int LaunchBlockingKernel(const volatile int32_t* flag, int32_t* timed_out, uint64_t timeout_ns,
                         void* stream);

// Enqueues a one-thread kernel that counts SM cycles (clock64) over `window_ns` of %globaltimer
// and writes {cycles, elapsed_ns} to out[0..1]. cycles / elapsed_ns is the SM clock in GHz.
int LaunchClockKernel(unsigned long long* out, uint64_t window_ns, void* stream);

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_TIMING_H_
