// A benchmark request as the engine sees it (RunRequest: plain values, nothing validated), the
// validated and resolved form (RunSpec) and the server's limits. Validation is in resolve.h, the
// result in run_result.h. Nothing here depends on gRPC or protobuf.
#ifndef GPUBENCH_SERVER_ENGINE_RUN_SPEC_H_
#define GPUBENCH_SERVER_ENGINE_RUN_SPEC_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/host_memory.h"
#include "common/measurement_options.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/launch.h"
#include "server/engine/user_kernel_spec.h"

namespace gpubench {

enum class CacheMode { kCold, kHot };
const char* CacheModeName(CacheMode mode);  // "cold" / "hot"

// Which clock times the samples (MeasurementOptions.timer). kAuto (the default) and kEvents: CUDA
// events (auto: CUPTI tracing perturbed large-grid kernels on the H200, see measurement.cc);
// kCupti: kernel durations from CUPTI activity records for cold and hot samples, with the events'
// median kept beside them, an error where CUPTI cannot start; kGpuTime: each kernel's hardware
// counter gpu__time_duration (Nsight Compute's Duration) through CUPTI's range profiler, every
// launch alone (no blocking kernel, hot batches of one). The CPU backend times with its steady
// clock (auto and events; cupti and gpu_time are refused).
enum class TimerChoice { kAuto, kCupti, kEvents, kGpuTime };
const char* TimerChoiceName(TimerChoice choice);  // "auto" / "cupti" / "events" / "gpu_time"
// The choices that time with CUPTI (activity records or the duration counter): refused on the CPU
// backend and with profile mode, where CUPTI belongs to the profiler.
inline bool UsesCupti(TimerChoice choice) {
  return choice == TimerChoice::kCupti || choice == TimerChoice::kGpuTime;
}

// The clock that produced a result's samples: "cupti_activity", "cuda_event", "cpu_clock",
// "gpu_time_duration".
enum class SampleTimer { kCuptiActivity, kCudaEvent, kCpuClock, kGpuTimeDuration };
const char* SampleTimerName(SampleTimer timer);

// Samples whose SM clock was below this fraction of the default clock are discarded (nvbench's
// --throttle-threshold default, 75%); MeasurementOptions.throttle_threshold sets another.
constexpr double kThrottleThreshold = 0.75;

// Stopping criteria and warm-up, nvbench's vocabulary. Zero in a request means "server default".
// Each field is a row of the option table (common/measurement_options.h: range, unit, default,
// flags), bound to it by GetOption / SetOption below.
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
  TimerChoice timer = TimerChoice::kAuto;
  // Fraction of the default SM clock below which a sample is discarded; 0 keeps every sample.
  // A request's nullopt means kThrottleThreshold; a resolved RunSpec always holds a value.
  std::optional<double> throttle_threshold = std::nullopt;
  // Pacing of the sampling loop: after each sample the loop sleeps until the timed seconds of all
  // samples are at most max_duty x its wall seconds. A power-capped GPU clocks higher the longer
  // it idles between samples, so matching another tool's duty cycle compares kernels, not loop
  // overheads. 0: no pacing; else 0 < x <= 1.
  double max_duty = 0;
  // Unused bytes after each device buffer of at least kPlacementPadMinBytes (kernels/backend.h), so
  // that a run's buffers do not sit exactly one buffer size apart (L2 set aliasing between the
  // operands). A request's 0 means the server's default (--default_placement_pad_bytes, 0: none);
  // else 0 <= x <= kMaxPlacementPadBytes. The CPU backend ignores it.
  int64_t placement_pad_bytes = 0;
  // Copies of the run's device buffers that cold samples rotate over (sample i: copy i mod
  // placements), each its own allocation; hot samples, profile runs and verification use copy 0.
  // A request's 0 means 1; else 1 <= x <= kMaxPlacements (kernels/backend.h). The CPU backend
  // ignores it.
  int placements = 0;
  // The cold samples' L2 flush and the samples' stream (CUDA backend; kernels/backend.h). A
  // request's nullopt means the server's default (--default_l2_flush, --default_stream); a
  // resolved RunSpec always holds a value. Named in the result's method text.
  std::optional<L2Flush> l2_flush = std::nullopt;
  std::optional<StreamKind> stream = std::nullopt;
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
  // A user's kernel instead of a catalog variant (then `kernel` is empty; docs/user-kernels.md).
  std::optional<UserKernelRequest> user_kernel;
};

// The option table's default of every option (common/measurement_options.h).
MeasurementOptions TableDefaults();

// The binding of the option table to the structs. Values are doubles: integers as such, choices
// as their index in the row's choices (the engine enums' order), bools 0 or 1. GetOption is
// nullopt where a std::optional field (or `cache_mode`) is unset; a request's 0 is for the caller
// to read by the row's zero_is_unset. `cache_mode` stands for the row kCacheMode, which the
// engine keeps beside MeasurementOptions.
std::optional<double> GetOption(const MeasurementOptions& m, std::optional<CacheMode> cache_mode,
                                OptionId id);
void SetOption(MeasurementOptions* m, std::optional<CacheMode>* cache_mode, OptionId id,
               double value);

// Server-side defaults and bounds; flags fill these in main.
struct ServerLimits {
  int64_t max_elements = int64_t{1} << 31;
  // The option table's defaults (common/measurement_options.h; min_time is 0.05 s, not nvbench's
  // 0.5 s: with the noise-convergence rule a 5 us kernel has a stable median long before 0.5 s of
  // device time). The server's --default_* flags replace some (server/startup.cc).
  MeasurementOptions defaults = TableDefaults();
  // Upper bounds of the options whose range a server may move (MaxOf); the table's by default.
  int max_warmup_launches = static_cast<int>(OptionOf(OptionId::kWarmupLaunches).max);
  int max_profile_runs = static_cast<int>(OptionOf(OptionId::kProfileRuns).max);
  int max_samples_limit = static_cast<int>(OptionOf(OptionId::kMaxSamples).max);
  double max_min_time_seconds = OptionOf(OptionId::kMinTimeSeconds).max;
  double max_timeout_seconds = OptionOf(OptionId::kTimeoutSeconds).max;
  int queue_capacity = 64;  // pending runs per device
  bool allow_profiling = true;  // --allow_profiling: may requests use the counter profiler
  double max_warmup_seconds = 10;  // wall-time bound of one run's warm-up, whatever the count
  HostMemorySources host_memory;   // where the host's and the cgroup's memory figures are read
  // TEST ONLY (--test_flip_output_hash): XORed into every result's output hash in the server
  // process, as a device with silently corrupted output would look to the fleet's SDC check.
  uint64_t test_output_hash_xor = 0;
  UserKernelLimits user_kernels;  // --allow_user_kernels, --max_user_kernel_bytes
};

// The upper bound of option `id` on a server with `limits`: the table's, or the limit that moves
// it (max_timeout_seconds, ...).
double MaxOf(const ServerLimits& limits, OptionId id);

// The resolved value of option `id` in `spec` (GetOption on a RunSpec: always set).
struct RunSpec;
double ResolvedOption(const RunSpec& spec, OptionId id);

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
  // Verify randomly chosen timed samples too (HostData::verify_timed_samples): set by the worker
  // for user kernels only, never from a request.
  bool verify_timed_samples = false;
  bool profile = false;
  bool profile_forbidden = false;  // requested, but the server does not allow profiling
  bool force = false;     // skip the shared-node busy check (--gpu_sharing=shared)
  bool scheduled = false;  // submitted by the server's schedule (--schedule_plan), not an RPC
  // Buffer reuse within a sweep (docs/measurement.md, "buffer reuse"), set by the engine only
  // (MarkBufferReuse, sweep.h), never from a request: keep_buffers, the next run of this run's
  // chain on its device has the same buffers (BufferKey), so the worker keeps this run's for it
  // instead of freeing them. buffer_chain: the sweep chain the run belongs to (0: none), which a
  // run must share with the kept buffers to take them.
  bool keep_buffers = false;
  uint64_t buffer_chain = 0;
  double max_warmup_seconds = 10;  // ServerLimits::max_warmup_seconds
  // A user kernel's run: `kernel` points at user_kernel->variant (in the worker, at the copy
  // with its CUDA launcher bound). Null for catalog runs.
  std::shared_ptr<const UserKernelSpec> user_kernel;
  // A catalog kernel measured in the device's user-kernel worker (RoleFor, worker_pool.h):
  // --compare's built-ins, measured in the user kernel's context and conditions. It crosses to
  // the worker, which refuses a run that is not of its role.
  bool user_context = false;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RUN_SPEC_H_
