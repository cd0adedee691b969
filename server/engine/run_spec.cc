#include "server/engine/run_spec.h"

namespace gpubench {

const char* CacheModeName(CacheMode mode) { return mode == CacheMode::kHot ? "hot" : "cold"; }

const char* TimerChoiceName(TimerChoice choice) {
  switch (choice) {
    case TimerChoice::kAuto:
      return "auto";
    case TimerChoice::kCupti:
      return "cupti";
    case TimerChoice::kEvents:
      return "events";
    case TimerChoice::kGpuTime:
      return "gpu_time";
  }
  return "unknown";
}

const char* SampleTimerName(SampleTimer timer) {
  switch (timer) {
    case SampleTimer::kCuptiActivity:
      return "cupti_activity";
    case SampleTimer::kCudaEvent:
      return "cuda_event";
    case SampleTimer::kCpuClock:
      return "cpu_clock";
    case SampleTimer::kGpuTimeDuration:
      return "gpu_time_duration";
  }
  return "unknown";
}

}  // namespace gpubench

namespace gpubench {

// kernels/backend.h keeps its own constants (the backends do not read the table); they agree.
static_assert(kMaxPlacementPadBytes == OptionOf(OptionId::kPlacementPadBytes).max);
static_assert(kMaxPlacements == OptionOf(OptionId::kPlacements).max);
static_assert(kThrottleThreshold == OptionOf(OptionId::kThrottleThreshold).default_value);

std::optional<double> GetOption(const MeasurementOptions& m, std::optional<CacheMode> cache_mode,
                                OptionId id) {
  auto optional = [](const auto& field) -> std::optional<double> {
    if (!field.has_value()) return std::nullopt;
    return static_cast<double>(*field);
  };
  switch (id) {
    case OptionId::kCacheMode:
      return optional(cache_mode);
    case OptionId::kWarmupLaunches:
      return m.warmup_launches;
    case OptionId::kMinSamples:
      return m.min_samples;
    case OptionId::kMaxSamples:
      return m.max_samples;
    case OptionId::kMinTimeSeconds:
      return m.min_time_seconds;
    case OptionId::kMaxNoise:
      return m.max_noise;
    case OptionId::kTimeoutSeconds:
      return m.timeout_seconds;
    case OptionId::kProfileRuns:
      return m.profile_runs;
    case OptionId::kKeepSamples:
      return m.keep_samples ? 1 : 0;
    case OptionId::kTimer:
      return static_cast<double>(m.timer);
    case OptionId::kThrottleThreshold:
      return m.throttle_threshold;
    case OptionId::kMaxDuty:
      return m.max_duty;
    case OptionId::kPlacementPadBytes:
      return static_cast<double>(m.placement_pad_bytes);
    case OptionId::kPlacements:
      return m.placements;
    case OptionId::kL2Flush:
      return optional(m.l2_flush);
    case OptionId::kStream:
      return optional(m.stream);
  }
  return std::nullopt;
}

void SetOption(MeasurementOptions* m, std::optional<CacheMode>* cache_mode, OptionId id,
               double value) {
  const int i = static_cast<int>(value);  // integers and choices (in range: resolve checked)
  switch (id) {
    case OptionId::kCacheMode:
      if (cache_mode != nullptr) *cache_mode = static_cast<CacheMode>(i);
      return;
    case OptionId::kWarmupLaunches:
      m->warmup_launches = i;
      return;
    case OptionId::kMinSamples:
      m->min_samples = i;
      return;
    case OptionId::kMaxSamples:
      m->max_samples = i;
      return;
    case OptionId::kMinTimeSeconds:
      m->min_time_seconds = value;
      return;
    case OptionId::kMaxNoise:
      m->max_noise = value;
      return;
    case OptionId::kTimeoutSeconds:
      m->timeout_seconds = value;
      return;
    case OptionId::kProfileRuns:
      m->profile_runs = i;
      return;
    case OptionId::kKeepSamples:
      m->keep_samples = value != 0;
      return;
    case OptionId::kTimer:
      m->timer = static_cast<TimerChoice>(i);
      return;
    case OptionId::kThrottleThreshold:
      m->throttle_threshold = value;
      return;
    case OptionId::kMaxDuty:
      m->max_duty = value;
      return;
    case OptionId::kPlacementPadBytes:
      m->placement_pad_bytes = static_cast<int64_t>(value);
      return;
    case OptionId::kPlacements:
      m->placements = i;
      return;
    case OptionId::kL2Flush:
      m->l2_flush = static_cast<L2Flush>(i);
      return;
    case OptionId::kStream:
      m->stream = static_cast<StreamKind>(i);
      return;
  }
}

MeasurementOptions TableDefaults() {
  MeasurementOptions m;
  for (const OptionSpec& o : kMeasurementOptions) {
    SetOption(&m, nullptr, o.id, o.default_value);
  }
  return m;
}

double MaxOf(const ServerLimits& limits, OptionId id) {
  switch (id) {
    case OptionId::kWarmupLaunches:
      return limits.max_warmup_launches;
    case OptionId::kMinSamples:
    case OptionId::kMaxSamples:
      return limits.max_samples_limit;
    case OptionId::kMinTimeSeconds:
      return limits.max_min_time_seconds;
    case OptionId::kTimeoutSeconds:
      return limits.max_timeout_seconds;
    case OptionId::kProfileRuns:
      return limits.max_profile_runs;
    default:  // fixed by the table
      return OptionOf(id).max;
  }
}

double ResolvedOption(const RunSpec& spec, OptionId id) {
  return GetOption(spec.measurement, spec.cache_mode, id).value_or(OptionOf(id).default_value);
}

}  // namespace gpubench
