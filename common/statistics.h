// Summary statistics over timing samples, in nvbench's vocabulary: exact ones computed once over
// all samples (ComputeStatistics), and running ones updated per sample in O(1) (RunningStatistics,
// Welford's algorithm) for stopping checks inside a sampling loop.
#ifndef GPUBENCH_COMMON_STATISTICS_H_
#define GPUBENCH_COMMON_STATISTICS_H_

#include <cstdint>
#include <vector>

namespace gpubench {

struct SampleStatistics {
  int count = 0;
  double min_seconds = 0;
  double median_seconds = 0;
  double mean_seconds = 0;
  double max_seconds = 0;
  double stddev_seconds = 0;  // sample standard deviation (n - 1); 0 for fewer than two samples
  double relative_noise = 0;  // stddev / mean, the quantity nvbench's stopping criterion bounds
  // Percentiles, linear interpolation between closest ranks (numpy's default): p50 == median.
  double p5_seconds = 0;
  double p25_seconds = 0;
  double p75_seconds = 0;
  double p95_seconds = 0;
  double iqr_seconds = 0;  // p75 - p25
};

// Computes the statistics of `samples` (seconds each). Empty input gives count 0 and zeros.
// Pure function; thread-safe.
SampleStatistics ComputeStatistics(const std::vector<double>& samples);

// The `fraction` (0..1) percentile of ascending `sorted`, linearly interpolated between the
// closest ranks. 0 for an empty vector.
double Percentile(const std::vector<double>& sorted, double fraction);

// Mean and variance updated one value at a time (Welford): O(1) per value and numerically stable,
// unlike summing squares. Not thread-safe.
class RunningStatistics {
 public:
  void Add(double value);
  int64_t count() const { return count_; }
  double mean() const { return mean_; }
  double sum() const { return sum_; }
  // Sample variance (n - 1); 0 for fewer than two values.
  double variance() const;
  double stddev() const;
  // stddev / mean; 0 for fewer than two values or a non-positive mean.
  double relative_stddev() const;

 private:
  int64_t count_ = 0;
  double mean_ = 0;
  double m2_ = 0;  // sum of squared deviations from the running mean
  double sum_ = 0;
};

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_STATISTICS_H_
