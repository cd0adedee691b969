// Change points in one GPU's series of one health measurement: a two-window test on
// the relative difference of window means, with an interval from both the pass-to-pass spread and
// each run's own sampling error, and confirmation re-runs before a change is declared. Protobuf-
// free; not thread-safe (the health monitor serializes access).
#ifndef GPUBENCH_SERVER_HEALTH_CHANGE_POINT_H_
#define GPUBENCH_SERVER_HEALTH_CHANGE_POINT_H_

#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gpubench::health {

// One run's figure: the family's metric and its 95% interval from the run's own samples.
struct Point {
  absl::Time time;
  double value = 0;
  double low = 0;  // 95% interval of `value` from the run's samples (low <= value <= high)
  double high = 0;
  bool confirmation = false;  // a re-run asked for by a candidate, not a scheduled pass
};

struct DetectorConfig {
  int baseline_window = 8;  // points of the current level the newest ones are compared with
  int min_baseline = 4;     // fewer: no test (the level is not known yet)
  int confirmations = 3;    // re-runs of a candidate before the decision
  double threshold = 0.02;  // a relative change of the mean smaller than this is no change
  // A point this far (relative) from its level becomes a candidate and gets re-runs. Below the
  // threshold, so that a real step whose first run happens to land short of it is still caught.
  double trigger = 0.01;
  int max_points = 64;  // kept per series
};

// The relative difference of `after`'s mean from `before`'s (after / before - 1) and its 95%
// interval: a pooled two-sample t interval, the variance of a point being the larger of the
// windows' pooled pass-to-pass variance and the median run's own sampling variance.
struct WindowComparison {
  double change = 0;
  double low = 0;
  double high = 0;
  double before_mean = 0;
  double after_mean = 0;
  int before_points = 0;
  int after_points = 0;
};
WindowComparison CompareWindows(std::span<const Point> before, std::span<const Point> after);

struct ChangePoint {
  absl::Time since;     // the first point of the new level
  absl::Time declared;  // when confirmed
  WindowComparison comparison;
  bool worse = false;  // in the measurement's sense (lower rate, or higher latency)
};

// One series. Add() a point; when the newest point differs from the level by more than the
// threshold it becomes a candidate and wants `confirmations` re-runs; once they are in, the
// candidate's window (it and its re-runs) is compared with the level before it and a change is
// declared only if the interval excludes the threshold on the side of the change. An
// inconclusive candidate (estimate past the threshold, interval not) stays open while later runs
// join its window. A declared change starts a new level.
class Series {
 public:
  Series(DetectorConfig config, bool higher_is_better)
      : config_(config), higher_is_better_(higher_is_better) {}

  // Returns a change point when this point completes a confirmed one.
  std::optional<ChangePoint> Add(const Point& point);
  // Re-runs the current candidate still needs (0: none pending).
  int confirmations_wanted() const;
  bool candidate() const { return candidate_.has_value(); }
  // The current level's points (since the last change point), oldest first.
  std::vector<Point> level() const;
  const std::deque<Point>& points() const { return points_; }
  const std::vector<ChangePoint>& changes() const { return changes_; }
  bool higher_is_better() const { return higher_is_better_; }
  const DetectorConfig& config() const { return config_; }

  // Persistence: the state as kept (points, where the level starts, the candidate, changes).
  int level_start() const { return level_start_; }
  std::optional<int> candidate_index() const { return candidate_; }
  void Restore(std::deque<Point> points, int level_start, std::optional<int> candidate,
               std::vector<ChangePoint> changes);

 private:
  std::vector<Point> Window(int begin, int end) const;
  void Trim();

  DetectorConfig config_;
  bool higher_is_better_;
  std::deque<Point> points_;
  int level_start_ = 0;           // index in points_ of the current level's first point
  std::optional<int> candidate_;  // index in points_ of the candidate's first point
  std::vector<ChangePoint> changes_;
};

// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1).
double StudentT975(int df);

}  // namespace gpubench::health

#endif  // GPUBENCH_SERVER_HEALTH_CHANGE_POINT_H_
