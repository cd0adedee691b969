#include "common/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpubench {

SampleStatistics ComputeStatistics(const std::vector<double>& samples) {
  SampleStatistics stats;
  stats.count = static_cast<int>(samples.size());
  if (samples.empty()) return stats;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  stats.min_seconds = sorted.front();
  stats.max_seconds = sorted.back();
  stats.median_seconds = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  stats.mean_seconds = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double sum_sq = 0;
    for (double v : sorted) sum_sq += (v - stats.mean_seconds) * (v - stats.mean_seconds);
    stats.stddev_seconds = std::sqrt(sum_sq / static_cast<double>(n - 1));
  }
  stats.relative_noise = stats.mean_seconds > 0 ? stats.stddev_seconds / stats.mean_seconds : 0;
  return stats;
}

}  // namespace gpubench
