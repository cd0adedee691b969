#include "common/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace gpubench {
namespace {

TEST(Statistics, HandComputed) {
  // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample variance 32/7.
  const SampleStatistics s = ComputeStatistics({4, 2, 9, 4, 5, 4, 7, 5});
  EXPECT_EQ(s.count, 8);
  EXPECT_DOUBLE_EQ(s.min_seconds, 2);
  EXPECT_DOUBLE_EQ(s.max_seconds, 9);
  EXPECT_DOUBLE_EQ(s.median_seconds, 4.5);
  EXPECT_DOUBLE_EQ(s.mean_seconds, 5);
  EXPECT_NEAR(s.stddev_seconds, std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_NEAR(s.relative_noise, std::sqrt(32.0 / 7.0) / 5, 1e-12);
}

TEST(Statistics, OddMedianSingleAndEmpty) {
  EXPECT_DOUBLE_EQ(ComputeStatistics({3, 1, 2}).median_seconds, 2);
  const SampleStatistics one = ComputeStatistics({1e-3});
  EXPECT_EQ(one.count, 1);
  EXPECT_DOUBLE_EQ(one.stddev_seconds, 0);
  EXPECT_DOUBLE_EQ(one.relative_noise, 0);
  EXPECT_EQ(ComputeStatistics({}).count, 0);
}

}  // namespace
}  // namespace gpubench

namespace gpubench {
namespace {

TEST(Statistics, PercentilesInterpolateBetweenClosestRanks) {
  // 1..101: the p-th percentile of 101 evenly spaced values is exactly 1 + 100 p.
  std::vector<double> v;
  for (int i = 101; i >= 1; --i) v.push_back(i);
  const SampleStatistics s = ComputeStatistics(v);
  EXPECT_DOUBLE_EQ(s.p5_seconds, 6);
  EXPECT_DOUBLE_EQ(s.p25_seconds, 26);
  EXPECT_DOUBLE_EQ(s.median_seconds, 51);
  EXPECT_DOUBLE_EQ(s.p75_seconds, 76);
  EXPECT_DOUBLE_EQ(s.p95_seconds, 96);
  EXPECT_DOUBLE_EQ(s.iqr_seconds, 50);
  // Between ranks: {1, 2, 3, 4}, p25 sits at position 0.75 -> 1.75.
  EXPECT_DOUBLE_EQ(ComputeStatistics({4, 3, 2, 1}).p25_seconds, 1.75);
  EXPECT_DOUBLE_EQ(Percentile({}, 0.5), 0);
  EXPECT_DOUBLE_EQ(Percentile({7}, 0.95), 7);
}

TEST(RunningStatistics, MatchesTheExactStatisticsOnRandomStreams) {
  std::mt19937_64 rng(42);
  for (double scale : {1e-6, 1e-3, 1.0}) {
    std::lognormal_distribution<double> dist(0, 0.3);
    std::vector<double> values;
    RunningStatistics running;
    for (int i = 0; i < 20000; ++i) {
      values.push_back(scale * (1 + dist(rng)));
      running.Add(values.back());
      if (i == 1 || i == 99 || i == 19999) {
        const SampleStatistics exact = ComputeStatistics(values);
        EXPECT_EQ(running.count(), exact.count);
        EXPECT_NEAR(running.mean(), exact.mean_seconds, 1e-12 * exact.mean_seconds);
        EXPECT_NEAR(running.stddev(), exact.stddev_seconds, 1e-9 * exact.stddev_seconds);
        EXPECT_NEAR(running.relative_stddev(), exact.relative_noise, 1e-9 * exact.relative_noise);
      }
    }
  }
}

TEST(RunningStatistics, StableWhereSummingSquaresCancels) {
  // Values 1e9 + {0, 1, 2}: the naive sum of squares loses the spread in rounding.
  RunningStatistics r;
  for (double v : {1e9, 1e9 + 1, 1e9 + 2}) r.Add(v);
  EXPECT_DOUBLE_EQ(r.variance(), 1.0);
  RunningStatistics one;
  one.Add(5);
  EXPECT_EQ(one.variance(), 0);
  EXPECT_EQ(one.relative_stddev(), 0);
}

}  // namespace
}  // namespace gpubench
