#include "server/engine/user_kernel_checks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/gemm.h"
#include "kernels/gemm_peak.h"

namespace gpubench {
namespace {

// The device's highest dense FLOP/s over every precision of the datasheet table, and its words.
double HighestDenseFlops(const DeviceInfo& device, std::string* basis) {
  double best = 0;
  std::string first_error;
  for (const GemmPrecisionInfo& p : AllGemmPrecisions()) {
    absl::StatusOr<GemmPeak> peak =
        GemmDensePeak(device.name, device.compute_capability_major, device.compute_capability_minor,
                      device.multiprocessor_count, p.precision);
    if (!peak.ok()) {
      if (first_error.empty()) first_error = std::string(peak.status().message());
      continue;
    }
    if (peak->flops_per_second > best) {
      best = peak->flops_per_second;
      *basis = peak->basis;
    }
  }
  if (best <= 0) *basis = first_error;
  return best;
}

std::string Seconds(double s) { return absl::StrFormat("%.4g s", s); }

}  // namespace

const char* FloorBoundName(FloorBound bound) {
  switch (bound) {
    case FloorBound::kNone:
      return "";
    case FloorBound::kDram:
      return "dram";
    case FloorBound::kL2:
      return "l2";
    case FloorBound::kFlop:
      return "flop";
  }
  return "";
}

PhysicalFloor PhysicalFloorOf(const RunResult& result) {
  PhysicalFloor f;
  const DeviceInfo& d = result.device;
  const KernelVariant& k = *result.spec.kernel;
  f.peak_bytes_per_second = d.peak_bandwidth_bytes_per_second;
  if (result.spec.cache_mode == CacheMode::kCold) {
    for (size_t i = 0; i < k.family->buffers.size(); ++i) {
      if (k.family->buffers[i].role != BufferRole::kOutput) {
        f.dram_bytes += BufferBytes(k, result.spec.shape, static_cast<int>(i));
      }
    }
  } else {
    f.dram_bytes = std::max<int64_t>(0, result.bytes_moved - d.l2_cache_bytes);
  }
  if (f.peak_bytes_per_second > 0) {
    f.dram_seconds = static_cast<double>(f.dram_bytes) / f.peak_bytes_per_second;
  }

  f.l2_bytes = result.bytes_moved;
  f.l2_bytes_per_second = d.multiprocessor_count * d.sm_clock_hz * kL2FloorBytesPerSmClock;
  if (f.l2_bytes_per_second > 0) {
    f.l2_seconds = static_cast<double>(f.l2_bytes) / f.l2_bytes_per_second;
  }

  if (k.family->operation_unit == "FLOP") {
    f.flops = OperationsOf(k, result.spec.shape);
    if (f.flops > 0) {
      f.flops_per_second = HighestDenseFlops(d, &f.flop_basis) * kFlopFloorPeakSlack;
      if (f.flops_per_second > 0) {
        f.flop_seconds = static_cast<double>(f.flops) / f.flops_per_second;
      }
    }
  }

  for (const auto& [seconds, bound] :
       {std::pair{f.dram_seconds, FloorBound::kDram}, std::pair{f.l2_seconds, FloorBound::kL2},
        std::pair{f.flop_seconds, FloorBound::kFlop}}) {
    if (seconds > f.seconds) {
      f.seconds = seconds;
      f.bound = bound;
    }
  }
  return f;
}

absl::Status CheckPhysicalFloor(const RunResult& result, std::string* what,
                                UserKernelIntegrity* figures) {
  const PhysicalFloor f = PhysicalFloorOf(result);
  const double median = result.stats.median_seconds;
  if (figures != nullptr) {
    figures->floor_seconds = f.seconds;
    figures->floor_bound = FloorBoundName(f.bound);
    figures->dram_floor_seconds = f.dram_seconds;
    figures->l2_floor_seconds = f.l2_seconds;
    figures->flop_floor_seconds = f.flop_seconds;
  }
  if (f.seconds <= 0) {
    *what = absl::StrFormat(
        "physical_floor: not applicable (%d bytes must come from DRAM, peak %.4g B/s; %d bytes "
        "moved, SM data-path bound %.4g B/s; no FLOP counted or no FLOP/s peak)",
        f.dram_bytes, f.peak_bytes_per_second, f.l2_bytes, f.l2_bytes_per_second);
    return absl::OkStatus();
  }
  const DeviceInfo& d = result.device;
  const std::string dram =
      f.dram_seconds > 0
          ? absl::StrFormat(
                "DRAM %s = %d bytes that must come from DRAM (%s) / %.4g B/s theoretical DRAM "
                "peak",
                Seconds(f.dram_seconds), f.dram_bytes,
                result.spec.cache_mode == CacheMode::kCold ? "every input, the L2 flushed"
                                                           : "bytes moved beyond the L2's size",
                f.peak_bytes_per_second)
          : absl::StrFormat("DRAM 0 (%d bytes must come from DRAM)", f.dram_bytes);
  const std::string l2 =
      f.l2_seconds > 0 ? absl::StrFormat(
                             "L2 %s = %d bytes moved / %.4g B/s (%d SMs x %.4g Hz peak SM clock x "
                             "%g bytes per SM clock)",
                             Seconds(f.l2_seconds), f.l2_bytes, f.l2_bytes_per_second,
                             d.multiprocessor_count, d.sm_clock_hz, kL2FloorBytesPerSmClock)
                       : "L2 unknown (no SM count or clock)";
  std::string flop = "FLOP not counted by the family";
  if (f.flops > 0) {
    flop =
        f.flop_seconds > 0
            ? absl::StrFormat("FLOP %s = %d FLOP / %.4g FLOP/s (%g x %s)", Seconds(f.flop_seconds),
                              f.flops, f.flops_per_second, kFlopFloorPeakSlack, f.flop_basis)
            : absl::StrCat("FLOP unknown: ", f.flop_basis);
  }
  const std::string figures_text =
      absl::StrCat("median ", Seconds(median), " vs floor ", Seconds(f.seconds), " (the ",
                   FloorBoundName(f.bound), " bound): ", dram, "; ", l2, "; ", flop);
  if (median < f.seconds) {
    return absl::FailedPreconditionError(
        absl::StrCat("implausible: the user kernel's median is faster than the device can ",
                     f.bound == FloorBound::kFlop ? "compute its operations" : "move its data",
                     ": ", figures_text));
  }
  *what = absl::StrCat("physical_floor: ", figures_text);
  return absl::OkStatus();
}

absl::Status CheckLaunchCount(const RunResult& result, int kernels_per_launch, std::string* what,
                              UserKernelIntegrity* figures) {
  UserKernelIntegrity unused;
  UserKernelIntegrity& out = figures != nullptr ? *figures : unused;
  const std::optional<WindowAudit>& audit = result.window_audit;
  auto not_applied = [&](const std::string& why) {
    out.launch_count_applied = false;
    out.launch_count_unavailable = why;
    *what = absl::StrCat("launch_count: not applied: ", why);
    return absl::OkStatus();
  };
  if (!audit.has_value()) return not_applied("the run recorded no timed window");
  if (!audit->unavailable_reason.empty()) return not_applied(audit->unavailable_reason);
  int64_t recorded = audit->other_windows;
  for (const WindowTally& t : audit->tallies) recorded += t.windows;
  out.windows_unrecorded = audit->unrecorded_windows;
  out.windows_outside_statistics = audit->audit_only_samples;
  if (recorded == 0) {
    return not_applied(absl::StrCat("no complete activity record came back for any of the ",
                                    audit->unrecorded_windows, " timed windows"));
  }
  const int expected = audit->launches_per_window * kernels_per_launch;
  const bool profiler = audit->source == WindowSource::kRangeProfiler;
  out.launch_count_applied = true;
  out.launch_count_source = WindowSourceName(audit->source);
  out.windows_checked = recorded;
  out.expected_operations = expected;
  out.foreign_kernels = 0;
  const WindowTally* first_bad = nullptr;
  int64_t bad_windows = audit->other_windows;
  for (const WindowTally& t : audit->tallies) {
    out.foreign_kernels += static_cast<int64_t>(t.foreign_kernels) * t.windows;
    if (t.operations == expected && t.kernels == expected && t.foreign_kernels == 0) continue;
    bad_windows += t.windows;
    if (first_bad == nullptr || t.first_sample < first_bad->first_sample) first_bad = &t;
  }
  const std::string expected_text = absl::StrCat(
      "exactly ", expected, expected == 1 ? " kernel" : " kernels", " (",
      audit->launches_per_window, audit->launches_per_window == 1 ? " launch" : " launches",
      " of the user kernel)");
  const std::string source_text =
      profiler ? "counted by the gpu_time timer's range profiler, which holds CUPTI: it sees the "
                 "kernels in each window but no copy or memset, nor which ones were launched "
                 "from the device"
               : "CUPTI activity records of the window's launches, and of any other kernel of the "
                 "context that started in it or was launched from the device";
  if (bad_windows > 0) {
    std::string first;
    if (first_bad != nullptr &&
        (audit->other_windows == 0 || first_bad->first_sample < audit->other_first_sample)) {
      first = absl::StrFormat(
          "timed sample %d ran %d GPU operation%s (%d kernel%s) and %d foreign kernel%s (launched "
          "from the device, or another stream's that started in its window)",
          first_bad->first_sample, first_bad->operations, first_bad->operations == 1 ? "" : "s",
          first_bad->kernels, first_bad->kernels == 1 ? "" : "s", first_bad->foreign_kernels,
          first_bad->foreign_kernels == 1 ? "" : "s");
    } else {
      first = absl::StrCat("timed sample ", audit->other_first_sample,
                           " ran a count beyond the first ", kMaxWindowTallies, " distinct ones");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "launch_count failed: ", first, "; each timed window must hold ", expected_text, "; ",
        bad_windows, " of ", recorded, " recorded windows differed (", source_text, ")"));
  }
  const std::string chosen_text =
      audit->audit_only_samples > 0
          ? absl::StrCat("; the windows were chosen at random before each sample (1 in 2 of the "
                         "first 8, 1 in 8 after) and, traced, kept out of the statistics: ",
                         audit->audit_only_samples, " such samples")
          : "";
  *what = absl::StrCat(
      "launch_count: each of the ", recorded, " recorded timed windows ran ", expected_text,
      profiler ? "" : " and no other kernel", " (", source_text, chosen_text,
      absl::StrFormat("; %d window%s without a complete record, not judged)",
                      audit->unrecorded_windows, audit->unrecorded_windows == 1 ? "" : "s"));
  return absl::OkStatus();
}

absl::Status CheckTimerCrossCheck(const RunResult& result, std::string* what,
                                  UserKernelIntegrity* figures) {
  UserKernelIntegrity unused;
  UserKernelIntegrity& out = figures != nullptr ? *figures : unused;
  out.timer_cross_check_applied = false;
  out.timer_tolerance = kTimerCrossCheckRelative;
  out.timer_tolerance_seconds = kTimerCrossCheckAbsoluteSeconds;
  const std::optional<WindowAudit>& audit = result.window_audit;
  std::string why;
  if (!audit.has_value()) {
    why = "the run recorded no timed window";
  } else if (!audit->unavailable_reason.empty()) {
    why = audit->unavailable_reason;
  } else if (!audit->kernel_median_seconds.has_value() ||
             !audit->timer_median_seconds.has_value() || *audit->kernel_median_seconds <= 0) {
    why = "no kept sample has a complete activity record";
  }
  if (!why.empty()) {
    out.timer_cross_check = "not applied";
    *what = absl::StrCat("timer_cross_check: not applied: ", why);
    return absl::OkStatus();
  }
  const double kernel = *audit->kernel_median_seconds;
  const double timer = *audit->timer_median_seconds;
  out.kernel_median_seconds = kernel;
  out.timer_median_seconds = timer;
  out.timer_ratio = timer / kernel;
  const std::string medians = absl::StrFormat(
      "median %s over %d recorded samples, the kernel's own duration median %s (ratio %.4f)",
      Seconds(timer), audit->compared_samples, Seconds(kernel), out.timer_ratio);
  switch (result.timer) {
    case SampleTimer::kCuptiActivity:
      out.timer_cross_check = "the timer is the kernels' activity records themselves";
      *what = absl::StrCat(
          "timer_cross_check: the timer is CUPTI's activity records, the kernel's own duration "
          "(",
          medians, "): nothing independent to compare with",
          result.event_median_seconds.has_value()
              ? absl::StrFormat("; the CUDA events of the same samples read median %s",
                                Seconds(*result.event_median_seconds))
              : "");
      return absl::OkStatus();
    case SampleTimer::kGpuTimeDuration:
      out.timer_cross_check = "the timer is gpu__time_duration itself";
      *what = absl::StrCat(
          "timer_cross_check: the timer is the kernel's gpu__time_duration counter, the figure "
          "the cross-check compares with (",
          medians, "): nothing independent to compare with");
      return absl::OkStatus();
    case SampleTimer::kCudaEvent:
      break;
    case SampleTimer::kCpuClock:
      out.timer_cross_check = "not applied";
      *what = "timer_cross_check: not applied: the CPU clock times no device kernel";
      return absl::OkStatus();
  }
  out.timer_cross_check_applied = true;
  out.timer_cross_check =
      absl::StrCat(SampleTimerName(result.timer), " against ", WindowSourceName(audit->source));
  const double least = kernel * (1 - kTimerCrossCheckRelative) - kTimerCrossCheckAbsoluteSeconds;
  const std::string figures_text =
      absl::StrCat("the ", SampleTimerName(result.timer), " timer's ", medians, " from ",
                   WindowSourceName(audit->source),
                   " of the same launches; the timer's window contains the "
                   "kernel, so it may read less only by ",
                   absl::StrFormat("%g%% + %s", 100 * kTimerCrossCheckRelative,
                                   Seconds(kTimerCrossCheckAbsoluteSeconds)));
  if (timer < least) {
    return absl::FailedPreconditionError(absl::StrCat(
        "timer_cross_check failed: the timer read faster than the kernel ran: ", figures_text,
        " (at least ", Seconds(least), ")"));
  }
  *what = absl::StrCat("timer_cross_check: ", figures_text);
  return absl::OkStatus();
}

}  // namespace gpubench
