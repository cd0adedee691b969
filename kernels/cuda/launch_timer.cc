#include "kernels/cuda/launch_timer.h"

#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"

namespace gpubench::cuda {
namespace {

// A blocking kernel that waits longer than this means the host could not queue the timed
// launches in time: the sample would include launch latency, so it is rejected.
constexpr uint64_t kBlockingTimeoutNs = 2'000'000'000;
// Least wait of the blocking kernel, which reads the SM clock while it holds the stream:
// %globaltimer ticks about every microsecond, so 20 us gives the clock to about 5%, ample for the
// 75% throttling threshold. The host's queuing of the timed launches usually takes longer anyway.
constexpr uint64_t kClockWindowNs = 20'000;

}  // namespace

absl::StatusOr<std::unique_ptr<LaunchTimer>> LaunchTimer::Create(int device) {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  std::unique_ptr<LaunchTimer> timer(new LaunchTimer(device));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&timer->start_));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&timer->stop_));
  // The blocking kernel's state in pinned, mapped host memory: the host releases the kernel by
  // writing `release` while the stream is held, and reads the clock it measured afterwards.
  void* state = nullptr;
  CUDA_RETURN_IF_ERROR(cudaHostAlloc(&state, sizeof(BlockingState), cudaHostAllocMapped));
  timer->state_ = static_cast<volatile BlockingState*>(state);
  *const_cast<BlockingState*>(timer->state_) = BlockingState{};
  void* device_state = nullptr;
  CUDA_RETURN_IF_ERROR(cudaHostGetDevicePointer(&device_state, state, 0));
  timer->device_state_ = static_cast<BlockingState*>(device_state);
  return timer;
}

LaunchTimer::~LaunchTimer() {
  recorder_.reset();
  time_profiler_.reset();
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
  if (state_ != nullptr) cudaFreeHost(const_cast<BlockingState*>(state_));
}

void LaunchTimer::Release() {
  if (state_ != nullptr) state_->release = 1;
}

absl::Status LaunchTimer::SetStrategy(TimerStrategy strategy) {
  recorder_.reset();
  time_profiler_.reset();
  strategy_ = TimerStrategy::kBackendClock;
  audit_ = false;
  audit_chooser_.reset();
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));  // CUPTI works on the current context
  if (strategy == TimerStrategy::kTimeCounter) {
    ASSIGN_OR_RETURN(time_profiler_, KernelTimeProfiler::Start(device_));
  } else if (strategy == TimerStrategy::kActivityRecords) {
    ASSIGN_OR_RETURN(recorder_, ActivityRecorder::Start());
  }
  strategy_ = strategy;
  return absl::OkStatus();
}

absl::StatusOr<WindowSource> LaunchTimer::AuditWindows(uint64_t run_seed) {
  switch (strategy_) {
    case TimerStrategy::kTimeCounter:
      audit_ = true;
      return WindowSource::kRangeProfiler;
    case TimerStrategy::kUnblocked:
      return absl::FailedPreconditionError(
          "profile launches leave CUPTI to a profiler that may be attached (ncu, nsys)");
    case TimerStrategy::kBackendClock: {
      // Started once here so that a CUPTI that cannot record says so before sampling; then only
      // around the chosen samples (Time).
      CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));  // CUPTI works on the current context
      ASSIGN_OR_RETURN(recorder_, ActivityRecorder::Start());
      recorder_.reset();
      audit_chooser_.emplace(run_seed);
      break;
    }
    case TimerStrategy::kActivityRecords:
      break;
  }
  audit_ = true;
  return WindowSource::kActivityRecords;
}

absl::StatusOr<SampleRecord> LaunchTimer::Time(cudaStream_t stream, int count, bool blocking,
                                               const std::function<absl::Status()>& launch) {
  switch (strategy_) {
    case TimerStrategy::kTimeCounter:
      return TimeCounter(stream, count, launch);
    case TimerStrategy::kUnblocked:
      return TimeEvents(stream, count, /*blocking=*/false, launch);
    case TimerStrategy::kBackendClock:
    case TimerStrategy::kActivityRecords:
      break;
  }
  // Events with a window audit: CUPTI traces only the chosen samples. One that cannot start now
  // is timed untraced, as a statistics sample.
  bool audit_only = false;
  if (audit_chooser_.has_value() && audit_chooser_->Next()) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    absl::StatusOr<std::unique_ptr<ActivityRecorder>> recorder = ActivityRecorder::Start();
    if (recorder.ok()) {
      recorder_ = *std::move(recorder);
      audit_only = true;
    }
  }
  absl::StatusOr<SampleRecord> record = TimeEvents(stream, count, blocking, launch);
  if (recorder_ == nullptr) return record;
  // Taken even from a failed sample, so that no region's records are left behind.
  std::optional<ActivityRecorder::Span> span = recorder_->TakeSpan(region_);
  if (audit_only) recorder_.reset();
  if (!record.ok()) return record.status();
  record->audited = audit_;
  record->audit_only = audit_only;
  if (audit_ && span.has_value()) {
    record->window = WindowActivity{.operations = span->operations,
                                    .kernels = span->kernels,
                                    .foreign_kernels = span->foreign_kernels,
                                    .seconds = static_cast<double>(span->nanoseconds) * 1e-9};
  }
  if (strategy_ != TimerStrategy::kActivityRecords) return record;
  if (!span.has_value()) {
    return absl::UnavailableError("CUPTI returned no complete activity record");
  }
  record->event_seconds = record->seconds;
  record->seconds = static_cast<double>(span->nanoseconds) * 1e-9;
  return record;
}

// The timed launches; with activity records, inside a CUPTI region (the events, the flush and
// the blocking kernel stay outside it).
absl::Status LaunchTimer::LaunchAll(int count, const std::function<absl::Status()>& launch) {
  if (recorder_ != nullptr) region_ = recorder_->BeginRegion();
  absl::Status launched = absl::OkStatus();
  for (int i = 0; i < count && launched.ok(); ++i) launched = launch();
  if (recorder_ != nullptr) recorder_->EndRegion();
  return launched;
}

absl::StatusOr<double> LaunchTimer::ElapsedSeconds() {
  float ms = 0;
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_));
  return ms * 1e-3;
}

// Blocking: holds the stream with the blocking kernel, queues the start event, the launches and
// the stop event, then releases the stream; the kernel's clock reading is the record's clock.
// Unblocked: the events around the launches on an idle stream (times include its launch latency).
absl::StatusOr<SampleRecord> LaunchTimer::TimeEvents(cudaStream_t stream, int count, bool blocking,
                                                     const std::function<absl::Status()>& launch) {
  if (blocking) {
    state_->release = 0;
    state_->timed_out = 0;
    state_->clock_cycles = 0;
    state_->clock_ns = 0;
    CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(
        LaunchBlockingKernel(device_state_, kClockWindowNs, kBlockingTimeoutNs, stream)));
  }
  // Every early return below releases the blocking kernel (it would spin to its timeout).
  absl::Cleanup release = [this] { Release(); };
  CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, stream));
  const absl::Status launched = LaunchAll(count, launch);
  CUDA_RETURN_IF_ERROR(cudaEventRecord(stop_, stream));
  std::move(release).Invoke();
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_));
  RETURN_IF_ERROR(launched);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  SampleRecord record;
  if (blocking) {
    if (state_->timed_out != 0) {
      absl::Status timed_out = absl::UnavailableError(
          "the blocking kernel timed out before the timed launches were queued: a profiler that "
          "serializes launches (ncu) is attached, or the host is too slow or overloaded for a "
          "clean sample");
      timed_out.SetPayload(kBlockingTimeoutPayload, absl::Cord("1"));
      return timed_out;
    }
    if (state_->clock_ns > 0) {
      record.clock_hz =
          static_cast<double>(state_->clock_cycles) / static_cast<double>(state_->clock_ns) * 1e9;
    }
  }
  ASSIGN_OR_RETURN(record.seconds, ElapsedSeconds());
  return record;
}

// Under the gpu__time_duration profiler (no blocking kernel: the profiler waits for every kernel
// as it is launched): the kernels' summed durations, the events around them kept.
absl::StatusOr<SampleRecord> LaunchTimer::TimeCounter(cudaStream_t stream, int count,
                                                      const std::function<absl::Status()>& launch) {
  // What the stream holds (a flush) completes before the profiled window: only the launches are
  // a range.
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  absl::Status launched = absl::OkStatus();
  absl::StatusOr<KernelTimeProfiler::Durations> durations = time_profiler_->Measure([&]() -> int {
    if (cudaError_t e = cudaEventRecord(start_, stream); e != cudaSuccess) return e;
    launched = LaunchAll(count, launch);
    return cudaEventRecord(stop_, stream);
  });
  RETURN_IF_ERROR(launched);
  if (!durations.ok()) return durations.status();
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  if (durations->kernels == 0) {
    return absl::UnavailableError("the profiler measured no kernel");
  }
  SampleRecord record;
  record.seconds = durations->seconds;
  ASSIGN_OR_RETURN(record.event_seconds, ElapsedSeconds());
  if (audit_) {
    record.audited = true;
    // The profiler's ranges are kernels only: it sees no copy or memset, nor who launched what.
    record.window = WindowActivity{.operations = durations->kernels,
                                   .kernels = durations->kernels,
                                   .seconds = durations->seconds};
  }
  return record;
}

}  // namespace gpubench::cuda
