// Which timed samples of a run are verified too (Session, HostData::verify_timed_samples; user
// kernels, docs/user-kernels.md), so that a kernel cannot compute only on the separate verified
// launch. Host-only.
#ifndef GPUBENCH_KERNELS_TIMED_CHECK_H_
#define GPUBENCH_KERNELS_TIMED_CHECK_H_

#include <cstdint>

#include "common/splitmix64.h"

namespace gpubench {

// Sample i (1-based) is chosen with probability 1/i, decided before it is taken: the last one
// chosen is uniform over the run's samples however many the stopping rule takes (reservoir
// sampling with a reservoir of one; Vitter, "Random sampling with a reservoir", ACM TOMS 1985),
// and about ln N + 0.58 of N samples are chosen. Each chosen sample gets its own input seed.
// Deterministic for a seed; the run's seed is drawn fresh, so a kernel cannot know it.
class TimedSampleChooser {
 public:
  explicit TimedSampleChooser(uint64_t run_seed);

  // Whether the next sample is verified.
  bool Next();
  // Samples decided so far (the index of the last one).
  int64_t taken() const { return taken_; }
  // A seed for the inputs of the chosen sample, never the run's own.
  uint64_t InputSeed();

 private:
  uint64_t NextWord();
  SplitMix64 rng_;
  const uint64_t run_seed_;
  int64_t taken_ = 0;
};

// Which timed samples of a run under the CUDA-event timer have their windows recorded with CUPTI
// for the user-kernel audit (launch count, timer cross-check): CUPTI's kernel tracing lengthens
// a launch (about 6% on a 16Mi add: bench/results/2026-12-03-h200.md, "Timers after the
// refactor"), so a traced sample is kept out of the statistics and only some are traced. Sample i
// (1-based) is chosen with probability 1/2 up to sample 8, 1/8 after: about 4 of a 10-sample run,
// 15 of 100. Decided before the sample from the run's fresh seed, so a kernel cannot know which
// of its launches are watched. Deterministic for a seed.
class WindowAuditChooser {
 public:
  explicit WindowAuditChooser(uint64_t run_seed);
  // Whether the next sample is recorded.
  bool Next();

 private:
  SplitMix64 rng_;
  int64_t taken_ = 0;
};

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_TIMED_CHECK_H_
