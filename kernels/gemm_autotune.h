// How the gemm family picks among cuBLASLt's candidate algorithms, free of CUDA so it
// is unit-tested on any machine. At session setup kernels/cuda/gemm_lt.cc asks the heuristic for
// up to kGemmHeuristicCandidates algorithms, times each briefly on the run's own buffers
// (PlanGemmTrials: a few rounds, round-robin, so every candidate sees the same clocks and
// temperature) and keeps the fastest (ChooseGemmCandidate); the run's launch_report names it.
#ifndef GPUBENCH_KERNELS_GEMM_AUTOTUNE_H_
#define GPUBENCH_KERNELS_GEMM_AUTOTUNE_H_

#include <span>
#include <string>
#include <vector>

namespace gpubench {

// Algorithms asked of cuBLASLt's heuristic (cuBLASLt 13 on an H200 returns at most 8 for these
// problems; a larger request costs nothing).
inline constexpr int kGemmHeuristicCandidates = 16;
// Device time the trials may take at setup (all candidates, all rounds).
inline constexpr double kGemmTrialBudgetSeconds = 0.25;
// One trial: back-to-back launches filling about this much device time (and at most 20).
inline constexpr double kGemmTrialBatchSeconds = 1e-3;
inline constexpr int kGemmMaxTrialBatch = 20;
inline constexpr int kGemmMaxTrialRounds = 3;
// A candidate within this fraction of the fastest median counts as tied; ties go to the
// heuristic's higher-ranked candidate, so timing noise alone never moves the choice.
inline constexpr double kGemmTieFraction = 0.01;

struct GemmTrialPlan {
  int candidates = 0;  // the heuristic's first `candidates` are timed
  int batch = 1;       // launches per trial
  int rounds = 1;      // trials per candidate, round-robin
};

// The trials for `offered` candidates (>= 1) whose heuristic-first launch took
// `first_launch_seconds`: batch ~kGemmTrialBatchSeconds, up to kGemmMaxTrialRounds rounds within
// `budget_seconds`; when even one round of every candidate exceeds the budget, only as many
// candidates as fit one round are timed (at least the heuristic's first).
GemmTrialPlan PlanGemmTrials(int offered, double first_launch_seconds,
                             double budget_seconds = kGemmTrialBudgetSeconds);

// One candidate's trials: per-launch seconds of each trial; `launched` false when cuBLASLt refused
// to launch it (its trials are empty).
struct GemmCandidateTrials {
  bool launched = false;
  std::vector<double> seconds;
};

// The median of one candidate's trials; 0 for none.
double GemmTrialMedian(const std::vector<double>& seconds);

// The index of the candidate to keep: the smallest median among launched candidates, ties
// (within `tie_fraction` of it) to the lowest index; -1 when none launched.
int ChooseGemmCandidate(std::span<const GemmCandidateTrials> trials,
                        double tie_fraction = kGemmTieFraction);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_GEMM_AUTOTUNE_H_
