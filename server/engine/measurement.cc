#include "server/engine/measurement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "kernels/host_cross_check.h"
#include "kernels/reference.h"
#include "server/engine/explain.h"
#include "server/engine/run_memory.h"
#include "server/engine/stopping.h"

namespace gpubench {
namespace {

std::string NewRunId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("%016x", rng());
}

// Pops the session's range on every return path.
class ScopedRange {
 public:
  ScopedRange(Session& session, const std::string& name) : session_(session) {
    session_.PushRange(name);
  }
  ~ScopedRange() { session_.PopRange(); }

 private:
  Session& session_;
};

// Sets the session's timer for a phase of the run and returns it to the backend's clock on every
// return path (no CUPTI recording outlives the phase, a window audit's included).
class TimerScope {
 public:
  TimerScope(Session& session, TimerStrategy strategy) : session_(session), strategy_(strategy) {}
  absl::Status Start() { return session_.SetTimer(strategy_); }
  absl::StatusOr<WindowSource> AuditWindows() {
    audited_ = true;
    return session_.AuditWindows();
  }
  ~TimerScope() {
    if (strategy_ != TimerStrategy::kBackendClock || audited_) {
      session_.SetTimer(TimerStrategy::kBackendClock).IgnoreError();
    }
  }

 private:
  Session& session_;
  const TimerStrategy strategy_;
  bool audited_ = false;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Profile mode: `runs` launches, each timed alone without the blocking kernel; no stopping logic,
// no throttle check. Appends per-launch seconds to `samples`; sets the measurement fields of
// `result` with `reason` as the stop reason.
absl::Status RunProfileLaunches(Session& session, const RunSpec& spec, int runs,
                                const CancelledFn& cancelled, const std::string& reason,
                                RunResult* result, std::vector<double>* samples) {
  ScopedRange range(session, "profile launches");
  // Profile launches are timed by the backend's own clock (CUDA events), never by CUPTI: under
  // ncu / nsys CUPTI is the profiler's.
  if (result->timer == SampleTimer::kCuptiActivity ||
      result->timer == SampleTimer::kGpuTimeDuration) {
    result->timer = SampleTimer::kCudaEvent;
  }
  if (spec.verify_timed_samples) {
    // For the same reason no window is recorded (a fallback drops what sampling had).
    result->window_audit =
        WindowAudit{.unavailable_reason =
                        "profile launches (each alone on an idle stream) leave CUPTI to a "
                        "profiler that may be attached (ncu, nsys)"};
  }
  TimerScope timer(session, TimerStrategy::kUnblocked);
  RETURN_IF_ERROR(timer.Start());
  const auto wall_start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    if (cancelled()) return absl::CancelledError("run cancelled during profile launches");
    ASSIGN_OR_RETURN(const SampleRecord sample, spec.cache_mode == CacheMode::kCold
                                                    ? session.ColdSample()
                                                    : session.HotSample(1));
    samples->push_back(sample.seconds);
  }
  result->profile_mode = true;
  result->hot_batch_size = 1;
  result->throttled_samples = 0;
  result->low_clock_samples = 0;
  result->duty_cycle = 0;  // unpaced, each launch timed alone
  result->min_clock_hz.reset();
  result->max_clock_hz.reset();
  result->sampling_wall_seconds = SecondsSince(wall_start);
  result->samples_taken = runs;
  result->measured_seconds = 0;
  for (double v : *samples) result->measured_seconds += v;
  result->stop_rule = StopRule::kProfileRuns;
  result->stop_reason = reason;
  return absl::OkStatus();
}

SamplingStopper MakeStopper(const MeasurementOptions& m) {
  return SamplingStopper(
      {.min_samples = m.min_samples,
       .max_samples = m.max_samples,
       .timeout_seconds = m.timeout_seconds,
       .max_noise = m.max_noise,
       .min_time_seconds = m.min_time_seconds},
      std::make_unique<StdRelCriterion>(StdRelCriterion::Params{
          .max_noise = m.max_noise, .min_time_seconds = m.min_time_seconds}));
}

// The timer of this run's samples: kernel durations where the timer choice is cupti (activity
// records) or gpu_time (the duration counter) on a backend that has them, else the backend's own
// clock. Sets result->timer and the note that goes with it.
TimerStrategy ChooseTimer(const RunSpec& spec, RunResult* result) {
  const TimerChoice choice = spec.measurement.timer;
  // Auto is CUDA events: on the H200 (2026-11-30, bench/results/2026-11-30-h200-session3.md)
  // CUPTI's kernel tracing slowed the seed add_f32 (one element a thread, 2^28 threads) by 6% at
  // 256Mi and 2% at 16Mi, and put the other kernels 1.1 us under Nsight Compute's duration, while
  // events stayed within 0.2% of ncu at 256Mi. Kernel durations are for who asks (cupti).
  if (result->timer == SampleTimer::kCpuClock || !UsesCupti(choice)) {
    return TimerStrategy::kBackendClock;
  }
  if (choice == TimerChoice::kGpuTime) {
    result->timer = SampleTimer::kGpuTimeDuration;
    // Without the blocking kernel no SM clock is read: say that throttling went unchecked.
    result->notes.push_back(
        "timer gpu_time: each launch ran alone under CUPTI's range profiler (no blocking kernel), "
        "so no SM clock was read and throttled samples were not detected; the samples are the "
        "kernels' gpu__time_duration counter, Nsight Compute's Duration");
    return TimerStrategy::kTimeCounter;
  }
  result->timer = SampleTimer::kCuptiActivity;
  return TimerStrategy::kActivityRecords;
}

// A sample error under a kernel-duration timer, said in the terms of the request.
absl::Status DurationSampleError(const absl::Status& status, const RunSpec& spec, int sample) {
  if (!absl::IsUnavailable(status) || IsBlockingTimeout(status) || IsDeviceLost(status)) {
    return status;
  }
  const bool counter = spec.measurement.timer == TimerChoice::kGpuTime;
  return absl::UnavailableError(absl::StrCat(
      "measurement.timer = ", TimerChoiceName(spec.measurement.timer), ": ", status.message(),
      " in sample ", sample,
      counter ? absl::StrCat(" (", spec.kernel->name, "'s launch may run none, e.g. a memcpy)")
              : "",
      " (timer auto or events times with CUDA events)"));
}

// max_duty pacing: sleeps until `timed_seconds` (every sample's timed seconds so far) is at most
// max_duty x the loop's wall seconds, never past the run's timeout, in slices short enough that
// cancellation is seen. Returns CANCELLED when the run is cancelled while pacing.
absl::Status PaceToDuty(const MeasurementOptions& m, double timed_seconds,
                        std::chrono::steady_clock::time_point wall_start,
                        const CancelledFn& cancelled) {
  if (m.max_duty <= 0) return absl::OkStatus();
  constexpr double kSliceSeconds = 0.02;
  const double until = std::min(timed_seconds / m.max_duty, m.timeout_seconds);
  for (double left = until - SecondsSince(wall_start); left > 0;
       left = until - SecondsSince(wall_start)) {
    if (cancelled()) return absl::CancelledError("run cancelled while pacing to max_duty");
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, kSliceSeconds)));
  }
  return absl::OkStatus();
}

// The sampling loop: samples fed one at a time to the stopper, throttled samples discarded with a
// recovery pause. Sets the measurement fields of `result`; appends kept per-launch seconds to
// `samples`. A blocking-kernel timeout before any kept sample is returned as is (the caller falls
// back to profile mode). With kernel durations the samples are those and the events' times of the
// same samples are kept for result->event_median_seconds; a sample without a duration record ends
// the run UNAVAILABLE (never a mix of clocks).
absl::Status Sample(Session& session, const RunSpec& spec, int batch, const CancelledFn& cancelled,
                    RunResult* result, std::vector<double>* samples) {
  const MeasurementOptions& m = spec.measurement;
  ScopedRange range(session, "samples");
  const TimerStrategy strategy = ChooseTimer(spec, result);
  const bool durations = strategy != TimerStrategy::kBackendClock;
  TimerScope timer(session, strategy);
  if (absl::Status started = timer.Start(); !started.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "measurement.timer = ", TimerChoiceName(m.timer), ", but kernel durations cannot be ",
        strategy == TimerStrategy::kTimeCounter
            ? "read from the gpu__time_duration counter: "
            : "recorded: ",
        started.message(), " (timer auto or events times with CUDA events)"));
  }
  // Windows recorded for the integrity checks (user kernels): what each held, and beside the
  // kept samples the kernels' own durations, per launch.
  WindowAudit* audit = nullptr;
  std::vector<double> audit_kernel_seconds;
  std::vector<double> audit_timer_seconds;
  if (spec.verify_timed_samples) {
    audit = &result->window_audit.emplace();
    audit->launches_per_window = batch;
    if (absl::StatusOr<WindowSource> source = timer.AuditWindows(); source.ok()) {
      audit->source = *source;
    } else {
      audit->unavailable_reason = std::string(source.status().message());
      audit = nullptr;
    }
  }
  std::vector<double> event_samples;  // per-launch, while durations are the samples
  SamplingStopper stopper = MakeStopper(m);
  const auto wall_start = std::chrono::steady_clock::now();
  const double default_clock = result->device.sm_clock_hz;
  const double threshold = m.throttle_threshold.value_or(kThrottleThreshold);
  double recovery_delay = kThrottleRecoveryDelaySeconds;
  int throttled_in_a_row = 0;
  double timed_seconds = 0;  // every sample's, kept or discarded: the duty cycle's numerator
  StopRule rule = StopRule::kNone;
  while (rule == StopRule::kNone) {
    if (cancelled()) return absl::CancelledError("run cancelled while sampling");
    absl::StatusOr<SampleRecord> sample =
        spec.cache_mode == CacheMode::kCold ? session.ColdSample() : session.HotSample(batch);
    if (!sample.ok()) {
      return durations ? DurationSampleError(sample.status(), spec, stopper.taken() + 1)
                       : sample.status();
    }
    const double device_seconds = sample->seconds;
    const double event_seconds = sample->event_seconds.value_or(sample->seconds) / batch;
    const double seconds = device_seconds / batch;
    timed_seconds += device_seconds;
    if (audit != nullptr && sample->audited) TallyWindow(stopper.taken() + 1, sample->window, audit);
    if (sample->audit_only) {
      // Traced for the audit, so slower than the others: its window counts, its time is compared
      // with its own kernel's duration only.
      if (audit != nullptr) {
        ++audit->audit_only_samples;
        if (sample->window.has_value()) {
          audit_kernel_seconds.push_back(sample->window->seconds / batch);
          audit_timer_seconds.push_back(seconds);
        }
      }
      stopper.AddDiscarded();
      RETURN_IF_ERROR(PaceToDuty(m, timed_seconds, wall_start, cancelled));
      rule = stopper.Decide(SecondsSince(wall_start));
      continue;
    }
    bool throttled = false;
    if (const std::optional<double> clock = sample->clock_hz; clock.has_value()) {
      result->min_clock_hz = std::min(result->min_clock_hz.value_or(*clock), *clock);
      result->max_clock_hz = std::max(result->max_clock_hz.value_or(*clock), *clock);
      if (default_clock > 0 && *clock < kThrottleThreshold * default_clock) {
        ++result->low_clock_samples;
      }
      throttled = default_clock > 0 && *clock < threshold * default_clock;
    }
    if (throttled) {
      ++result->throttled_samples;
      stopper.AddDiscarded();
      // nvbench: pause so the GPU can recover; lengthen the pause while throttling persists.
      if (++throttled_in_a_row > 2) recovery_delay += std::min(recovery_delay * 1.5, 0.5);
      std::this_thread::sleep_for(std::chrono::duration<double>(recovery_delay));
    } else {
      throttled_in_a_row = 0;
      samples->push_back(seconds);
      if (durations && result->timer == SampleTimer::kCuptiActivity) {
        event_samples.push_back(event_seconds);
      }
      if (audit != nullptr && sample->window.has_value()) {
        audit_kernel_seconds.push_back(sample->window->seconds / batch);
        audit_timer_seconds.push_back(seconds);
      }
      stopper.AddKept(seconds, device_seconds);
    }
    RETURN_IF_ERROR(PaceToDuty(m, timed_seconds, wall_start, cancelled));
    rule = stopper.Decide(SecondsSince(wall_start));
  }
  if (durations && !event_samples.empty()) {
    result->event_median_seconds = ComputeStatistics(event_samples).median_seconds;
    const double duration_median = ComputeStatistics(*samples).median_seconds;
    // Physically a kernel's span lies inside the events around it: more is a misattribution.
    if (duration_median > *result->event_median_seconds * 1.005) {
      result->notes.push_back(absl::StrFormat(
          "cross-check: the CUPTI median (%.3f us) exceeds the CUDA-event median (%.3f us) of the "
          "same samples; the activity records may include work outside the timed launches",
          duration_median * 1e6, *result->event_median_seconds * 1e6));
    }
  }
  if (audit != nullptr && !audit_kernel_seconds.empty()) {
    audit->compared_samples = static_cast<int64_t>(audit_kernel_seconds.size());
    audit->kernel_median_seconds = ComputeStatistics(audit_kernel_seconds).median_seconds;
    audit->timer_median_seconds = ComputeStatistics(audit_timer_seconds).median_seconds;
  }
  result->stop_rule = rule;
  result->stop_reason = stopper.reason();
  result->noise_reached = rule == StopRule::kNoiseTarget;
  result->measured_seconds = stopper.device_seconds();
  result->samples_taken = stopper.taken();
  result->sampling_wall_seconds = SecondsSince(wall_start);
  if (result->sampling_wall_seconds > 0) {
    result->duty_cycle = timed_seconds / result->sampling_wall_seconds;
  }
  if (m.max_duty > 0 && result->duty_cycle > m.max_duty) {
    result->notes.push_back(absl::StrFormat(
        "duty cycle %.4f above max_duty %g: the timeout (%g s) cut the last pacing pause short",
        result->duty_cycle, m.max_duty, m.timeout_seconds));
  }
  return absl::OkStatus();
}

// Warm-up in short chunks (about 50 ms each), so that cancellation (client gone, deadline,
// shutdown) is seen between chunks, and bounded in wall time as well as in count.
absl::Status BoundedWarmup(Session& session, int launches, double max_seconds,
                           const CancelledFn& cancelled) {
  const auto start = std::chrono::steady_clock::now();
  int done = 0;
  int chunk = 1;
  while (done < launches && SecondsSince(start) < max_seconds) {
    if (cancelled()) return absl::CancelledError("run cancelled during warm-up");
    const int now = std::min(chunk, launches - done);
    const auto before = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(session.Warmup(now));
    done += now;
    const double per_launch = std::max(SecondsSince(before) / now, 1e-7);
    chunk = static_cast<int>(std::clamp(0.05 / per_launch, 1.0, 1024.0));
  }
  if (cancelled()) return absl::CancelledError("run cancelled during warm-up");
  return absl::OkStatus();
}

// The peak of the family's metric on the run's device, when known: the family's own, else the
// device's theoretical DRAM bandwidth for a bandwidth family.
std::optional<double> PeakOf(const KernelVariant& kernel, const DeviceInfo& device) {
  const KernelFamily& family = *kernel.family;
  if (family.peak != nullptr) return family.peak(device, kernel);
  if (family.metric == Metric::kBytesPerSecond && device.peak_bandwidth_bytes_per_second > 0) {
    return device.peak_bandwidth_bytes_per_second;
  }
  return std::nullopt;
}

// Bytes, operations and their rates from the family's declaration at the run's shape, over the
// median (and mean) per-launch time; percent of the family's peak for its metric.
void SetThroughput(const KernelVariant& kernel, const RunShape& shape, RunResult* result) {
  const double median = result->stats.median_seconds;
  result->metric = kernel.family->metric;
  result->bytes_moved = BytesMoved(kernel, shape);
  result->bandwidth_bytes_per_second = result->bytes_moved / median;
  result->bandwidth_mean_bytes_per_second = result->bytes_moved / result->stats.mean_seconds;
  result->elements_per_second = shape.elements / median;
  result->operation_unit = std::string(kernel.family->operation_unit);
  result->operations = OperationsOf(kernel, shape);
  if (result->operations > 0) {
    result->operations_per_second = result->operations / median;
    result->seconds_per_operation = median / result->operations;
  }
  const std::optional<double> peak = PeakOf(kernel, result->device);
  if (peak.has_value() && *peak > 0) {
    result->peak = *peak;
    switch (result->metric) {
      case Metric::kBytesPerSecond:
        result->percent_of_peak = 100.0 * result->bandwidth_bytes_per_second / *peak;
        break;
      case Metric::kOperationsPerSecond:
        result->percent_of_peak = 100.0 * result->operations_per_second / *peak;
        break;
      case Metric::kSecondsPerOperation:  // a latency has no peak to be a percent of
        break;
    }
  }
}

// Initialize: the result's identity, the spec and the device.
RunResult StartResult(const Backend& backend, const RunSpec& spec, const DeviceInfo& device) {
  RunResult result;
  result.run_id = NewRunId();
  result.spec = spec;
  result.backend = std::string(backend.name());
  result.started_at = absl::Now();
  result.device = device;
  const BackendCapabilities can = backend.capabilities();
  result.timer = can.host_clock ? SampleTimer::kCpuClock : SampleTimer::kCudaEvent;
  // The request is honoured as far as it can be (echoed, validated); say what changed nothing.
  const MeasurementOptions& m = spec.measurement;
  if (!can.placement_pads && m.placement_pad_bytes > 0) {
    result.notes.push_back(absl::StrCat("placement_pad_bytes = ", m.placement_pad_bytes,
                                        " has no effect on the ", backend.name(),
                                        " backend: it pads only CUDA device buffers"));
  }
  if (!can.placement_copies && m.placements > 1) {
    result.notes.push_back(absl::StrCat("placements = ", m.placements, " has no effect on the ",
                                        backend.name(),
                                        " backend: it rotates only CUDA device buffers"));
  }
  if (!can.flush_and_stream_choices &&
      (m.l2_flush == L2Flush::kMemset ||
       m.stream.value_or(StreamKind::kNonBlocking) != StreamKind::kNonBlocking)) {
    result.notes.push_back(absl::StrCat(
        "l2_flush = ", L2FlushName(m.l2_flush.value_or(L2Flush::kClean)),
        " and stream = ", StreamKindName(m.stream.value_or(StreamKind::kNonBlocking)),
        " have no effect on the ", backend.name(),
        " backend: they choose the CUDA flush and stream"));
  }
  return result;
}

// Hot mode: launches per sample, sized from one launch timed after warm-up (1 when cold, or when
// the blocking kernel timed out: the sampling loop then falls back to profile mode).
absl::StatusOr<int> HotBatchSize(Session& session, const RunSpec& spec) {
  if (spec.cache_mode != CacheMode::kHot) return 1;
  // gpu_time: the profiler serializes every launch, so a batch gains nothing over one launch.
  if (spec.measurement.timer == TimerChoice::kGpuTime) return 1;
  // User kernels: every timed launch must start from poisoned outputs (PrepareTimedCheck), which
  // a batch's later launches would not; a kernel could skip the work on them.
  if (spec.verify_timed_samples) return 1;
  absl::StatusOr<SampleRecord> one = session.HotSample(1);
  if (one.ok()) {
    return static_cast<int>(std::clamp(
        std::ceil(kHotBatchTargetSeconds / std::max(one->seconds, 1e-9)), 1.0,
        static_cast<double>(kMaxHotBatch)));
  }
  if (IsBlockingTimeout(one.status())) return 1;
  return one.status();
}

// Warm-up, then samples until a stopping rule; profile launches instead when the blocking kernel
// times out before any sample was kept.
absl::Status MeasureTimed(Session& session, const RunSpec& spec, const CancelledFn& cancelled,
                          RunResult* result, std::vector<double>* samples) {
  const MeasurementOptions& m = spec.measurement;
  {
    ScopedRange range(session, "warm-up");
    RETURN_IF_ERROR(BoundedWarmup(session, m.warmup_launches, spec.max_warmup_seconds, cancelled));
  }
  ASSIGN_OR_RETURN(result->hot_batch_size, HotBatchSize(session, spec));
  absl::Status sampled = Sample(session, spec, result->hot_batch_size, cancelled, result, samples);
  if (!IsBlockingTimeout(sampled) || !samples->empty()) return sampled;
  // A serializing profiler (ncu) never lets the queued launches overlap the blocking kernel:
  // measure the way profile mode does instead of failing.
  const int runs = std::max(1, m.min_samples);
  result->notes.push_back(absl::StrCat(
      "the blocking kernel timed out (", sampled.message(), "); fell back to profile mode: ",
      runs, " launches (min_samples) without the blocking kernel, each timed alone. Under a "
      "profiler the times include its overhead; set measurement.profile_runs (gpubench "
      "--profile_runs) to ask for this mode directly"));
  return RunProfileLaunches(
      session, spec, runs, cancelled,
      absl::StrCat("profile mode (fallback): ", runs, " launches timed without the blocking kernel"),
      result, samples);
}

// Trials: profile mode's fixed launches (no warm-up, so the first launches a profiler sees are
// the timed ones), or the timed measurement.
absl::Status TakeSamples(Session& session, const RunSpec& spec, const CancelledFn& cancelled,
                         RunResult* result, std::vector<double>* samples) {
  const MeasurementOptions& m = spec.measurement;
  if (m.profile_runs > 0) {
    return RunProfileLaunches(
        session, spec, m.profile_runs, cancelled,
        absl::StrCat("profile mode: ", m.profile_runs,
                     " launches, each timed alone without the blocking kernel (times include "
                     "launch latency; for profilers, not for reporting)"),
        result, samples);
  }
  return MeasureTimed(session, spec, cancelled, result, samples);
}

// Summaries: statistics over the kept samples (once), and the throughput they give (bytes and
// operations from the family's declaration).
absl::Status Summarize(const RunSpec& spec, const std::vector<double>& samples,
                       RunResult* result) {
  const MeasurementOptions& m = spec.measurement;
  if (samples.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "all ", result->samples_taken, " samples were taken while the SM clock was throttled below ",
        m.throttle_threshold.value_or(kThrottleThreshold) * 100,
        "% of its default; no result (measurement.throttle_threshold = 0 keeps every sample)"));
  }
  result->stats = ComputeStatistics(samples);  // the full statistics, once
  result->sample_count = static_cast<int>(samples.size());
  result->noise_known = samples.size() >= 2;
  result->below_min_samples = !result->profile_mode && result->sample_count < m.min_samples;
  result->noise_reached = result->noise_reached && result->noise_known && !result->below_min_samples;
  if (m.keep_samples) result->sample_seconds = StrideSamples(samples, kMaxReturnedSamples);

  SetThroughput(*spec.kernel, spec.shape, result);
  return absl::OkStatus();
}

// Verification: one more launch, its output checked against the reference. Where the session
// can (the CUDA backend, a family with a device reference), every element is compared on the
// device and the host reference cross-checks a sample (kernels/host_cross_check.h); otherwise
// the outputs are read back and compared on the host (all elements, or GEMM's sample).
absl::Status VerifyOutput(Session& session, const RunSpec& spec, HostData& data,
                          const CancelledFn& cancelled, ParallelPool* pool, RunResult* result) {
  if (!spec.verify) return absl::OkStatus();
  if (cancelled()) return absl::CancelledError("run cancelled before verification");
  if (session.CanVerifyOnDevice()) {
    const SampleIndices samples = HostSampleIndices(*spec.kernel, spec.shape, spec.seed);
    ASSIGN_OR_RETURN(const DeviceVerifyReport report, session.VerifyOnDevice(samples));
    ASSIGN_OR_RETURN(result->verification,
                     CombineDeviceVerification(*spec.kernel, data, samples, report));
    result->output_hash =
        OutputHashFromChunks(*spec.kernel, report.chunk_hashes, report.hashed_bytes);
    return absl::OkStatus();
  }
  // The host reference reads the inputs whole: make the copies MeasureRun skipped (a backend that
  // generates them on the device never reads them, so filling them now changes nothing there).
  FillSkippedHostBuffers(*spec.kernel, &data, pool);
  BufferContents outputs;
  RETURN_IF_ERROR(session.RunOnceAndRead(&outputs));
  result->verification = Verify(*spec.kernel, data, outputs, pool);
  result->output_hash = OutputHash(*spec.kernel, spec.shape, outputs, pool);
  return absl::OkStatus();
}

// Occupancy: the calculator's arithmetic on the compiled kernel's resources, when known.
void ComputeTheoreticalOccupancy(const RunSpec& spec, RunResult* result) {
  const KernelResources& res = result->resources;
  const DeviceInfo& d = result->device;
  if (!res.available) return;
  OccupancyInputs in;
  in.max_threads_per_multiprocessor = d.max_threads_per_multiprocessor;
  in.max_blocks_per_multiprocessor = d.max_blocks_per_multiprocessor;
  in.registers_per_multiprocessor = d.registers_per_multiprocessor;
  in.registers_per_block_limit = d.registers_per_block;
  in.shared_memory_per_multiprocessor_bytes =
      static_cast<int>(d.shared_memory_per_multiprocessor_bytes);
  in.reserved_shared_memory_per_block_bytes = d.reserved_shared_memory_per_block_bytes;
  in.warp_size = d.warp_size;
  // Shared memory is allocated in 128-byte units from sm_80 on, 256 before (occupancy calculator).
  in.shared_memory_allocation_unit = d.compute_capability_major >= 8 ? 128 : 256;
  in.block_size = spec.geometry.block_size;
  in.registers_per_thread = res.registers_per_thread;
  in.shared_memory_per_block_bytes = res.static_shared_bytes + spec.geometry.dynamic_shared_bytes;
  result->occupancy = ComputeOccupancy(in);
  if (d.multiprocessor_count > 0 && result->occupancy->active_blocks_per_multiprocessor > 0) {
    result->waves = static_cast<double>(spec.geometry.grid_size) /
                    (d.multiprocessor_count * result->occupancy->active_blocks_per_multiprocessor);
  }
}

// Achieved occupancy: a separate profiling pass, after all timed samples.
absl::Status CollectCounters(const Backend& backend, Session& session, const RunSpec& spec,
                             const CancelledFn& cancelled, RunResult* result) {
  if (spec.profile) {
    if (cancelled()) return absl::CancelledError("run cancelled before profiling");
    result->counters = session.ProfileCounters();
  } else if (!backend.capabilities().hardware_counters) {
    result->counters = session.ProfileCounters();  // no counters there; it only says why
  } else {
    result->counters.unavailable_reason =
        spec.profile_forbidden
            ? "profiling is disabled on this server (--allow_profiling=false)"
            : "not requested: set \"profile\": true (gpubench --profile) for a counter pass";
  }
  return absl::OkStatus();
}

}  // namespace

std::string RunRangeName(const RunSpec& spec, const std::string& run_id) {
  return absl::StrCat("gpubench ", spec.kernel->name, " n=", spec.elements, " ",
                      CacheModeName(spec.cache_mode), " run ", run_id);
}

std::vector<double> StrideSamples(const std::vector<double>& samples, int limit) {
  if (limit <= 0) return {};
  if (samples.size() <= static_cast<size_t>(limit)) return samples;
  std::vector<double> out;
  out.reserve(limit);
  const double step = static_cast<double>(samples.size()) / limit;
  for (int i = 0; i < limit; ++i) out.push_back(samples[static_cast<size_t>(i * step)]);
  return out;
}

absl::StatusOr<RunResult> MeasureRun(Backend& backend, const RunSpec& spec,
                                     const DeviceInfo& device, const CancelledFn& cancelled,
                                     ParallelPool* pool) {
  RunResult result = StartResult(backend, spec, device);
  absl::Time phase = absl::Now();
  auto lap = [&phase] {
    const absl::Time now = absl::Now();
    const double seconds = absl::ToDoubleSeconds(now - phase);
    phase = now;
    return seconds;
  };
  // At 256Mi that is two 1 GiB buffers the host no longer generates.
  const bool host_inputs_unneeded = HostInputsUnneeded(
      backend.capabilities().generates_inputs_on_device, *spec.kernel, spec.verify);
  HostData data = GenerateHostData(*spec.kernel, spec.shape, spec.seed, pool,
                                   /*skip_device_generated=*/host_inputs_unneeded);
  data.peer_device = spec.peer_device_index;
  data.placement_pad_bytes = spec.measurement.placement_pad_bytes;
  data.placements = std::max(spec.measurement.placements, 1);
  data.l2_flush = spec.measurement.l2_flush.value_or(L2Flush::kClean);
  data.stream = spec.measurement.stream.value_or(StreamKind::kNonBlocking);
  data.verify_timed_samples = spec.verify_timed_samples;
  // A user kernel's run never takes buffers another run's kernel touched (its Open, with no
  // chain, frees whatever the device's cache held), and never leaves its own behind.
  const bool chained = spec.buffer_chain != 0 && spec.user_kernel == nullptr;
  data.reuse_chain = chained ? spec.buffer_chain : 0;
  result.phases.host_inputs_seconds = lap();
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   backend.Open(device, *spec.kernel, spec.geometry, data));
  result.phases.open_seconds = lap();
  result.phases.buffers_reused = session->BuffersReused();
  result.resources = session->Resources();
  result.launch_report = session->LaunchReport();
  {
    ScopedRange run_range(*session, RunRangeName(spec, result.run_id));
    std::vector<double> samples;  // per-launch seconds, kept samples in time order
    RETURN_IF_ERROR(TakeSamples(*session, spec, cancelled, &result, &samples));
    result.timed_sample_check = session->TimedCheck();
    RETURN_IF_ERROR(Summarize(spec, samples, &result));
    result.phases.sampling_seconds = lap();
    RETURN_IF_ERROR(VerifyOutput(*session, spec, data, cancelled, pool, &result));
    result.phases.verification_seconds = lap();
    ComputeTheoreticalOccupancy(spec, &result);
    RETURN_IF_ERROR(CollectCounters(backend, *session, spec, cancelled, &result));
    result.phases.counters_seconds = lap();
  }
  // Kept for the next run of the sweep only after a run that succeeded (every error path above
  // frees them with the session); a failed verification keeps nothing either.
  if (chained && spec.keep_buffers && OutcomeOf(result) != RunOutcome::kVerificationFailed) {
    result.phases.buffers_kept = session->KeepBuffers();
  }
  session.reset();  // the run's buffers, freed (or kept) as they would be on return, timed
  result.phases.release_seconds = lap();
  result.explanation = Explain({.occupancy = result.occupancy,
                                .achieved_occupancy = result.counters.achieved_occupancy,
                                .percent_of_peak = result.percent_of_peak,
                                .median_seconds = result.stats.median_seconds,
                                .waves = result.waves});
  result.method = SampleMethodOf(backend, result);
  result.finished_at = absl::Now();
  return result;
}

absl::StatusOr<RunResult> MeasureRun(Backend& backend, const RunSpec& spec,
                                     const CancelledFn& cancelled, ParallelPool* pool) {
  ASSIGN_OR_RETURN(const DeviceInfo device, backend.Describe(spec.device_index));
  return MeasureRun(backend, spec, device, cancelled, pool);
}

}  // namespace gpubench
