// The result of one run: the spec it ran, the measurement, throughput, verification, occupancy and
// the device.
#ifndef GPUBENCH_SERVER_ENGINE_RUN_RESULT_H_
#define GPUBENCH_SERVER_ENGINE_RUN_RESULT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/statistics.h"
#include "kernels/backend.h"
#include "kernels/reference.h"
#include "server/engine/occupancy.h"
#include "server/engine/run_spec.h"
#include "server/engine/stopping.h"

namespace gpubench {

// What a measured run amounts to: OutcomeOf is the one place that decides it.
enum class RunOutcome {
  kVerified,            // verification requested and passed
  kUnverified,          // verification not requested
  kVerificationFailed,  // the kernel computed a wrong result: an error, never a result
};
// "verified", "unverified", "VERIFY-FAILED" (server logs).
const char* RunOutcomeName(RunOutcome outcome);

// Where a run's wall time went in the worker (MeasureRun), phase by phase: what the GPU time of
// its samples leaves out.
struct RunPhases {
  double host_inputs_seconds = 0;   // the inputs' host copies (GenerateHostData)
  double open_seconds = 0;          // allocation, device generation, the variant's setup
  double sampling_seconds = 0;      // warm-up and sampling (TakeSamples)
  double verification_seconds = 0;  // the verified launch and its check
  double counters_seconds = 0;      // profile: hardware counters
  double release_seconds = 0;       // freeing the run's buffers
  // Buffer reuse within a sweep (docs/measurement.md): the run's buffers were the previous run's
  // of its sweep (allocation skipped; inputs regenerated, in-outs refilled and outputs poisoned as
  // in a new allocation), and this run's were kept for the next run of its sweep, not freed.
  bool buffers_reused = false;
  bool buffers_kept = false;
};

// Recorded timed windows with the same figures (WindowAudit::tallies).
struct WindowTally {
  int operations = 0;
  int kernels = 0;
  int foreign_kernels = 0;
  int64_t windows = 0;       // recorded windows with these figures
  int64_t first_sample = 0;  // the first of them, 1-based over every timed sample taken
};
// An honest run has one row; a kernel that varies what it launches has more, and the first
// mismatch is all a verdict needs: a bound on the result's size whatever the run's length.
inline constexpr int kMaxWindowTallies = 16;

// What the timed samples' windows held (Session::AuditWindows), for runs that ask for it
// (RunSpec::verify_timed_samples: user kernels, and the built-ins measured beside them); the
// launch-count check and the timer cross-check of a user kernel judge it
// (server/engine/user_kernel_checks.h).
struct WindowAudit {
  std::string unavailable_reason = {};  // non-empty: nothing was recorded, and why
  WindowSource source = WindowSource::kActivityRecords;
  int launches_per_window = 1;  // the hot batch; 1 when cold
  // Recorded windows grouped by their figures, in order of first appearance; windows with
  // figures beyond kMaxWindowTallies distinct ones are counted in other_windows.
  std::vector<WindowTally> tallies = {};
  int64_t other_windows = 0;
  int64_t other_first_sample = 0;
  int64_t unrecorded_windows = 0;  // audited samples no complete record came back for
  // Samples traced only for the audit (CUDA-event timer): timed, not in the statistics.
  int64_t audit_only_samples = 0;
  // Over the samples that have a record (kept ones under a duration timer, the audit-only ones
  // under events): the windows' spans per launch (the kernels' own durations) and the run's
  // timer on the same samples, as medians.
  int64_t compared_samples = 0;
  std::optional<double> kernel_median_seconds = {};
  std::optional<double> timer_median_seconds = {};
};

// Adds timed sample `sample` (1-based) and what its window held (nullopt: no record) to `audit`.
void TallyWindow(int64_t sample, const std::optional<WindowActivity>& window, WindowAudit* audit);

struct RunResult {
  std::string run_id;
  RunSpec spec;
  std::string backend;
  // How the samples were taken, in words (the backend's SampleMethod, or profile mode).
  std::string method;
  absl::Time queued_at;
  absl::Time started_at;
  absl::Time finished_at;

  // Measurement.
  SampleStatistics stats;         // per-launch seconds over the kept samples
  int hot_batch_size = 1;         // launches per hot sample (1 when cold)
  int throttled_samples = 0;      // discarded: SM clock under throttle_threshold x the default
  // SM clock under kThrottleThreshold (75%) x the default, kept or discarded.
  int low_clock_samples = 0;
  // Timed seconds of every sample (kept or discarded) / sampling_wall_seconds; 0 in profile mode.
  double duty_cycle = 0;
  bool noise_reached = false;
  StopRule stop_rule = StopRule::kNone;  // which rule ended sampling
  std::string stop_reason;               // the rule in words, with the figures
  std::vector<std::string> notes;        // e.g. why profile mode was used (fallback)
  bool profile_mode = false;             // timed without the blocking kernel (profile_runs)
  int samples_taken = 0;                 // kept + throttled
  double sampling_wall_seconds = 0;      // wall time of the sampling loop
  RunPhases phases;
  // False with fewer than two kept samples: no spread can be estimated ("noise unknown", never
  // "0.00%"). below_min_samples: fewer kept than min_samples (timeout), the noise is unreliable.
  bool noise_known = false;
  bool below_min_samples = false;
  // The kept per-launch samples in time order when requested (keep_samples); at most
  // kMaxReturnedSamples, evenly strided when there were more. sample_count: all kept samples.
  std::vector<double> sample_seconds;
  int sample_count = 0;
  double measured_seconds = 0;    // sum of kept sample times (device time)
  // The clock that produced the samples, and where it was CUPTI, the median per-launch time of
  // the same samples timed with CUDA events (the launch overhead CUPTI leaves out is the
  // difference).
  SampleTimer timer = SampleTimer::kCudaEvent;
  std::optional<double> event_median_seconds;
  std::optional<double> min_clock_hz;  // SM clock range seen across samples, when measurable
  std::optional<double> max_clock_hz;

  // Throughput, from the family's declaration (kernels/family.h): bytes and operations per
  // launch at the run's shape; rates use the median time.
  Metric metric = Metric::kBytesPerSecond;  // the family's headline figure
  int64_t bytes_moved = 0;
  double bandwidth_bytes_per_second = 0;
  double bandwidth_mean_bytes_per_second = 0;
  double elements_per_second = 0;
  std::string operation_unit;            // what operations count ("FLOP", "load"); empty: none
  int64_t operations = 0;                // per launch; 0 where the family counts none
  double operations_per_second = 0;      // operations / median
  double seconds_per_operation = 0;      // median / operations
  // Of the peak of the family's metric on this device (theoretical DRAM bandwidth for bandwidth
  // families unless the family names its own), when known.
  std::optional<double> percent_of_peak;
  std::optional<double> peak;  // the figure percent_of_peak is of, in the metric's unit
  std::string launch_report;  // what the variant's setup chose ("cuBLASLt algo 23, ..."), if any
  // Of the practical ceiling: the latest copy_d2d run on this device that moved at least 4x the
  // L2 size (DRAM-bound). Absent until such a run exists.
  std::optional<double> percent_of_copy_ceiling;
  double copy_ceiling_bytes_per_second = 0;

  std::optional<Verification> verification;  // absent when verification was not requested
  // OutputHash of the verification launch's read-back (kernels/reference.h); absent when
  // verification was not requested. With a fixed seed, comparable across a fleet (SDC checks).
  std::optional<uint64_t> output_hash;
  KernelResources resources;
  std::optional<OccupancyReport> occupancy;  // when the kernel's resources are known
  AchievedCounters counters;                 // achieved occupancy / DRAM %, when profiled
  double waves = 0;                          // grid / (SMs x active blocks per SM)
  std::string explanation;                   // one- or two-line verdict (explain.h)
  DeviceInfo device;
  // NVML clock-event (throttle) reasons seen while the run measured, polled; empty with the
  // reason in clock_events_unavailable_reason where NVML cannot say.
  std::vector<std::string> clock_event_reasons;
  std::string clock_events_unavailable_reason;
  // What the timed-sample check did, where the spec asked for it (user kernels).
  std::optional<TimedSampleCheck> timed_sample_check;
  // What the timed windows held, where the spec asked for it (user kernels).
  std::optional<WindowAudit> window_audit;
  // Runs of a user kernel: its hash, compile facts and the integrity checks applied.
  std::optional<UserKernelReport> user_kernel;
};

// The value of `r`'s headline metric (RunResult::metric): bandwidth, operations per second or
// seconds per operation. Thread-safe.
double MetricValueOf(const RunResult& r);

// The practical bandwidth ceiling of one device: the bandwidth of the latest copy_d2d run that
// moved at least 4x the L2 size (streamed from DRAM, not from L2). Not thread-safe: one per device
// worker.
class CopyCeiling {
 public:
  // Takes `result` as the new ceiling when it is such a run.
  void Observe(const RunResult& result);
  double bytes_per_second() const { return bytes_per_second_; }

 private:
  double bytes_per_second_ = 0;
};

// What the device queue knows about a run, beyond the measurement.
struct RunFinish {
  absl::Time queued_at{};
  CopyCeiling* copy_ceiling = nullptr;  // the device's; null: no ceiling figures
  // NVML clock-event reasons seen while the run measured, or why there are none.
  absl::StatusOr<std::vector<std::string>> clock_event_reasons =
      absl::UnavailableError("NVML not loaded");
};

// Whether verification was requested, and whether it passed.
RunOutcome OutcomeOf(const RunResult& result);

// What the method text says of a run whose buffers were the previous run's of its sweep
// (RunPhases::buffers_reused).
inline constexpr char kBuffersReusedMethod[] =
    "buffers reused from the previous run of this sweep (allocation skipped, inputs regenerated, "
    "outputs poisoned)";

// How `result`'s samples were taken, in words: `backend`'s SampleMethod, or profile mode; then
// whether its buffers were reused (kBuffersReusedMethod); then, where it was verified, how (";
// verified: all 1048576 elements on the device + 64 sampled on the host"; Verification::method).
// MeasureRun sets it where the run is measured (in the device's worker process).
std::string SampleMethodOf(const Backend& backend, const RunResult& result);

// The one place a measured result is completed with what the device queue knows: the queue
// time, the copy ceiling and the clock events.
void FinishRunResult(RunFinish finish, RunResult* result);

// A run whose verification failed is an error, never a result: kVerificationFailed becomes
// INTERNAL with the first mismatch in the message; otherwise OK.
absl::Status VerificationStatus(const RunResult& result);

// The status of a finished run as callers report it: the run's error, or VerificationStatus.
absl::Status RunStatus(const absl::StatusOr<RunResult>& result);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RUN_RESULT_H_
