// Summary statistics over timing samples, in nvbench's vocabulary.
#ifndef GPUBENCH_COMMON_STATISTICS_H_
#define GPUBENCH_COMMON_STATISTICS_H_

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
};

// Computes the statistics of `samples` (seconds each). Empty input gives count 0 and zeros.
// Pure function; thread-safe.
SampleStatistics ComputeStatistics(const std::vector<double>& samples);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_STATISTICS_H_
