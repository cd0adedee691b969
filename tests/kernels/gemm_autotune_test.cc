// The gemm family's choice among cuBLASLt's candidates (kernels/gemm_autotune.h): trial planning
// and the fastest-candidate rule, on any machine.
#include "kernels/gemm_autotune.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpubench {
namespace {

TEST(PlanGemmTrials, FastLaunchesAreBatchedToAboutOneMillisecond) {
  const GemmTrialPlan p = PlanGemmTrials(8, 0.18e-3);  // bf16 4096^3 on an H200
  EXPECT_EQ(p.batch, 6);                               // ceil(1 ms / 0.18 ms)
  EXPECT_EQ(p.candidates, 8);
  EXPECT_EQ(p.rounds, kGemmMaxTrialRounds);
}

TEST(PlanGemmTrials, BatchIsCappedForTinyLaunches) {
  const GemmTrialPlan p = PlanGemmTrials(8, 5e-6);
  EXPECT_EQ(p.batch, kGemmMaxTrialBatch);
  EXPECT_EQ(p.candidates, 8);
  EXPECT_EQ(p.rounds, kGemmMaxTrialRounds);
}

TEST(PlanGemmTrials, SlowLaunchesGetFewerRoundsWithinTheBudget) {
  // 8 candidates x 12 ms = 96 ms a round: two rounds fit 0.25 s, not three.
  const GemmTrialPlan p = PlanGemmTrials(8, 12e-3, 0.25);
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(p.candidates, 8);
  EXPECT_EQ(p.rounds, 2);
}

TEST(PlanGemmTrials, OverBudgetTimesOnlyTheCandidatesThatFitButAlwaysTheFirst) {
  const GemmTrialPlan some = PlanGemmTrials(8, 0.1, 0.25);  // 100 ms launches
  EXPECT_EQ(some.candidates, 2);
  EXPECT_EQ(some.rounds, 1);
  const GemmTrialPlan one = PlanGemmTrials(8, 2.0, 0.25);  // a 2 s launch
  EXPECT_EQ(one.candidates, 1);
  EXPECT_EQ(one.rounds, 1);
  EXPECT_EQ(PlanGemmTrials(0, 1e-3).candidates, 1);
}

TEST(GemmTrialMedian, OddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(GemmTrialMedian({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(GemmTrialMedian({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(GemmTrialMedian({}), 0);
}

TEST(ChooseGemmCandidate, KeepsTheFastestMedian) {
  const std::vector<GemmCandidateTrials> t = {
      {true, {1.00, 1.01, 0.99}}, {true, {0.95, 0.94, 0.96}}, {true, {0.90, 2.0, 0.91}}};
  // #2's median 0.91 beats #1's 0.95 although its mean is worse: an outlier trial does not count.
  EXPECT_EQ(ChooseGemmCandidate(t), 2);
}

TEST(ChooseGemmCandidate, TiesGoToTheHeuristicsHigherRank) {
  const std::vector<GemmCandidateTrials> t = {{true, {1.000}}, {true, {0.995}}, {true, {0.90}}};
  EXPECT_EQ(ChooseGemmCandidate(t), 2);
  const std::vector<GemmCandidateTrials> tied = {{true, {1.000}}, {true, {0.995}}};
  EXPECT_EQ(ChooseGemmCandidate(tied), 0);  // 0.5% faster: within kGemmTieFraction
  EXPECT_EQ(ChooseGemmCandidate(tied, 0.001), 1);
}

TEST(ChooseGemmCandidate, SkipsCandidatesCuBlasLtRefused) {
  const std::vector<GemmCandidateTrials> t = {{false, {}}, {true, {2.0}}, {false, {}}};
  EXPECT_EQ(ChooseGemmCandidate(t), 1);
  const std::vector<GemmCandidateTrials> none = {{false, {}}, {false, {}}};
  EXPECT_EQ(ChooseGemmCandidate(none), -1);
  EXPECT_EQ(ChooseGemmCandidate({}), -1);
}

}  // namespace
}  // namespace gpubench
