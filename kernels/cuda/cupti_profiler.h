// Achieved occupancy and DRAM throughput from the hardware counters, collected in-process with
// CUPTI's range profiler (CUDA 13 cupti_range_profiler.h + the profiler host API), in a profiling
// pass separate from timed samples; and kernel durations from the same profiler (timer gpu_time).
// libcupti is loaded with dlopen at first use, so the server starts and runs without it; where it
// or the counters are missing, the reason says so.
#ifndef GPUBENCH_KERNELS_CUDA_CUPTI_PROFILER_H_
#define GPUBENCH_KERNELS_CUDA_CUPTI_PROFILER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

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

// Kernel durations from the hardware counter gpu__time_duration, the figure Nsight Compute
// reports as a kernel's Duration, read with the same range profiler (one auto range per kernel,
// one pass: nothing is replayed). Under it every kernel launch is serialized: the host waits for
// each kernel before the next one starts, so a measured launch must not queue behind a kernel
// that waits for the host (gpubench's blocking kernel). Holds CuptiGate() exclusively while it
// exists, as a counter pass does. Use from one thread (the run's).
class KernelTimeProfiler {
 public:
  // Enables the profiler on `device`'s context; FAILED_PRECONDITION with the reason where it
  // cannot (no libcupti, no permission to read counters, another profiler holding them).
  static absl::StatusOr<std::unique_ptr<KernelTimeProfiler>> Start(int device);
  ~KernelTimeProfiler();
  KernelTimeProfiler(const KernelTimeProfiler&) = delete;
  KernelTimeProfiler& operator=(const KernelTimeProfiler&) = delete;

  struct Durations {
    double seconds = 0;  // the kernels' gpu__time_duration, summed
    int kernels = 0;     // how many kernels the launch ran (0: none, e.g. a memcpy)
  };
  // Runs `launch` (enqueues work, returns a cudaError_t as int) under the profiler and waits for
  // the device; UNAVAILABLE with the failing step when the profiler cannot measure it.
  absl::StatusOr<Durations> Measure(const std::function<int()>& launch);

 private:
  struct Impl;
  explicit KernelTimeProfiler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_CUPTI_PROFILER_H_
