#include "server/engine/stopping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

namespace gpubench {
namespace {

struct Outcome {
  StopRule rule = StopRule::kNone;
  int kept = 0;
  std::string reason;
  double noise = 0;
};

// Feeds `stream(i)` (seconds) one sample at a time until the stopper decides; the "wall clock" is
// the sum of the samples, so timeouts are deterministic.
Outcome Feed(const std::function<double(int)>& stream, SamplingStopper::Limits limits,
             StdRelCriterion::Params params) {
  params.max_noise = limits.max_noise;
  params.min_time_seconds = limits.min_time_seconds;
  SamplingStopper stopper(limits, std::make_unique<StdRelCriterion>(params));
  double wall = 0;
  for (int i = 0;; ++i) {
    const double s = stream(i);
    wall += s;
    stopper.AddKept(s, s);
    if (const StopRule rule = stopper.Decide(wall); rule != StopRule::kNone) {
      return {rule, stopper.kept(), stopper.reason(), stopper.criterion().noise()};
    }
  }
}

SamplingStopper::Limits Limits(double max_noise = 0.005, double min_time = 0, int min_samples = 10,
                               int max_samples = 1000000, double timeout = 1e9) {
  return {.min_samples = min_samples,
          .max_samples = max_samples,
          .timeout_seconds = timeout,
          .max_noise = max_noise,
          .min_time_seconds = min_time};
}

TEST(Stopping, QuietStreamStopsAtTheNoiseTarget) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> jitter(0, 0.001);  // 0.1% noise, target 0.5%
  const Outcome o = Feed([&](int) { return 1e-3 * (1 + jitter(rng)); }, Limits(), {});
  EXPECT_EQ(o.rule, StopRule::kNoiseTarget);
  EXPECT_EQ(o.kept, 10);  // min_samples
  EXPECT_STREQ(StopRuleName(o.rule), "noise_target");
  EXPECT_NE(o.reason.find("max_noise"), std::string::npos) << o.reason;
}

TEST(Stopping, MinTimeAndMinSamplesHoldTheStop) {
  const Outcome by_time = Feed([](int) { return 1e-3; }, Limits(0.005, 0.1, 2), {});
  EXPECT_EQ(by_time.rule, StopRule::kNoiseTarget);
  EXPECT_GE(by_time.kept, 100);
  EXPECT_LE(by_time.kept, 101);
  const Outcome by_count = Feed([](int) { return 1e-3; }, Limits(0.005, 0, 37), {});
  EXPECT_EQ(by_count.kept, 37);
}

TEST(Stopping, NoisyButStableStreamConverges) {
  // 5% noise never meets a 0.5% target; its estimate settles, and the run ends by convergence
  // instead of running to the timeout.
  std::mt19937_64 rng(2);
  std::normal_distribution<double> jitter(0, 0.05);
  const Outcome o = Feed([&](int) { return 1e-5 * (1 + jitter(rng)); }, Limits(), {});
  EXPECT_EQ(o.rule, StopRule::kNoiseConverged) << o.reason;
  EXPECT_STREQ(StopRuleName(o.rule), "noise_converged");
  EXPECT_GT(o.kept, 64);
  EXPECT_LT(o.kept, 5000);
  EXPECT_NEAR(o.noise, 0.05, 0.01);
  EXPECT_EQ(o.kept % 16, 0);  // convergence is checked every 16 samples
}

TEST(Stopping, BimodalStreamConvergesAndReportsItsSpread) {
  // Two modes 20% apart, picked at random: a stable but large noise (about 10%).
  std::mt19937_64 rng(3);
  std::bernoulli_distribution slow(0.5);
  const Outcome o = Feed([&](int) { return slow(rng) ? 1.2e-5 : 1.0e-5; }, Limits(), {});
  EXPECT_EQ(o.rule, StopRule::kNoiseConverged) << o.reason;
  EXPECT_NEAR(o.noise, 0.1 / 1.1, 0.01);
}

TEST(Stopping, NeverConvergingStreamRunsToTheTimeout) {
  // Each sample slower than the last by a growing step: the noise estimate keeps rising.
  const Outcome o =
      Feed([](int i) { return 1e-6 * std::exp(i * 1e-2); }, Limits(0.005, 0, 10, 1000000, 1.0), {});
  EXPECT_EQ(o.rule, StopRule::kTimeout) << o.reason;
  EXPECT_NE(o.reason.find("not converged"), std::string::npos) << o.reason;
}

TEST(Stopping, MaxSamplesEndsANeverConvergingStream) {
  const Outcome o = Feed([](int i) { return 1e-6 * std::exp(i * 1e-2); },
                         Limits(0.005, 0, 10, 300), {});
  EXPECT_EQ(o.rule, StopRule::kMaxSamples);
  EXPECT_EQ(o.kept, 300);
}

TEST(Stopping, ConvergenceNeedsMoreThanTheMinimumWindow) {
  // Alternating samples (33% noise) with min_window 64: no convergence before 65 noise values.
  const Outcome o = Feed([](int i) { return i % 2 ? 2e-3 : 1e-3; }, Limits(), {});
  EXPECT_EQ(o.rule, StopRule::kNoiseConverged);
  EXPECT_GT(o.kept, 65);
}

TEST(Stopping, DiscardedSamplesCountAsTakenNotKept) {
  SamplingStopper stopper(Limits(), std::make_unique<StdRelCriterion>(StdRelCriterion::Params{}));
  stopper.AddDiscarded();
  stopper.AddKept(1e-3, 1e-3);
  EXPECT_EQ(stopper.taken(), 2);
  EXPECT_EQ(stopper.kept(), 1);
  EXPECT_EQ(stopper.Decide(2.0e9), StopRule::kTimeout);
  EXPECT_NE(stopper.reason().find("1 samples kept of 2"), std::string::npos) << stopper.reason();
  EXPECT_NE(stopper.reason().find("min_samples 10 not reached"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
