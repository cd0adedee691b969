// Which timed samples the timed-sample check verifies (kernels/timed_check.h).
#include "kernels/timed_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gpubench {
namespace {

std::vector<int64_t> Chosen(uint64_t seed, int64_t samples) {
  TimedSampleChooser chooser(seed);
  std::vector<int64_t> chosen;
  for (int64_t i = 1; i <= samples; ++i) {
    if (chooser.Next()) chosen.push_back(i);
  }
  return chosen;
}

TEST(TimedSampleChooser, FirstSampleAlwaysAndDeterministicPerSeed) {
  for (uint64_t seed = 1; seed < 100; ++seed) {
    const std::vector<int64_t> chosen = Chosen(seed, 50);
    ASSERT_FALSE(chosen.empty());
    EXPECT_EQ(chosen.front(), 1);
    EXPECT_EQ(chosen, Chosen(seed, 50));
  }
  EXPECT_NE(Chosen(1, 1000), Chosen(2, 1000));
}

// The reservoir property: the last chosen of N samples is uniform over 1..N, so a kernel that
// computes fully only on its first k samples is caught unless no sample after k is chosen (k/N).
TEST(TimedSampleChooser, LastChosenIsUniformAndAboutLogNAreChosen) {
  constexpr int64_t kSamples = 20;
  constexpr int kRuns = 40000;
  std::vector<int> last(kSamples + 1, 0);
  double chosen_total = 0;
  for (int run = 0; run < kRuns; ++run) {
    const std::vector<int64_t> chosen = Chosen(0x9e37'79b9'0000'0000ull + run, kSamples);
    ++last[chosen.back()];
    chosen_total += static_cast<double>(chosen.size());
  }
  const double expected = static_cast<double>(kRuns) / kSamples;  // 2000 per index
  for (int64_t i = 1; i <= kSamples; ++i) {
    // 5 standard deviations of a binomial(40000, 1/20) count: sqrt(1900) = 43.6.
    EXPECT_NEAR(last[i], expected, 5 * 43.6) << "sample " << i;
  }
  double harmonic = 0;
  for (int64_t i = 1; i <= kSamples; ++i) harmonic += 1.0 / static_cast<double>(i);
  EXPECT_NEAR(chosen_total / kRuns, harmonic, 0.05);
}

TEST(TimedSampleChooser, InputSeedsDifferFromTheRunsAndFromEachOther) {
  TimedSampleChooser chooser(42);
  const uint64_t a = chooser.InputSeed();
  const uint64_t b = chooser.InputSeed();
  EXPECT_NE(a, 42u);
  EXPECT_NE(b, 42u);
  EXPECT_NE(a, b);
}

// Half of the first 8 samples, an eighth after, deterministic per seed and different across seeds.
TEST(WindowAuditChooser, HalfOfTheFirstEightAnEighthAfter) {
  int64_t early = 0, late = 0;
  constexpr int kRuns = 2000;
  for (uint64_t seed = 1; seed <= kRuns; ++seed) {
    WindowAuditChooser chooser(seed);
    for (int i = 1; i <= 108; ++i) {
      if (chooser.Next()) ++(i <= 8 ? early : late);
    }
  }
  EXPECT_NEAR(static_cast<double>(early) / (kRuns * 8), 0.5, 0.03);
  EXPECT_NEAR(static_cast<double>(late) / (kRuns * 100), 0.125, 0.01);
  std::vector<bool> a, b, c;
  WindowAuditChooser ca(7), cb(7), cc(8);
  for (int i = 0; i < 64; ++i) {
    a.push_back(ca.Next());
    b.push_back(cb.Next());
    c.push_back(cc.Next());
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace gpubench
