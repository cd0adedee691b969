// The measurement options of a run, declared once: the proto field, the CLI flag, the server's
// default flag, the range, the unit, the help text and the default of each. Validation
// (server/engine/resolve.cc), the server's defaults (server/startup.cc), the request conversion and
// the echo in the result (server/service/proto_options.cc) and the CLI's flags
// (client/commands/options.cc) iterate this table; docs/measurement.md says how to add an option.
// Protobuf-free, so that the engine, the service and the client can all read it.
#ifndef GPUBENCH_COMMON_MEASUREMENT_OPTIONS_H_
#define GPUBENCH_COMMON_MEASUREMENT_OPTIONS_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpubench {

// One per table row, in table order (the engine binds each to its struct field in a switch that
// -Wswitch keeps complete).
enum class OptionId {
  kCacheMode,
  kWarmupLaunches,
  kMinSamples,
  kMaxSamples,
  kMinTimeSeconds,
  kMaxNoise,
  kTimeoutSeconds,
  kProfileRuns,
  kKeepSamples,
  kTimer,
  kThrottleThreshold,
  kMaxDuty,
  kPlacementPadBytes,
  kPlacements,
  kL2Flush,
  kStream,
};

// The proto field's type: int32, int64, double, bool, or an enum (a choice among `choices`).
enum class OptionKind { kInt32, kInt64, kDouble, kBool, kChoice };

struct OptionSpec {
  OptionId id = OptionId::kCacheMode;
  // The field of gpubench.v1.MeasurementOptions (the request) and of gpubench.v1.ResolvedRun (the
  // echo), and the name messages use ("measurement.<name>").
  absl::string_view name = {};
  OptionKind kind = OptionKind::kInt32;
  absl::string_view cli_flag = {};     // gpubench --<cli_flag>; empty where the CLI has none
  absl::string_view server_flag = {};  // gpubench_server --<server_flag> sets the default; or empty
  // The server flag that moves `max` (the range then ends there); empty: `max` is fixed.
  absl::string_view max_flag = {};
  // The accepted range of the resolved value: [min, max], or [min, max) with max_exclusive.
  // Choices and bools have none (the proto edge refuses undeclared enum values).
  double min = 0;
  double max = 0;
  bool max_exclusive = false;
  absl::string_view unit = {};
  // Used when the request leaves the option unset and no server flag says otherwise (choices: the
  // index in `choices`, bools: 0 or 1).
  double default_value = 0;
  // The CPU backend's default where it differs (a server flag's -1 means the backend's); 0: none.
  double cpu_default = 0;
  // True: a request's 0 means "unset" (proto3 scalars); false: presence says (a proto `optional`,
  // or an enum whose 0 is UNSPECIFIED, which the proto edge reads as unset).
  bool zero_is_unset = true;
  // A fraction: a value over 1 that reads as a percent (75 for 0.75) is refused as such.
  bool fraction = false;
  // Names of a choice's values, in the order of the engine's enum and matching the proto enum's
  // value names (COLD, TIMER_GPU_TIME, L2_FLUSH_MEMSET end in the choice, case aside).
  std::span<const absl::string_view> choices = {};
  // For --help of both programs and the docs: what it does and what unset means.
  absl::string_view help = {};
};

inline constexpr absl::string_view kCacheModeChoices[] = {"cold", "hot"};
inline constexpr absl::string_view kTimerChoices[] = {"auto", "cupti", "events", "gpu_time"};
inline constexpr absl::string_view kL2FlushChoices[] = {"clean", "memset"};
inline constexpr absl::string_view kStreamChoices[] = {"nonblocking", "legacy", "per_thread"};

// The table. A row's order is its OptionId's.
inline constexpr OptionSpec kMeasurementOptions[] = {
    {.id = OptionId::kCacheMode,
     .name = "cache_mode",
     .kind = OptionKind::kChoice,
     .cli_flag = "mode",
     .zero_is_unset = false,  // the enum's UNSPECIFIED: the server's default
     .choices = kCacheModeChoices,
     .help = "cold (L2 flushed, one launch per sample) | hot (back-to-back launches timed as a "
             "batch, caches warm). Unset: cold."},
    {.id = OptionId::kWarmupLaunches,
     .name = "warmup_launches",
     .kind = OptionKind::kInt32,
     .cli_flag = "warmup",
     .min = 0,
     .max = 1000,
     .unit = "launches",
     .default_value = 3,
     .help = "Launches before any sample (0 = the server's default, 3)."},
    {.id = OptionId::kMinSamples,
     .name = "min_samples",
     .kind = OptionKind::kInt32,
     .cli_flag = "min_samples",
     .server_flag = "default_min_samples",
     .min = 1,
     .max = 1000000,
     .unit = "samples",
     .default_value = 10,
     .help = "Samples kept at least before a stopping rule may end sampling (0 = the server's "
             "default, 10 unless --default_min_samples)."},
    {.id = OptionId::kMaxSamples,
     .name = "max_samples",
     .kind = OptionKind::kInt32,
     .cli_flag = "max_samples",
     .min = 1,
     .max = 1000000,
     .unit = "samples",
     .default_value = 100000,
     .help = "Samples kept at most, at least min_samples (0 = the server's default, 100000)."},
    {.id = OptionId::kMinTimeSeconds,
     .name = "min_time_seconds",
     .kind = OptionKind::kDouble,
     .cli_flag = "min_time",
     .server_flag = "default_min_time_seconds",
     .min = 0,
     .max = 60,
     .unit = "seconds",
     .default_value = 0.05,
     .help = "Measured device time accumulated before stopping is allowed (0 = the server's "
             "default, 0.05 s unless --default_min_time_seconds)."},
    {.id = OptionId::kMaxNoise,
     .name = "max_noise",
     .kind = OptionKind::kDouble,
     .cli_flag = "max_noise",
     .server_flag = "default_max_noise",
     .min = 1e-6,
     .max = 1,
     .unit = "fraction of the mean",
     .default_value = 0.005,
     .cpu_default = 0.02,
     .fraction = true,
     .help = "Stop at this relative stddev, a FRACTION: 0.005 = 0.5% (nvbench's --max-noise is in "
             "percent). 0 = the server's default: 0.005 on cuda as nvbench, 0.02 on cpu (a shared "
             "host rarely gets under 1%); a server flag's -1 means that."},
    {.id = OptionId::kTimeoutSeconds,
     .name = "timeout_seconds",
     .kind = OptionKind::kDouble,
     .cli_flag = "timeout",
     .server_flag = "default_timeout_seconds",
     .max_flag = "max_timeout_seconds",
     .min = 1e-3,
     .max = 120,
     .unit = "seconds",
     .default_value = 15,
     .cpu_default = 3,
     .help = "Sampling wall-time budget; sampling stops there with the noise target not reached. "
             "0 = the server's default: 15 s on cuda as nvbench, 3 s on cpu; a server flag's -1 "
             "means that. At most --max_timeout_seconds."},
    {.id = OptionId::kProfileRuns,
     .name = "profile_runs",
     .kind = OptionKind::kInt32,
     .cli_flag = "profile_runs",
     .min = 0,
     .max = 10000,
     .unit = "launches",
     .help = "Profile mode: run the kernel N times, each launch timed alone, with no blocking "
             "kernel and no sampling logic, so ncu / nsys see clean launches (0 = normal "
             "sampling)."},
    {.id = OptionId::kKeepSamples,
     .name = "keep_samples",
     .kind = OptionKind::kBool,
     .cli_flag = "samples",
     .help = "Return the per-launch samples (at most 10,000) in the result."},
    {.id = OptionId::kTimer,
     .name = "timer",
     .kind = OptionKind::kChoice,
     .cli_flag = "timer",
     .choices = kTimerChoices,
     .help = "What times the samples: auto (the default: CUDA events, around one launch cold and "
             "around the batch hot) | cupti (CUPTI activity records, the kernels' own device "
             "timestamps, cold and hot; an error where it cannot record; tracing can slow "
             "large-grid kernels) | events (CUDA events only) | gpu_time (each kernel's "
             "gpu__time_duration counter, Nsight Compute's Duration: every launch alone under "
             "CUPTI's range profiler, slower, no throttle check). The CPU backend times with its "
             "steady clock (auto, events)."},
    {.id = OptionId::kThrottleThreshold,
     .name = "throttle_threshold",
     .kind = OptionKind::kDouble,
     .cli_flag = "throttle_threshold",
     .min = 0,
     .max = 1,
     .max_exclusive = true,
     .unit = "fraction of the default SM clock",
     .default_value = 0.75,
     .zero_is_unset = false,
     .fraction = true,
     .help = "Discard a sample whose SM clock was below this FRACTION of the default clock: 0.75 "
             "(the default when unset) = nvbench's --throttle-threshold 75 (percent there); 0 "
             "keeps every sample (clocks still reported)."},
    {.id = OptionId::kMaxDuty,
     .name = "max_duty",
     .kind = OptionKind::kDouble,
     .cli_flag = "max_duty",
     .min = 0,
     .max = 1,
     .unit = "fraction of the sampling loop's wall time",
     .fraction = true,
     .help = "Pace the sampling loop so the GPU is busy with timed work at most this FRACTION of "
             "its wall time (0.8 = 80%; the server sleeps after each sample). A power-capped GPU "
             "clocks higher when it idles between samples: match another tool's duty cycle "
             "(bench/torch_gemm.py prints its own). 0 = no pacing."},
    {.id = OptionId::kPlacementPadBytes,
     .name = "placement_pad_bytes",
     .kind = OptionKind::kInt64,
     .cli_flag = "placement_pad",
     .server_flag = "default_placement_pad_bytes",
     .min = 0,
     .max = 1073741824,  // 1 GiB: more only wastes memory
     .unit = "bytes",
     .help = "Unused bytes left after each CUDA device buffer of 1 MiB or more, so the run's "
             "buffers are not exactly one buffer size apart (their L2 sets can alias; "
             "docs/measurement.md). The CLI takes --size's syntax (34Mi = 34 x 2^20 bytes). 0 = "
             "the server's default (no pad unless --default_placement_pad_bytes). The cpu "
             "backend ignores it."},
    {.id = OptionId::kPlacements,
     .name = "placements",
     .kind = OptionKind::kInt32,
     .cli_flag = "placements",
     .min = 1,
     .max = 16,
     .unit = "copies",
     .default_value = 1,
     .help = "Cold samples rotate over this many separately allocated copies of the run's device "
             "buffers, so the median covers that many placements, not the one an allocation gave "
             "(docs/measurement.md). 0 = one copy. Hot samples use the first copy. The cpu "
             "backend ignores it."},
    {.id = OptionId::kL2Flush,
     .name = "l2_flush",
     .kind = OptionKind::kChoice,
     .server_flag = "default_l2_flush",
     .zero_is_unset = false,  // the enum's UNSPECIFIED: the server's default
     .choices = kL2FlushChoices,
     .help = "How cold samples empty the L2: clean (a read pass over 2 x L2) or memset (an "
             "L2-sized write, nvbench's flush). Unset: the server's default (clean unless "
             "--default_l2_flush). Echoed in every result and named in its method text."},
    {.id = OptionId::kStream,
     .name = "stream",
     .kind = OptionKind::kChoice,
     .server_flag = "default_stream",
     .zero_is_unset = false,  // the enum's UNSPECIFIED: the server's default
     .choices = kStreamChoices,
     .help = "The stream samples are timed on: nonblocking (a stream per run), legacy (the "
             "default stream) or per_thread. Unset: the server's default (nonblocking unless "
             "--default_stream)."},
};

// The row of `id` (the table is in OptionId order; tests/service/measurement_options_test.cc
// checks it).
constexpr const OptionSpec& OptionOf(OptionId id) {
  return kMeasurementOptions[static_cast<int>(id)];
}

// The row named `name` (the proto field), or null.
const OptionSpec* FindOption(absl::string_view name);

// True for the kinds with a numeric range (not bools or choices).
constexpr bool HasRange(const OptionSpec& o) {
  return o.kind == OptionKind::kInt32 || o.kind == OptionKind::kInt64 ||
         o.kind == OptionKind::kDouble;
}

// `value` as the option's kind prints it: integers without a fraction, choices by name.
std::string FormatOptionValue(const OptionSpec& o, double value);

// "[1, 1000000]", "[0, 1)"; bytes with the size in words ("[0, 1073741824] (1 GiB)"). `max`
// is the effective upper bound (a server flag can move it).
std::string RangeText(const OptionSpec& o, double max);

// OK when `value` is in [o.min, max] (or [o.min, max)); else INVALID_ARGUMENT
// "<field> = <value> is outside <range> (unit: <unit>)<where>: <help>" with `field` as the caller
// names it ("measurement.min_samples", "--default_min_samples") and `where` the source of the
// bound (", allowed by this server (--max_timeout_seconds)"). NaN is outside every range.
absl::Status CheckOptionRange(const OptionSpec& o, double value, double max,
                              absl::string_view field);

// The choice named `text` (case-insensitive), or INVALID_ARGUMENT naming `field` and the choices.
absl::StatusOr<int> ParseChoice(const OptionSpec& o, absl::string_view text,
                                absl::string_view field);

// The index of the choice whose name ends a proto enum value's name ("TIMER_GPU_TIME" ->
// gpu_time, "COLD" -> cold), or -1 (UNSPECIFIED, or a value the table does not know).
int ChoiceOfEnumName(const OptionSpec& o, absl::string_view enum_value_name);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_MEASUREMENT_OPTIONS_H_
