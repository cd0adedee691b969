#include "server/engine/measurement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "kernels/reference.h"
#include "server/engine/explain.h"

namespace gpubench {
namespace {

std::string NewRunId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("%016x", rng());
}

}  // namespace

absl::StatusOr<RunResult> MeasureRun(Backend& backend, const RunSpec& spec,
                                     const CancelledFn& cancelled, ParallelPool* pool) {
  RunResult result;
  result.run_id = NewRunId();
  result.spec = spec;
  result.backend = std::string(backend.name());
  result.started_at = absl::Now();
  const KernelVariant& kernel = *spec.kernel;
  const MeasurementOptions& m = spec.measurement;

  ASSIGN_OR_RETURN(result.device, backend.Describe(spec.device_index));
  const HostData data = GenerateHostData(kernel, spec.elements, spec.seed, pool);
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   backend.Open(spec.device_index, kernel, spec.geometry, data));
  result.resources = session->Resources();

  RETURN_IF_ERROR(session->Warmup(m.warmup_launches));

  int batch = 1;
  if (spec.cache_mode == CacheMode::kHot) {
    // Size the batch from one launch timed after warm-up.
    ASSIGN_OR_RETURN(const double one, session->HotSample(1));
    batch = static_cast<int>(std::clamp(std::ceil(kHotBatchTargetSeconds / std::max(one, 1e-9)),
                                        1.0, static_cast<double>(kMaxHotBatch)));
  }
  result.hot_batch_size = batch;

  std::vector<double> samples;  // per-launch seconds
  const auto wall_start = std::chrono::steady_clock::now();
  const double default_clock = result.device.sm_clock_hz;
  int total_samples = 0;
  while (true) {
    if (cancelled()) return absl::CancelledError("run cancelled while sampling");
    double seconds;
    if (spec.cache_mode == CacheMode::kCold) {
      ASSIGN_OR_RETURN(seconds, session->ColdSample());
    } else {
      ASSIGN_OR_RETURN(const double batch_seconds, session->HotSample(batch));
      seconds = batch_seconds / batch;
    }
    ++total_samples;
    bool keep = true;
    if (std::optional<double> clock = session->CurrentClockHz(); clock.has_value()) {
      result.min_clock_hz = std::min(result.min_clock_hz.value_or(*clock), *clock);
      result.max_clock_hz = std::max(result.max_clock_hz.value_or(*clock), *clock);
      if (default_clock > 0 && *clock < kThrottleThreshold * default_clock) {
        keep = false;
        ++result.throttled_samples;
      }
    }
    if (keep) {
      samples.push_back(seconds);
      result.measured_seconds += seconds * batch;
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    const int kept = static_cast<int>(samples.size());
    if (kept >= m.min_samples && result.measured_seconds >= m.min_time_seconds) {
      const SampleStatistics s = ComputeStatistics(samples);
      if (s.relative_noise <= m.max_noise) {
        result.noise_reached = true;
        result.stop_reason = absl::StrFormat(
            "noise %.3f%% <= max_noise %.3f%% after %d samples", 100 * s.relative_noise,
            100 * m.max_noise, kept);
        break;
      }
    }
    if (kept >= m.max_samples) {
      result.stop_reason = absl::StrCat("max_samples ", m.max_samples, " reached");
      break;
    }
    if (wall >= m.timeout_seconds) {
      result.stop_reason = absl::StrFormat(
          "timeout %.3g s reached with %d samples kept of %d; noise target not reached", 
          m.timeout_seconds, kept, total_samples);
      break;
    }
  }
  if (samples.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "all ", total_samples, " samples were taken while the SM clock was throttled below ",
        kThrottleThreshold * 100, "% of its default; no result"));
  }
  result.stats = ComputeStatistics(samples);
  if (!result.noise_reached && result.stats.relative_noise <= m.max_noise &&
      samples.size() >= static_cast<size_t>(m.min_samples)) {
    result.noise_reached = true;  // stopped by max_samples with the noise target met anyway
  }

  result.bytes_moved = spec.elements * kernel.bytes_per_element;
  result.bandwidth_bytes_per_second = result.bytes_moved / result.stats.median_seconds;
  result.bandwidth_mean_bytes_per_second = result.bytes_moved / result.stats.mean_seconds;
  result.elements_per_second = spec.elements / result.stats.median_seconds;
  if (result.device.peak_bandwidth_bytes_per_second > 0) {
    result.percent_of_peak =
        100.0 * result.bandwidth_bytes_per_second / result.device.peak_bandwidth_bytes_per_second;
  }

  if (spec.verify) {
    if (cancelled()) return absl::CancelledError("run cancelled before verification");
    std::vector<std::byte> out(static_cast<size_t>(spec.elements) * DTypeSize(kernel.dtype));
    RETURN_IF_ERROR(session->RunOnceAndRead(out.data()));
    result.verification = Verify(kernel, data, out.data(), pool);
  }
  // Occupancy: the calculator's arithmetic on the compiled kernel's resources.
  const KernelResources& res = result.resources;
  const DeviceInfo& d = result.device;
  if (res.available) {
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
    result.occupancy = ComputeOccupancy(in);
    if (d.multiprocessor_count > 0 && result.occupancy->active_blocks_per_multiprocessor > 0) {
      result.waves = static_cast<double>(spec.geometry.grid_size) /
                     (d.multiprocessor_count * result.occupancy->active_blocks_per_multiprocessor);
    }
  }
  // Achieved occupancy: a separate profiling pass, after all timed samples.
  if (spec.profile) {
    if (cancelled()) return absl::CancelledError("run cancelled before profiling");
    result.counters = session->ProfileCounters();
  } else if (result.backend == "cpu") {
    result.counters = session->ProfileCounters();  // no counters there; it only says why
  } else {
    result.counters.unavailable_reason =
        spec.profile_forbidden
            ? "profiling is disabled on this server (--allow_profiling=false)"
            : "not requested: set \"profile\": true (gpubench --profile) for a counter pass";
  }
  result.explanation = Explain({.occupancy = result.occupancy,
                                .achieved_occupancy = result.counters.achieved_occupancy,
                                .percent_of_peak = result.percent_of_peak,
                                .median_seconds = result.stats.median_seconds,
                                .waves = result.waves});
  result.finished_at = absl::Now();
  return result;
}

}  // namespace gpubench
