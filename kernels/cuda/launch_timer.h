// Times a sample's launches on one stream by the run's TimerStrategy (kernels/backend.h): CUDA
// events behind nvbench's blocking kernel, events on an idle stream, CUPTI activity records, or
// the gpu__time_duration counter. Host-only header. Not thread-safe: one session's.
#ifndef GPUBENCH_KERNELS_CUDA_LAUNCH_TIMER_H_
#define GPUBENCH_KERNELS_CUDA_LAUNCH_TIMER_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/cuda/cupti_activity.h"
#include "kernels/cuda/cupti_profiler.h"
#include "kernels/cuda/timing.h"
#include "kernels/timed_check.h"

namespace gpubench::cuda {

class LaunchTimer {
 public:
  // A timer on `device` (made current), with the strategy kBackendClock.
  static absl::StatusOr<std::unique_ptr<LaunchTimer>> Create(int device);
  ~LaunchTimer();
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;

  // Chooses how the samples that follow are timed; starts or stops CUPTI as needed. Ends the
  // window audit (AuditWindows).
  // FAILED_PRECONDITION saying why where CUPTI cannot start (another tool holds it).
  absl::Status SetStrategy(TimerStrategy strategy);
  TimerStrategy strategy() const { return strategy_; }

  // Session::AuditWindows: from now until the next SetStrategy, samples record their windows'
  // activity (SampleRecord::audited, window). CUPTI timer: every sample's activity records;
  // gpu_time: every sample's range-profiler kernel count, since it holds CUPTI; events: CUPTI
  // started only around the samples a WindowAuditChooser seeded with `run_seed` picks, which are
  // audit-only (tracing slows them); profile launches (kUnblocked): refused, CUPTI is left to
  // the profiler attached.
  absl::StatusOr<WindowSource> AuditWindows(uint64_t run_seed);

  // Times `count` calls of `launch` (each enqueues one launch on `stream`) as one sample, after
  // whatever the stream already holds (a cold sample's flush). `blocking`: the family lets the
  // launches wait behind the blocking kernel (KernelFamily::blocking_kernel). A blocking kernel
  // that timed out before the launches were queued is UNAVAILABLE with kBlockingTimeoutPayload;
  // a kernel-duration strategy that recorded nothing for the sample is UNAVAILABLE saying so
  // ("the profiler measured no kernel", "CUPTI returned no complete activity record").
  absl::StatusOr<SampleRecord> Time(cudaStream_t stream, int count, bool blocking,
                                    const std::function<absl::Status()>& launch);

  // Lets a blocking kernel that is still spinning end at once (before a stream is destroyed).
  void Release();

 private:
  explicit LaunchTimer(int device) : device_(device) {}
  absl::Status LaunchAll(int count, const std::function<absl::Status()>& launch);
  absl::StatusOr<SampleRecord> TimeEvents(cudaStream_t stream, int count, bool blocking,
                                          const std::function<absl::Status()>& launch);
  absl::StatusOr<SampleRecord> TimeCounter(cudaStream_t stream, int count,
                                           const std::function<absl::Status()>& launch);
  absl::StatusOr<double> ElapsedSeconds();

  const int device_;
  TimerStrategy strategy_ = TimerStrategy::kBackendClock;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  volatile BlockingState* state_ = nullptr;            // host view of the mapped state
  BlockingState* device_state_ = nullptr;              // device view of the same memory
  std::unique_ptr<ActivityRecorder> recorder_;         // kActivityRecords
  std::unique_ptr<KernelTimeProfiler> time_profiler_;  // kTimeCounter
  uint64_t region_ = 0;  // of the last sample's timed launches (recorder_ set)
  bool audit_ = false;   // AuditWindows: fill SampleRecord::window
  // AuditWindows under the events timer: which samples are traced (recorder_ only around them).
  std::optional<WindowAuditChooser> audit_chooser_;
};

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_LAUNCH_TIMER_H_
