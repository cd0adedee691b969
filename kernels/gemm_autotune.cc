#include "kernels/gemm_autotune.h"

#include <algorithm>
#include <cmath>

namespace gpubench {

GemmTrialPlan PlanGemmTrials(int offered, double first_launch_seconds, double budget_seconds) {
  GemmTrialPlan plan;
  const double launch = std::max(first_launch_seconds, 1e-9);
  plan.batch = static_cast<int>(
      std::clamp(std::ceil(kGemmTrialBatchSeconds / launch), 1.0, double{kGemmMaxTrialBatch}));
  const double trial = plan.batch * launch;
  const int offered_at_least_one = std::max(offered, 1);
  const double one_round = trial * offered_at_least_one;
  if (one_round <= budget_seconds) {
    plan.candidates = offered_at_least_one;
    plan.rounds = static_cast<int>(
        std::clamp(std::floor(budget_seconds / one_round), 1.0, double{kGemmMaxTrialRounds}));
  } else {
    plan.candidates = static_cast<int>(
        std::clamp(std::floor(budget_seconds / trial), 1.0,
                   static_cast<double>(offered_at_least_one)));
    plan.rounds = 1;
  }
  return plan;
}

double GemmTrialMedian(const std::vector<double>& seconds) {
  if (seconds.empty()) return 0;
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int ChooseGemmCandidate(std::span<const GemmCandidateTrials> trials, double tie_fraction) {
  double best = 0;
  for (const GemmCandidateTrials& t : trials) {
    if (!t.launched || t.seconds.empty()) continue;
    const double m = GemmTrialMedian(t.seconds);
    if (best == 0 || m < best) best = m;
  }
  if (best == 0) return -1;
  for (size_t i = 0; i < trials.size(); ++i) {
    const GemmCandidateTrials& t = trials[i];
    if (t.launched && !t.seconds.empty() &&
        GemmTrialMedian(t.seconds) <= best * (1 + tie_fraction)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace gpubench
