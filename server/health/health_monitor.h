// Health verdicts per GPU (docs/health.md): PASS, DEGRADED, FAIL or UNKNOWN, each with
// its evidence, from the scheduled plan's results against (a) the GPU model's expected floors
// (a shipped table, overridable by a file) and (b) the GPU's own history (a change-point series
// per GPU and measurement, kept under --state_dir across restarts, confirmed by re-runs).
// Protobuf-free. Thread-safe.
#ifndef GPUBENCH_SERVER_HEALTH_HEALTH_MONITOR_H_
#define GPUBENCH_SERVER_HEALTH_HEALTH_MONITOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/engine/run_result.h"
#include "server/engine/run_spec.h"
#include "server/health/change_point.h"

namespace gpubench::health {

// What a health measurement is: one plan item, as the fleet report keys it.
struct MeasurementKey {
  std::string kernel;
  int64_t elements = 0;
  CacheMode cache_mode = CacheMode::kCold;
  auto operator<=>(const MeasurementKey&) const = default;
};
std::string MeasurementText(const MeasurementKey& key);  // "copy_d2d 256Mi cold"

// One model's expectation for one measurement: a floor for rates, a ceiling for seconds per
// operation, and where the figure came from (measured, or derived from a peak: say which).
struct Expectation {
  std::string model;
  MeasurementKey key;
  std::string metric;  // "bytes_per_second", "operations_per_second", "seconds_per_operation"
  double bound = 0;    // floor (rates) or ceiling (latency)
  std::string source;
};

// The shipped table (server/health/expectations.cc, docs/health.md).
const std::vector<Expectation>& ShippedExpectations();
// A JSON file of the same: {"expectations": [{"model", "kernel", "elements", "cacheMode"
// ("COLD"/"HOT"), "metric", "bound", "source"}]}; its entries replace the shipped ones of the same
// model and measurement and add the rest. INVALID_ARGUMENT naming what is wrong.
absl::StatusOr<std::vector<Expectation>> ParseExpectations(const std::string& json);

enum class Verdict { kPass, kDegraded, kFail, kUnknown };
const char* VerdictName(Verdict verdict);  // "PASS", "DEGRADED", "FAIL", "UNKNOWN"

// One reason behind a verdict.
struct Evidence {
  Verdict verdict = Verdict::kPass;
  MeasurementKey key;
  std::string measurement;  // MeasurementText(key), or "device" / "plan"
  std::string metric;
  std::optional<double> value;  // the latest figure (or the new level, for a change point)
  double value_low = 0, value_high = 0;
  std::optional<double> expectation;  // the floor, ceiling or earlier level it was judged against
  // "model_floor", "model_ceiling", "own_history", "verification", "run_error", "none"
  std::string expectation_kind;
  std::string expectation_source;  // the table entry's source, or the history window
  // "hardware" (below expectation at full clock), "throttling" (clocked down or clock events
  // during the run), "" where it does not apply.
  std::string cause;
  absl::Time since = absl::InfinitePast();  // when this state began (InfinitePast: unknown)
  std::string detail;                       // one readable line
};

struct GpuHealth {
  int device_index = 0;
  std::string gpu_uuid;
  std::string gpu_model;
  Verdict verdict = Verdict::kUnknown;
  std::string summary;             // one line
  std::vector<Evidence> evidence;  // the reasons, worst first; every measurement's state
  int results = 0;                 // scheduled results recorded for this GPU (all time, kept)
  absl::Time last_result = absl::InfinitePast();
  int change_points = 0;  // declared on any of its series (kept)
};

// A change point as published (metrics): per GPU and measurement.
struct SeriesSummary {
  std::string gpu_uuid, gpu_model;
  int device_index = 0;
  MeasurementKey key;
  std::string metric;
  double latest = 0;
  int change_points = 0;
  double last_change = 0;  // the last declared change, relative (after / before - 1)
};

struct MonitorOptions {
  std::string state_dir;  // empty: history kept in memory only
  std::vector<Expectation> expectations = ShippedExpectations();
  DetectorConfig detector{};
  int max_series = 1024;  // series kept (least recently updated dropped first)
};

class HealthMonitor {
 public:
  struct Device {
    std::string uuid, model;
  };
  // Loads the state file under options.state_dir when there is one (a corrupt file is an error
  // naming it; a missing one is an empty history).
  static absl::StatusOr<std::unique_ptr<HealthMonitor>> Create(MonitorOptions options,
                                                               std::vector<Device> devices);

  // One scheduled (or confirmation) result of `spec`. Failed runs count as FAIL evidence.
  void Observe(const RunSpec& spec, const absl::StatusOr<RunResult>& result, bool confirmation);
  // The next confirmation re-run a candidate change wants (its spec, as the plan ran it), or none.
  // Each returned spec is counted as pending until Observe()d.
  std::optional<RunSpec> NextConfirmation();
  // A pass ended: persists the state (when a state dir is set).
  absl::Status EndPass();

  std::vector<GpuHealth> Health() const;
  std::vector<SeriesSummary> Series() const;
  std::string state_file() const;

 private:
  HealthMonitor(MonitorOptions options, std::vector<Device> devices);
  struct Latest {
    absl::Time time;
    bool ok = false;
    std::string error;  // the run's error when not ok
    bool verification_failed = false;
    double value = 0, low = 0, high = 0;
    bool throttled = false;
    std::string clock_note;  // what the clocks said, in words
  };
  struct Tracked {
    std::string gpu_uuid, gpu_model;
    int device_index = 0;
    MeasurementKey key;
    std::string metric;
    std::unique_ptr<health::Series> series;
    Latest latest;
    RunSpec spec;  // as last run (for confirmations); not persisted
    bool have_spec = false;
    int pending = 0;  // confirmations handed out, not yet observed
    int results = 0;
    absl::Time updated;
  };
  using TrackKey = std::pair<std::string, MeasurementKey>;  // GPU UUID, measurement
  Tracked& TrackedFor(const TrackKey& key, const std::string& model, int device,
                      const std::string& metric);  // mu_ held
  absl::Status Load();
  absl::Status Save() const;  // mu_ held
  const Expectation* ExpectationFor(const std::string& model, const MeasurementKey& key) const;
  void Judge(const Tracked& t, std::vector<Evidence>* out) const;

  const MonitorOptions options_;
  const std::vector<Device> devices_;
  mutable std::mutex mu_;
  std::map<TrackKey, Tracked> tracked_;
};

// A run's figure in its family's metric and the 95% interval of it from the run's own samples
// (median +- 1.96 x 1.2533 stddev / sqrt(n), the median's asymptotic standard error); an
// unbounded interval with fewer than two samples.
Point PointOf(const RunResult& result);
// Whether the run saw its clocks down: throttled or low-clock samples, or NVML clock events other
// than idle; `note` says what the clocks said.
bool Throttled(const RunResult& result, std::string* note);

}  // namespace gpubench::health

#endif  // GPUBENCH_SERVER_HEALTH_HEALTH_MONITOR_H_
