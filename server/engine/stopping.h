// When to stop sampling, the nvbench way: criterion objects fed one sample at a time with O(1)
// running statistics, wrapped by the run's limits (min/max samples, timeout). The full statistics
// (sort, percentiles) are computed once, after sampling, by the caller.
#ifndef GPUBENCH_SERVER_ENGINE_STOPPING_H_
#define GPUBENCH_SERVER_ENGINE_STOPPING_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/statistics.h"

namespace gpubench {

// Which rule ended sampling (MeasurementSummary.stop_rule carries its name).
enum class StopRule {
  kNone,            // still sampling
  kNoiseTarget,     // relative stddev <= max_noise (after min_samples and min_time)
  kNoiseConverged,  // noise above max_noise but stable over a trailing window (nvbench stdrel)
  kMaxSamples,
  kTimeout,
  kProfileRuns,     // profile mode: a fixed number of launches, no stopping logic
};
// "noise_target", "noise_converged", "max_samples", "timeout", "profile_runs", "" (kNone).
const char* StopRuleName(StopRule rule);

// A stopping criterion: fed every kept sample, asked whether enough is known. Not thread-safe.
class StoppingCriterion {
 public:
  virtual ~StoppingCriterion() = default;
  // `per_launch_seconds` enters the noise estimate; `device_seconds` (the sample's whole timed
  // span: a hot sample's batch) counts towards min_time.
  virtual void Add(double per_launch_seconds, double device_seconds) = 0;
  // kNone, or the rule that says "finished" now.
  virtual StopRule Check() const = 0;
  // Current relative stddev of the samples (0 before two samples).
  virtual double noise() const = 0;
};

// nvbench's stdrel criterion. Finished once min_time of device time is accumulated and either the
// running relative stddev is <= max_noise, or it has converged: over the last `window` noise
// estimates (checked every `check_every` samples once more than `min_window` exist), their
// standard deviation around the current estimate is under `convergence` x the current estimate.
class StdRelCriterion final : public StoppingCriterion {
 public:
  struct Params {
    double max_noise = 0.005;
    double min_time_seconds = 0.5;
    int window = 512;
    int min_window = 64;
    int check_every = 16;
    double convergence = 0.05;
  };
  explicit StdRelCriterion(const Params& params);

  void Add(double per_launch_seconds, double device_seconds) override;
  StopRule Check() const override;
  double noise() const override { return running_.relative_stddev(); }
  double device_seconds() const { return device_seconds_; }
  const Params& params() const { return params_; }

 private:
  bool Converged() const;

  Params params_;
  RunningStatistics running_;
  double device_seconds_ = 0;
  std::vector<double> noise_ring_;  // trailing noise estimates, a ring of params_.window
  size_t ring_next_ = 0;
  size_t ring_size_ = 0;
};

// The run's limits around a criterion: stop when the criterion says so (after min_samples kept),
// at max_samples kept, or at the wall-clock timeout. Not thread-safe.
class SamplingStopper {
 public:
  struct Limits {
    int min_samples = 10;
    int max_samples = 100000;
    double timeout_seconds = 15;
    double max_noise = 0.005;        // for the reasons' wording
    double min_time_seconds = 0.5;   // for the reasons' wording
  };
  SamplingStopper(const Limits& limits, std::unique_ptr<StoppingCriterion> criterion);

  void AddKept(double per_launch_seconds, double device_seconds);
  void AddDiscarded() { ++taken_; }  // a throttled sample: taken, not kept

  // The rule that ends sampling now, with `wall_seconds` of sampling elapsed; kNone to go on.
  StopRule Decide(double wall_seconds);
  // Words for the rule Decide returned (which limit, the noise, the samples).
  const std::string& reason() const { return reason_; }

  int kept() const { return kept_; }
  int taken() const { return taken_; }
  double device_seconds() const { return device_seconds_; }
  const StoppingCriterion& criterion() const { return *criterion_; }

 private:
  Limits limits_;
  std::unique_ptr<StoppingCriterion> criterion_;
  int kept_ = 0;
  int taken_ = 0;
  double device_seconds_ = 0;
  std::string reason_;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_STOPPING_H_
