#include "server/health/change_point.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace gpubench::health {

double StudentT975(int df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                      2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                      2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                      2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 30) return kTable[df - 1];
  return 1.96 + 2.4 / df;  // within 0.3% of the exact quantile beyond 30
}

namespace {

struct Moments {
  double mean = 0, sum_sq = 0;
};

Moments MomentsOf(std::span<const Point> points) {
  Moments m;
  for (const Point& p : points) m.mean += p.value;
  m.mean /= points.size();
  for (const Point& p : points) m.sum_sq += (p.value - m.mean) * (p.value - m.mean);
  return m;
}

// The median over both windows of each run's own sampling variance (its 95% half-width back to
// a standard error): the median, so that one run with a wild sample does not blind the test.
double MeasurementVariance(std::span<const Point> a, std::span<const Point> b) {
  std::vector<double> v;
  for (std::span<const Point> w : {a, b}) {
    for (const Point& p : w) {
      const double half = std::max(p.high - p.value, p.value - p.low) / 1.96;
      v.push_back(half * half);
    }
  }
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

WindowComparison CompareWindows(std::span<const Point> before, std::span<const Point> after) {
  WindowComparison c;
  c.before_points = static_cast<int>(before.size());
  c.after_points = static_cast<int>(after.size());
  if (before.empty() || after.empty()) {
    c.low = -std::numeric_limits<double>::infinity();
    c.high = std::numeric_limits<double>::infinity();
    return c;
  }
  const Moments b = MomentsOf(before), a = MomentsOf(after);
  c.before_mean = b.mean;
  c.after_mean = a.mean;
  const int df = c.before_points + c.after_points - 2;
  // Pass-to-pass variance pooled over both windows, never below a single run's own sampling
  // variance: a series of identical figures still has each run's measurement error.
  const double pooled = df > 0 ? (b.sum_sq + a.sum_sq) / df : 0;
  const double var = std::max(pooled, MeasurementVariance(before, after));
  const double se = std::sqrt(var * (1.0 / c.before_points + 1.0 / c.after_points));
  const double half = StudentT975(std::max(df, 1)) * se;
  if (b.mean <= 0) {
    c.low = -std::numeric_limits<double>::infinity();
    c.high = std::numeric_limits<double>::infinity();
    return c;
  }
  c.change = a.mean / b.mean - 1;
  c.low = (a.mean - half) / b.mean - 1;
  c.high = (a.mean + half) / b.mean - 1;
  return c;
}

std::vector<Point> Series::Window(int begin, int end) const {
  return std::vector<Point>(points_.begin() + begin, points_.begin() + end);
}

std::vector<Point> Series::level() const {
  return Window(level_start_, candidate_ ? *candidate_ : static_cast<int>(points_.size()));
}

int Series::confirmations_wanted() const {
  if (!candidate_) return 0;
  const int have = static_cast<int>(points_.size()) - *candidate_ - 1;
  return std::max(0, config_.confirmations - have);
}

std::optional<ChangePoint> Series::Add(const Point& point) {
  points_.push_back(point);
  const int newest = static_cast<int>(points_.size()) - 1;
  std::optional<ChangePoint> declared;
  if (!candidate_) {
    const int begin = std::max(level_start_, newest - config_.baseline_window);
    if (newest - begin >= config_.min_baseline) {
      const std::vector<Point> before = Window(begin, newest);
      const WindowComparison c = CompareWindows(before, std::span<const Point>(&point, 1));
      // A cheap trigger on the point estimate; the decision waits for the re-runs.
      if (std::abs(c.change) > config_.trigger) candidate_ = newest;
    }
  } else if (confirmations_wanted() == 0) {
    const int start = *candidate_;
    const int begin = std::max(level_start_, start - config_.baseline_window);
    const std::vector<Point> before = Window(begin, start);
    const std::vector<Point> after = Window(start, newest + 1);
    const WindowComparison c = CompareWindows(before, after);
    if (c.low > config_.threshold || c.high < -config_.threshold) {
      ChangePoint cp;
      cp.since = points_[start].time;
      cp.declared = point.time;
      cp.comparison = c;
      cp.worse = higher_is_better_ ? c.change < 0 : c.change > 0;
      changes_.push_back(cp);
      level_start_ = start;
      declared = cp;
    }
    // Inconclusive (the estimate is past the threshold, the interval not yet): the candidate
    // stays open and the next passes' runs join its window, up to 3 rounds' worth. Otherwise it
    // was a transient (its points stay in the level) or is now a new level.
    const int window = newest + 1 - start;
    const bool inconclusive = !declared && std::abs(c.change) > config_.threshold &&
                              window < 3 * (1 + config_.confirmations);
    if (!inconclusive) candidate_.reset();
  }
  Trim();
  return declared;
}

void Series::Trim() {
  while (static_cast<int>(points_.size()) > config_.max_points) {
    points_.pop_front();
    level_start_ = std::max(0, level_start_ - 1);
    if (candidate_)
      candidate_ = *candidate_ > 0 ? std::optional<int>(*candidate_ - 1) : std::nullopt;
  }
  while (changes_.size() > 16) changes_.erase(changes_.begin());
}

void Series::Restore(std::deque<Point> points, int level_start, std::optional<int> candidate,
                     std::vector<ChangePoint> changes) {
  points_ = std::move(points);
  const int n = static_cast<int>(points_.size());
  level_start_ = std::clamp(level_start, 0, n);
  candidate_ = candidate && *candidate >= level_start_ && *candidate < n ? candidate : std::nullopt;
  changes_ = std::move(changes);
  Trim();
}

}  // namespace gpubench::health
