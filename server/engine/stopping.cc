#include "server/engine/stopping.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench {

const char* StopRuleName(StopRule rule) {
  switch (rule) {
    case StopRule::kNone:
      return "";
    case StopRule::kNoiseTarget:
      return "noise_target";
    case StopRule::kNoiseConverged:
      return "noise_converged";
    case StopRule::kMaxSamples:
      return "max_samples";
    case StopRule::kTimeout:
      return "timeout";
    case StopRule::kProfileRuns:
      return "profile_runs";
  }
  return "";
}

StdRelCriterion::StdRelCriterion(const Params& params)
    : params_(params), noise_ring_(static_cast<size_t>(std::max(1, params.window))) {}

void StdRelCriterion::Add(double per_launch_seconds, double device_seconds) {
  running_.Add(per_launch_seconds);
  device_seconds_ += device_seconds;
  if (running_.count() < 2) return;
  const double noise = running_.relative_stddev();
  if (!std::isfinite(noise)) return;
  noise_ring_[ring_next_] = noise;
  ring_next_ = (ring_next_ + 1) % noise_ring_.size();
  ring_size_ = std::min(ring_size_ + 1, noise_ring_.size());
}

bool StdRelCriterion::Converged() const {
  if (ring_size_ <= static_cast<size_t>(params_.min_window)) return false;
  if (params_.check_every > 1 && running_.count() % params_.check_every != 0) return false;
  const double current = noise_ring_[(ring_next_ + noise_ring_.size() - 1) % noise_ring_.size()];
  if (current <= 0) return false;
  double sum_sq = 0;
  for (size_t i = 0; i < ring_size_; ++i) sum_sq += (noise_ring_[i] - current) * (noise_ring_[i] - current);
  const double spread = std::sqrt(sum_sq / static_cast<double>(ring_size_ - 1));
  return spread / current < params_.convergence;
}

StopRule StdRelCriterion::Check() const {
  if (running_.count() < 2 || device_seconds_ < params_.min_time_seconds) return StopRule::kNone;
  if (running_.relative_stddev() <= params_.max_noise) return StopRule::kNoiseTarget;
  if (Converged()) return StopRule::kNoiseConverged;
  return StopRule::kNone;
}

SamplingStopper::SamplingStopper(const Limits& limits,
                                 std::unique_ptr<StoppingCriterion> criterion)
    : limits_(limits), criterion_(std::move(criterion)) {}

void SamplingStopper::AddKept(double per_launch_seconds, double device_seconds) {
  ++taken_;
  ++kept_;
  device_seconds_ += device_seconds;
  criterion_->Add(per_launch_seconds, device_seconds);
}

StopRule SamplingStopper::Decide(double wall_seconds) {
  const double noise = criterion_->noise();
  if (kept_ >= limits_.min_samples) {
    const StopRule rule = criterion_->Check();
    if (rule == StopRule::kNoiseTarget) {
      reason_ = absl::StrFormat("noise %.3f%% <= max_noise %.3f%% after %d samples",
                                100 * noise, 100 * limits_.max_noise, kept_);
      return rule;
    }
    if (rule == StopRule::kNoiseConverged) {
      reason_ = absl::StrFormat(
          "noise converged at %.3f%% (above max_noise %.3f%%, but stable over the trailing "
          "window) after %d samples",
          100 * noise, 100 * limits_.max_noise, kept_);
      return rule;
    }
  }
  if (kept_ >= limits_.max_samples) {
    reason_ = absl::StrFormat("max_samples %d reached; noise %.3f%% (max_noise %.3f%%)",
                              limits_.max_samples, 100 * noise, 100 * limits_.max_noise);
    return StopRule::kMaxSamples;
  }
  if (wall_seconds >= limits_.timeout_seconds) {
    std::string unmet;
    if (kept_ < limits_.min_samples) {
      absl::StrAppend(&unmet, absl::StrFormat("; min_samples %d not reached", limits_.min_samples));
    }
    if (device_seconds_ < limits_.min_time_seconds) {
      absl::StrAppend(&unmet, absl::StrFormat("; min_time %.3g s not reached (%.3g s measured)",
                                              limits_.min_time_seconds, device_seconds_));
    }
    if (kept_ >= 2 && noise > limits_.max_noise) {
      absl::StrAppend(&unmet, absl::StrFormat("; noise %.3f%% above max_noise %.3f%%, not converged",
                                              100 * noise, 100 * limits_.max_noise));
    }
    reason_ = absl::StrFormat("timeout %.3g s reached with %d samples kept of %d%s",
                              limits_.timeout_seconds, kept_, taken_, unmet);
    return StopRule::kTimeout;
  }
  return StopRule::kNone;
}

}  // namespace gpubench
