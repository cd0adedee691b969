#include "common/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpubench {

double Percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  const double position = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = position - static_cast<double>(below);
  return sorted[below] + weight * (sorted[above] - sorted[below]);
}

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
  stats.p5_seconds = Percentile(sorted, 0.05);
  stats.p25_seconds = Percentile(sorted, 0.25);
  stats.p75_seconds = Percentile(sorted, 0.75);
  stats.p95_seconds = Percentile(sorted, 0.95);
  stats.iqr_seconds = stats.p75_seconds - stats.p25_seconds;
  return stats;
}

void RunningStatistics::Add(double value) {
  ++count_;
  sum_ += value;
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (value - mean_);
}

double RunningStatistics::variance() const {
  return count_ > 1 ? std::max(0.0, m2_) / static_cast<double>(count_ - 1) : 0;
}

double RunningStatistics::stddev() const { return std::sqrt(variance()); }

double RunningStatistics::relative_stddev() const {
  return count_ > 1 && mean_ > 0 ? stddev() / mean_ : 0;
}

}  // namespace gpubench
