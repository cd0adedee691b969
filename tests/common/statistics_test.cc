#include "common/statistics.h"

#include <gtest/gtest.h>

#include <cmath>

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
