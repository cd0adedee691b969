// Achieved occupancy and DRAM throughput from the hardware counters, collected in-process with
// CUPTI's range profiler (CUDA 13 cupti_range_profiler.h + the profiler host API), in a profiling
// pass separate from timed samples. libcupti is loaded with dlopen at first use, so the server
// starts and runs without it; where it or the counters are missing, the reason says so.
#ifndef GPUBENCH_KERNELS_CUDA_CUPTI_PROFILER_H_
#define GPUBENCH_KERNELS_CUDA_CUPTI_PROFILER_H_

#include <functional>
#include <optional>
#include <string>

namespace gpubench::cuda {

struct CounterValues {
  std::optional<double> warps_active_pct;    // sm__warps_active.avg.pct_of_peak_sustained_active
  std::optional<double> dram_throughput_pct; // dram__throughput.avg.pct_of_peak_sustained_elapsed
  std::string unavailable_reason;            // set when the values are absent
};

// Profiles the kernel launches `launch` enqueues (one auto range per kernel, kernel replay; the
// first kernel's values are returned) on `device`. Not thread-safe across devices of one process:
// the caller serializes (the profiler is a process-wide resource).
CounterValues ProfileKernel(int device, const std::function<int()>& launch);

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_CUPTI_PROFILER_H_
