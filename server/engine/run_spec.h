// A benchmark request as the engine sees it (RunRequest: plain values, nothing validated), the
// validated and resolved form (RunSpec), the server's limits, and the result (RunResult).
// Nothing here depends on gRPC or protobuf.
#ifndef GPUBENCH_SERVER_ENGINE_RUN_SPEC_H_
#define GPUBENCH_SERVER_ENGINE_RUN_SPEC_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/host_memory.h"
#include "common/statistics.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/reference.h"
#include "server/engine/occupancy.h"
#include "server/engine/stopping.h"

namespace gpubench {

enum class CacheMode { kCold, kHot };
const char* CacheModeName(CacheMode mode);  // "cold" / "hot"

// Stopping criteria and warm-up, nvbench's vocabulary. Zero in a request means "server default".
struct MeasurementOptions {
  int warmup_launches = 0;
  int min_samples = 0;
  int max_samples = 0;
  double min_time_seconds = 0;  // accumulated measured time before stopping is allowed
  double max_noise = 0;         // relative standard deviation (0.005 = 0.5%)
  double timeout_seconds = 0;   // wall-clock budget for sampling; stops with noise not reached
  // > 0: profile mode. Run the kernel this many times, each launch timed alone without the
  // blocking kernel and without stopping logic or throttle checks, so ncu / nsys see clean
  // launches. The statistics then include launch latency: for profiling, not for reporting.
  int profile_runs = 0;
  bool keep_samples = false;    // return the per-launch samples (at most kMaxReturnedSamples)
};

struct RunRequest {
  std::string kernel;
  int64_t elements = 0;
  // Matrix dimensions for families that take them (GEMM); all 0: the family's rule for
  // `elements` alone (KernelFamily::resolve_shape).
  RunShape shape;
  // The second device of a family with a peer buffer; nullopt: the next device.
  std::optional<int> peer_device_index;
  int device_index = 0;
  std::string device_uuid;  // when set, selects the device by UUID instead of device_index
  int block_size = 0;  // 0: the variant's default
  int items_per_thread = 0;  // 0: the variant's default; only variants with tunable items
  std::optional<CacheMode> cache_mode;  // default cold
  MeasurementOptions measurement;
  std::optional<bool> verify;      // default true
  std::optional<uint64_t> seed;    // default: fresh random seed, echoed in the result
  bool profile = false;            // collect achieved occupancy from hardware counters
  bool force = false;              // run even when another process uses the GPU (shared mode)
};

// Server-side defaults and bounds; flags fill these in main.
struct ServerLimits {
  int64_t max_elements = int64_t{1} << 31;
  // min_time is 0.05 s, not nvbench's 0.5 s: with the noise-convergence rule a 5 us kernel has
  // a stable median long before 0.5 s of device time (100,000 samples, 5 s of wall time).
  MeasurementOptions defaults{.warmup_launches = 3,
                              .min_samples = 10,
                              .max_samples = 100000,
                              .min_time_seconds = 0.05,
                              .max_noise = 0.005,
                              .timeout_seconds = 15};
  int max_warmup_launches = 1000;
  int max_profile_runs = 10000;
  int max_samples_limit = 1000000;
  double max_min_time_seconds = 60;
  double max_timeout_seconds = 120;
  int queue_capacity = 64;  // pending runs per device
  bool allow_profiling = true;  // --allow_profiling: may requests use the counter profiler
  double max_warmup_seconds = 10;  // wall-time bound of one run's warm-up, whatever the count
  HostMemorySources host_memory;   // where the host's and the cgroup's memory figures are read
};

// A validated request: every field resolved to a concrete value.
struct RunSpec {
  const KernelVariant* kernel = nullptr;
  int64_t elements = 0;  // shape.elements
  RunShape shape;        // the family's resolution of the request's size
  int device_index = 0;
  int peer_device_index = -1;  // families with a peer buffer: the second device; else -1
  LaunchGeometry geometry;
  // Where block_size and items_per_thread came from: "request", "tuned" (Autotune --apply),
  // "catalog", "catalog (small grid)" (LaunchPolicy::small_grid_block_size), or "request+tuned"
  // when a request named one and the tuned default gave the other.
  std::string block_size_source = "catalog";
  CacheMode cache_mode = CacheMode::kCold;
  MeasurementOptions measurement;
  bool verify = true;
  uint64_t seed = 0;
  bool profile = false;
  bool profile_forbidden = false;  // requested, but the server does not allow profiling
  bool force = false;     // skip the shared-node busy check (--gpu_sharing=shared)
  bool scheduled = false;  // submitted by the server's schedule (--schedule_plan), not an RPC
  double max_warmup_seconds = 10;  // ServerLimits::max_warmup_seconds
};

// Every buffer one run allocates: on the host (generated inputs, the read-back for verification)
// and on the device (the kernel's buffers; host memory too on the CPU backend).
struct RunMemory {
  int64_t host_bytes = 0;
  int64_t device_bytes = 0;
};
RunMemory RunMemoryOf(const KernelVariant& kernel, const RunShape& shape, bool verify);

// OK when a run needing `need` fits: host bytes (plus device bytes where the device is the host)
// within `host_available_bytes` (absent: unknown, not checked), device bytes within the device's
// free memory. RESOURCE_EXHAUSTED saying which budget is short, before anything is allocated.
absl::Status CheckRunMemoryFits(const RunMemory& need, const DeviceInfo& device,
                                bool device_is_host, std::optional<int64_t> host_available_bytes,
                                absl::string_view host_budget_description);

// A launch configuration chosen by Autotune.
struct TunedLaunch {
  int block_size = 0;
  int items_per_thread = 0;  // 0: the catalog's (the variant's items are fixed)
};

// Launch configurations chosen by Autotune, per (device, kernel). In memory: a restart forgets
// them. Thread-safe.
class TunedDefaults {
 public:
  void Set(int device, absl::string_view kernel, TunedLaunch launch);
  std::optional<TunedLaunch> Get(int device, absl::string_view kernel) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<int, std::string>, TunedLaunch> launches_;
};

// Index of the device of `backend` whose UUID is `uuid`, or -1 when none is. Thread-safe.
int DeviceIndexOfUuid(const Backend& backend, absl::string_view uuid);

// OK when one block of `kernel` at `block_size` x `items_per_thread` gets the dynamic shared
// memory it needs on `device` (the opt-in maximum where the device reports one); otherwise
// INVALID_ARGUMENT saying how much it needs and how much the device allows. Thread-safe.
absl::Status CheckSharedMemoryFits(const KernelVariant& kernel, int block_size,
                                   int items_per_thread, const DeviceInfo& device);

// Validates `request` against the catalog, the device and the limits, and resolves defaults.
// NOT_FOUND for an unknown kernel, INVALID_ARGUMENT for bad fields, RESOURCE_EXHAUSTED when the
// buffers cannot fit in the device's free memory (checked before anything is allocated).
// Thread-safe.
absl::StatusOr<RunSpec> ResolveRunRequest(const RunRequest& request, const Backend& backend,
                                          const ServerLimits& limits,
                                          const TunedDefaults* tuned = nullptr);

struct RunResult {
  std::string run_id;
  RunSpec spec;
  std::string backend;
  absl::Time queued_at;
  absl::Time started_at;
  absl::Time finished_at;

  // Measurement.
  SampleStatistics stats;         // per-launch seconds over the kept samples
  int hot_batch_size = 1;         // launches per hot sample (1 when cold)
  int throttled_samples = 0;      // discarded: SM clock under 75% of the default
  bool noise_reached = false;
  StopRule stop_rule = StopRule::kNone;  // which rule ended sampling
  std::string stop_reason;               // the rule in words, with the figures
  std::vector<std::string> notes;        // e.g. why profile mode was used (fallback)
  bool profile_mode = false;             // timed without the blocking kernel (profile_runs)
  int samples_taken = 0;                 // kept + throttled
  double sampling_wall_seconds = 0;      // wall time of the sampling loop
  // False with fewer than two kept samples: no spread can be estimated ("noise unknown", never
  // "0.00%"). below_min_samples: fewer kept than min_samples (timeout), the noise is unreliable.
  bool noise_known = false;
  bool below_min_samples = false;
  // The kept per-launch samples in time order when requested (keep_samples); at most
  // kMaxReturnedSamples, evenly strided when there were more. sample_count: all kept samples.
  std::vector<double> sample_seconds;
  int sample_count = 0;
  double measured_seconds = 0;    // sum of kept sample times (device time)
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
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RUN_SPEC_H_
