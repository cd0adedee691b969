// The change-point detector on synthetic series: a 5% step is declared within two passes of it
// (with its confirmation re-runs), and 24 steady passes with 1% pass-to-pass noise declare none,
// over many seeds.
#include "server/health/change_point.h"

#include <gtest/gtest.h>

#include <random>

namespace gpubench::health {
namespace {

// A pass: the point, and the confirmation re-runs a candidate asks for, drawn alike.
struct Sim {
  explicit Sim(uint32_t seed) : rng(seed) {}
  Point Draw(double level, bool confirmation) {
    const double v = level * (1 + noise(rng));
    const double half = 0.004 * v;  // each run's own 95% half-width (0.2% standard error)
    Point p{.time = absl::FromUnixSeconds(t += 600),
            .value = v,
            .low = v - half,
            .high = v + half,
            .confirmation = confirmation};
    return p;
  }
  // One pass at `level`; returns the change points it declared.
  int Pass(Series& s, double level) {
    int declared = s.Add(Draw(level, false)).has_value();
    while (s.confirmations_wanted() > 0) declared += s.Add(Draw(level, true)).has_value();
    return declared;
  }
  std::mt19937 rng;
  std::normal_distribution<double> noise{0, 0.01};
  int64_t t = 1'800'000'000;
};

TEST(ChangePointTest, NoFalseChangeOver24SteadyPasses) {
  int false_changes = 0, candidates = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    Sim sim(seed);
    Series s(DetectorConfig{}, /*higher_is_better=*/true);
    for (int pass = 0; pass < 24; ++pass) {
      false_changes += sim.Pass(s, 1e12);
      candidates += s.candidate();
    }
    EXPECT_TRUE(s.changes().empty()) << "seed " << seed;
  }
  EXPECT_EQ(false_changes, 0);
}

TEST(ChangePointTest, FivePercentStepDeclaredWithinTwoPasses) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    Sim sim(seed);
    Series s(DetectorConfig{}, /*higher_is_better=*/true);
    for (int pass = 0; pass < 10; ++pass) ASSERT_EQ(sim.Pass(s, 1e12), 0) << "seed " << seed;
    int declared_at = -1;
    for (int pass = 0; pass < 4 && declared_at < 0; ++pass) {
      if (sim.Pass(s, 0.95e12) > 0) declared_at = pass;
    }
    ASSERT_GE(declared_at, 0) << "seed " << seed << ": the step was never declared";
    EXPECT_LE(declared_at, 1) << "seed " << seed;
    const ChangePoint& cp = s.changes().back();
    EXPECT_TRUE(cp.worse);
    EXPECT_NEAR(cp.comparison.change, -0.05, 0.02);
    EXPECT_LT(cp.comparison.high, -DetectorConfig{}.threshold);  // the interval excludes it
    EXPECT_GE(cp.comparison.after_points, 1 + DetectorConfig{}.confirmations);
  }
}

TEST(ChangePointTest, ATransientIsNotConfirmed) {
  Sim sim(7);
  Series s(DetectorConfig{}, true);
  for (int pass = 0; pass < 10; ++pass) sim.Pass(s, 1e12);
  // One slow run, then its re-runs at the usual level: a candidate, never a change.
  s.Add(sim.Draw(0.9e12, false));
  ASSERT_TRUE(s.candidate());
  EXPECT_EQ(s.confirmations_wanted(), 3);
  while (s.confirmations_wanted() > 0) EXPECT_FALSE(s.Add(sim.Draw(1e12, true)).has_value());
  EXPECT_FALSE(s.candidate());
  EXPECT_TRUE(s.changes().empty());
}

TEST(ChangePointTest, LatencyUpIsWorseAndAStepBackRecovers) {
  Sim sim(3);
  Series s(DetectorConfig{}, /*higher_is_better=*/false);
  for (int pass = 0; pass < 8; ++pass) sim.Pass(s, 500e-9);
  for (int pass = 0; pass < 2 && s.changes().empty(); ++pass) sim.Pass(s, 550e-9);
  ASSERT_EQ(s.changes().size(), 1u);
  EXPECT_TRUE(s.changes().back().worse);
  for (int pass = 0; pass < 8 && s.changes().size() == 1; ++pass) sim.Pass(s, 500e-9);
  ASSERT_EQ(s.changes().size(), 2u);
  EXPECT_FALSE(s.changes().back().worse);
}

TEST(ChangePointTest, NoTestBeforeTheLevelIsKnown) {
  Sim sim(5);
  Series s(DetectorConfig{}, true);
  for (int pass = 0; pass < DetectorConfig{}.min_baseline; ++pass) {
    s.Add(sim.Draw(pass % 2 ? 1e12 : 0.5e12, false));  // wild, but too few to judge
    EXPECT_FALSE(s.candidate());
  }
}

TEST(ChangePointTest, IntervalWidensWithFewerPointsAndMoreNoise) {
  auto at = [](double v, double lo, double hi) {
    return Point{absl::UnixEpoch(), v, lo, hi, false};
  };
  std::vector<Point> before, after;
  for (int i = 0; i < 8; ++i) before.push_back(at(100.0 + (i % 2 ? 1 : -1), 99, 101));
  after.push_back(at(95, 94, 96));
  const WindowComparison one = CompareWindows(before, after);
  for (int i = 0; i < 3; ++i) after.push_back(at(95, 94, 96));
  const WindowComparison four = CompareWindows(before, after);
  EXPECT_NEAR(one.change, -0.05, 1e-9);
  EXPECT_GT(one.high - one.low, four.high - four.low);
  EXPECT_LT(four.high, -0.02);
  EXPECT_DOUBLE_EQ(StudentT975(10), 2.228);
}

}  // namespace
}  // namespace gpubench::health
