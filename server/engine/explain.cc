#include "server/engine/explain.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench {
namespace {

// Above this share of the theoretical peak a streaming kernel is at the memory wall: the measured
// device-to-device copy on an H200 reaches 88% (bench/results/2026-11-29-h200-seed-kernels.md).
constexpr double kMemoryBoundPercent = 80;
// Below this a run is dominated by launch and ramp-up, not by bandwidth.
constexpr double kLaunchBoundSeconds = 10e-6;

std::string LimiterWords(const std::string& limiter) {
  std::string out;
  for (size_t start = 0; start <= limiter.size();) {
    size_t end = limiter.find('+', start);
    if (end == std::string::npos) end = limiter.size();
    const std::string part = limiter.substr(start, end - start);
    const char* words = part == "warps"           ? "threads per SM"
                        : part == "registers"     ? "registers"
                        : part == "shared_memory" ? "shared memory"
                        : part == "blocks"        ? "the blocks-per-SM cap (blocks too small)"
                                                  : part.c_str();
    absl::StrAppend(&out, out.empty() ? "" : " and ", words);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string Explain(const ExplainInputs& in) {
  if (!in.occupancy.has_value()) {
    if (in.percent_of_peak.has_value()) {
      return absl::StrFormat("%.0f%% of peak bandwidth; occupancy is not known for this launch "
                             "(library-chosen configuration or CPU backend).",
                             *in.percent_of_peak);
    }
    return "Occupancy does not apply on this backend.";
  }
  const OccupancyReport& o = *in.occupancy;
  std::string line = absl::StrFormat(
      "Theoretical occupancy %.0f%% (%d of %d warps per SM, %d blocks) limited by %s",
      100 * o.theoretical_occupancy, o.active_warps_per_multiprocessor,
      o.max_warps_per_multiprocessor, o.active_blocks_per_multiprocessor,
      LimiterWords(o.limiter));
  if (in.achieved_occupancy.has_value()) {
    absl::StrAppend(&line, absl::StrFormat("; achieved %.0f%%", 100 * *in.achieved_occupancy));
  }
  absl::StrAppend(&line, ". ");
  if (in.median_seconds > 0 && in.median_seconds < kLaunchBoundSeconds) {
    absl::StrAppend(&line, absl::StrFormat(
                               "The launch lasts %.1f us (%.2f waves): launch and ramp-up "
                               "dominate, so neither occupancy nor bandwidth is the limit.",
                               in.median_seconds * 1e6, in.waves));
    return line;
  }
  if (!in.percent_of_peak.has_value()) return line;
  const double peak = *in.percent_of_peak;
  if (peak >= kMemoryBoundPercent) {
    absl::StrAppend(&line, absl::StrFormat("Memory-bound at %.0f%% of peak bandwidth: occupancy "
                                           "does not matter for this run.",
                                           peak));
  } else if (o.theoretical_occupancy <= 0.5) {
    absl::StrAppend(&line, absl::StrFormat("Only %.0f%% of peak bandwidth: too few warps keep too "
                                           "few bytes in flight; raise occupancy (%s) or the "
                                           "bytes each thread loads.",
                                           peak, LimiterWords(o.limiter)));
  } else {
    absl::StrAppend(&line, absl::StrFormat(
                               "Occupancy is ample but bandwidth is %.0f%% of peak: latency-bound "
                               "on too few bytes in flight per thread (narrow loads, little ILP) "
                               "or extra work per element, not on occupancy.",
                               peak));
  }
  return line;
}

}  // namespace gpubench
