#include "server/health/health_monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/sizes.h"
#include "kernels/family.h"
#include "server/engine/nvml_monitor.h"

namespace gpubench::health {

std::string MeasurementText(const MeasurementKey& key) {
  return absl::StrCat(key.kernel, " ", FormatElementCount(key.elements), " ",
                      CacheModeName(key.cache_mode));
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kDegraded:
      return "DEGRADED";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool HigherIsBetter(const std::string& metric) { return metric != "seconds_per_operation"; }

// FAIL > DEGRADED > PASS > UNKNOWN: the order a GPU's verdict takes the worst of.
int Severity(Verdict v) {
  switch (v) {
    case Verdict::kFail:
      return 3;
    case Verdict::kDegraded:
      return 2;
    case Verdict::kPass:
      return 1;
    case Verdict::kUnknown:
      return 0;
  }
  return 0;
}

std::string FormatFigure(const std::string& metric, double value) {
  if (!std::isfinite(value)) return "unbounded";
  if (metric == "seconds_per_operation") return absl::StrFormat("%.4g s/op", value);
  if (metric == "operations_per_second") return absl::StrFormat("%.4g op/s", value);
  return absl::StrFormat("%.4g B/s", value);
}

std::string TimeText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// JSON numbers cannot be infinite: an unbounded interval end is kept as null.
nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
double NumOr(const nlohmann::json& j, double inf) { return j.is_null() ? inf : j.get<double>(); }

}  // namespace

Point PointOf(const RunResult& r) {
  Point p;
  p.time = r.finished_at;
  const std::string metric = MetricName(r.metric);
  p.value = MetricValueOf(r);
  const double median = r.stats.median_seconds;
  const int n = r.stats.count;
  if (n < 2 || median <= 0) {
    p.low = metric == "seconds_per_operation" ? 0 : 0;
    p.high = kInf;
    return p;
  }
  const double half = 1.96 * 1.2533 * r.stats.stddev_seconds / std::sqrt(static_cast<double>(n));
  if (metric == "seconds_per_operation") {
    p.low = p.value * std::max(0.0, median - half) / median;
    p.high = p.value * (median + half) / median;
  } else {
    const double work = p.value * median;
    p.low = work / (median + half);
    p.high = median - half > 0 ? work / (median - half) : kInf;
  }
  return p;
}

bool Throttled(const RunResult& r, std::string* note) {
  std::vector<std::string> events;
  for (const std::string& e : r.clock_event_reasons) {
    if (e != "gpu_idle" && e != "none") events.push_back(e);
  }
  const bool throttled = r.throttled_samples > 0 || r.low_clock_samples > 0 || !events.empty();
  if (r.min_clock_hz && r.device.sm_clock_hz > 0) {
    *note = absl::StrFormat("SM clock min %.0f MHz of default %.0f MHz", *r.min_clock_hz / 1e6,
                            r.device.sm_clock_hz / 1e6);
  } else {
    *note = "SM clock not measurable on this backend";
  }
  if (r.low_clock_samples > 0 || r.throttled_samples > 0) {
    absl::StrAppend(note, "; ", r.low_clock_samples, " low-clock and ", r.throttled_samples,
                    " throttled samples");
  }
  for (const std::string& e : events) absl::StrAppend(note, "; clock event ", e);
  return throttled;
}

HealthMonitor::HealthMonitor(MonitorOptions options, std::vector<Device> devices)
    : options_(std::move(options)), devices_(std::move(devices)) {}

absl::StatusOr<std::unique_ptr<HealthMonitor>> HealthMonitor::Create(MonitorOptions options,
                                                                     std::vector<Device> devices) {
  std::unique_ptr<HealthMonitor> m(new HealthMonitor(std::move(options), std::move(devices)));
  if (absl::Status s = m->Load(); !s.ok()) return s;
  return m;
}

std::string HealthMonitor::state_file() const {
  return options_.state_dir.empty() ? "" : options_.state_dir + "/health_state.json";
}

HealthMonitor::Tracked& HealthMonitor::TrackedFor(const TrackKey& key, const std::string& model,
                                                  int device, const std::string& metric) {
  auto it = tracked_.find(key);
  if (it == tracked_.end()) {
    if (static_cast<int>(tracked_.size()) >= options_.max_series) {
      auto oldest = std::min_element(tracked_.begin(), tracked_.end(), [](auto& a, auto& b) {
        return a.second.updated < b.second.updated;
      });
      tracked_.erase(oldest);
    }
    Tracked t;
    t.gpu_uuid = key.first;
    t.key = key.second;
    t.metric = metric;
    t.series = std::make_unique<health::Series>(options_.detector, HigherIsBetter(metric));
    it = tracked_.emplace(key, std::move(t)).first;
  }
  it->second.gpu_model = model;
  it->second.device_index = device;
  return it->second;
}

void HealthMonitor::Observe(const RunSpec& spec, const absl::StatusOr<RunResult>& result,
                            bool confirmation) {
  // Runs that did not measure the GPU say nothing about it: skipped for a tenant, or cancelled
  // (the server stopping, the pass's deadline).
  if (!result.ok() &&
      (IsGpuBusy(result.status()) || result.status().code() == absl::StatusCode::kCancelled)) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, t] : tracked_) {
      if (confirmation && t.device_index == spec.device_index && t.pending > 0 &&
          t.key.kernel == spec.kernel->name) {
        --t.pending;
      }
    }
    return;
  }
  MeasurementKey key{std::string(spec.kernel->name), spec.elements, spec.cache_mode};
  std::string uuid, model;
  if (result.ok()) {
    uuid = result->device.uuid;
    model = result->device.name;
  } else if (spec.device_index >= 0 && spec.device_index < static_cast<int>(devices_.size())) {
    uuid = devices_[spec.device_index].uuid;
    model = devices_[spec.device_index].model;
  }
  if (uuid.empty()) return;
  const std::string metric = MetricName(spec.kernel->family->metric);
  std::lock_guard<std::mutex> lock(mu_);
  Tracked& t = TrackedFor({uuid, key}, model, spec.device_index, metric);
  if (confirmation && t.pending > 0) --t.pending;
  t.spec = spec;
  t.have_spec = true;
  ++t.results;
  t.updated = absl::Now();
  Latest& l = t.latest;
  l = Latest{};
  l.time = result.ok() ? result->finished_at : absl::Now();
  if (!result.ok()) {
    l.error = std::string(result.status().message());
    l.verification_failed = result.status().code() == absl::StatusCode::kInternal &&
                            l.error.find("verification") != std::string::npos;
    return;
  }
  l.ok = true;
  const Point p = [&] {
    Point q = PointOf(*result);
    q.confirmation = confirmation;
    return q;
  }();
  l.value = p.value;
  l.low = p.low;
  l.high = p.high;
  l.throttled = Throttled(*result, &l.clock_note);
  if (std::optional<ChangePoint> cp = t.series->Add(p)) {
    spdlog::warn(
        "health: change point on {} {}: {} {:+.2f}% (95% interval {:+.2f}% .. {:+.2f}%), "
        "since {}",
        uuid, MeasurementText(key), cp->worse ? "worse" : "better", 100 * cp->comparison.change,
        100 * cp->comparison.low, 100 * cp->comparison.high, TimeText(cp->since));
  }
}

std::optional<RunSpec> HealthMonitor::NextConfirmation() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, t] : tracked_) {
    if (t.have_spec && t.series->confirmations_wanted() > t.pending) {
      ++t.pending;
      return t.spec;
    }
  }
  return std::nullopt;
}

absl::Status HealthMonitor::EndPass() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, t] : tracked_) t.pending = 0;  // a re-run never observed is not waited for
  return Save();
}

const Expectation* HealthMonitor::ExpectationFor(const std::string& model,
                                                 const MeasurementKey& key) const {
  for (const Expectation& e : options_.expectations) {
    if (e.model == model && e.key == key) return &e;
  }
  return nullptr;
}

void HealthMonitor::Judge(const Tracked& t, std::vector<Evidence>* out) const {
  Evidence e;
  e.key = t.key;
  e.measurement = MeasurementText(t.key);
  e.metric = t.metric;
  const Latest& l = t.latest;
  if (!l.ok) {
    e.verdict = Verdict::kFail;
    e.expectation_kind = l.verification_failed ? "verification" : "run_error";
    e.expectation_source = "the run's own result";
    e.since = l.time;
    e.detail = absl::StrCat(e.measurement, " failed: ", l.error);
    out->push_back(e);
    return;
  }
  e.value = l.value;
  e.value_low = l.low;
  e.value_high = l.high;
  const bool higher = HigherIsBetter(t.metric);
  const std::string interval =
      absl::StrCat("[", FormatFigure(t.metric, l.low), ", ", FormatFigure(t.metric, l.high), "]");
  const std::string cause = l.throttled ? "throttling" : "hardware";
  bool judged = false;
  if (const Expectation* x = ExpectationFor(t.gpu_model, t.key);
      x != nullptr && x->metric == t.metric) {
    judged = true;
    Evidence m = e;
    m.expectation = x->bound;
    m.expectation_kind = higher ? "model_floor" : "model_ceiling";
    m.expectation_source = x->source;
    m.since = l.time;
    // Declared only when the run's interval lies wholly on the wrong side of the bound.
    const bool short_of = higher ? l.high < x->bound : l.low > x->bound;
    if (short_of) {
      m.verdict = Verdict::kDegraded;
      m.cause = cause;
      m.detail = absl::StrCat(e.measurement, " ", FormatFigure(t.metric, l.value), " ", interval,
                              higher ? " below" : " above", " the model's ",
                              higher ? "floor " : "ceiling ", FormatFigure(t.metric, x->bound),
                              " (", cause, ": ", l.clock_note, ")");
    } else {
      m.verdict = Verdict::kPass;
      m.detail = absl::StrCat(e.measurement, " ", FormatFigure(t.metric, l.value), " ", interval,
                              " meets the model's ", higher ? "floor " : "ceiling ",
                              FormatFigure(t.metric, x->bound));
    }
    out->push_back(m);
  }
  const health::Series& s = *t.series;
  const DetectorConfig& cfg = s.config();
  Evidence h = e;
  h.expectation_kind = "own_history";
  if (!s.changes().empty() && s.changes().back().worse) {
    const ChangePoint& cp = s.changes().back();
    h.verdict = Verdict::kDegraded;
    h.cause = cause;
    h.value = cp.comparison.after_mean;
    h.expectation = cp.comparison.before_mean;
    h.since = cp.since;
    h.expectation_source =
        absl::StrCat("two-window test: mean of ", cp.comparison.after_points, " runs (",
                     cfg.confirmations, " confirmation re-runs) vs the ",
                     cp.comparison.before_points, " before; declared ", TimeText(cp.declared));
    h.detail = absl::StrFormat(
        "%s changed %+.2f%% (95%% interval %+.2f%% .. %+.2f%%, threshold %.1f%%) since %s: %s "
        "now, %s before (%s: %s)",
        e.measurement, 100 * cp.comparison.change, 100 * cp.comparison.low,
        100 * cp.comparison.high, 100 * cfg.threshold, TimeText(cp.since),
        FormatFigure(t.metric, cp.comparison.after_mean),
        FormatFigure(t.metric, cp.comparison.before_mean), cause, l.clock_note);
    out->push_back(h);
    return;
  }
  const std::vector<Point> level = s.level();
  const int have = static_cast<int>(level.size());
  double mean = 0;
  for (const Point& p : level) mean += p.value;
  if (have > 0) mean /= have;
  h.expectation = mean;
  h.expectation_source = absl::StrCat("mean of the current level's ", have, " runs");
  if (have >= cfg.min_baseline) {
    h.verdict = Verdict::kPass;
    h.since = level.front().time;
    h.detail =
        absl::StrCat(e.measurement, " steady at ", FormatFigure(t.metric, mean), " over ", have,
                     " runs", s.candidate() ? "; a candidate change is being confirmed" : "");
  } else if (!judged) {
    h.verdict = Verdict::kUnknown;
    h.detail = absl::StrCat(e.measurement, ": no model expectation for ", t.gpu_model, " and ",
                            have, " of ", cfg.min_baseline, " runs of history");
  } else {
    return;  // the model's floor judged it; history still building
  }
  out->push_back(h);
}

std::vector<GpuHealth> HealthMonitor::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GpuHealth> gpus;
  for (size_t d = 0; d < devices_.size(); ++d) {
    GpuHealth g;
    g.device_index = static_cast<int>(d);
    g.gpu_uuid = devices_[d].uuid;
    g.gpu_model = devices_[d].model;
    for (const auto& [k, t] : tracked_) {
      if (t.gpu_uuid != g.gpu_uuid) continue;
      Judge(t, &g.evidence);
      g.results += t.results;
      g.last_result = std::max(g.last_result, t.latest.time);
      g.change_points += static_cast<int>(t.series->changes().size());
    }
    std::stable_sort(g.evidence.begin(), g.evidence.end(),
                     [](const Evidence& a, const Evidence& b) {
                       return Severity(a.verdict) > Severity(b.verdict);
                     });
    if (g.evidence.empty()) {
      g.verdict = Verdict::kUnknown;
      g.summary = "UNKNOWN: no scheduled health results for this GPU yet";
    } else {
      g.verdict = g.evidence.front().verdict;
      int worst = 0;
      for (const Evidence& e : g.evidence) worst += e.verdict == g.verdict;
      g.summary = absl::StrCat(VerdictName(g.verdict), ": ",
                               g.verdict == Verdict::kPass
                                   ? absl::StrCat(g.evidence.size(), " checks passed")
                                   : absl::StrCat(worst, " of ", g.evidence.size(),
                                                  " checks; first: ", g.evidence.front().detail));
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::vector<SeriesSummary> HealthMonitor::Series() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SeriesSummary> out;
  for (const auto& [k, t] : tracked_) {
    SeriesSummary s;
    s.gpu_uuid = t.gpu_uuid;
    s.gpu_model = t.gpu_model;
    s.device_index = t.device_index;
    s.key = t.key;
    s.metric = t.metric;
    s.latest = t.latest.value;
    s.change_points = static_cast<int>(t.series->changes().size());
    if (!t.series->changes().empty()) s.last_change = t.series->changes().back().comparison.change;
    out.push_back(s);
  }
  return out;
}

// ---- persistence -------------------------------------------------------------------------------

namespace {

nlohmann::json PointJson(const Point& p) {
  return {{"t", absl::ToUnixNanos(p.time)},
          {"v", p.value},
          {"lo", Num(p.low)},
          {"hi", Num(p.high)},
          {"c", p.confirmation}};
}
Point PointFrom(const nlohmann::json& j) {
  Point p;
  p.time = absl::FromUnixNanos(j.at("t").get<int64_t>());
  p.value = j.at("v").get<double>();
  p.low = NumOr(j.at("lo"), -kInf);
  p.high = NumOr(j.at("hi"), kInf);
  p.confirmation = j.value("c", false);
  return p;
}
nlohmann::json ComparisonJson(const WindowComparison& c) {
  return {{"change", c.change},      {"low", Num(c.low)},     {"high", Num(c.high)},
          {"before", c.before_mean}, {"after", c.after_mean}, {"nb", c.before_points},
          {"na", c.after_points}};
}
WindowComparison ComparisonFrom(const nlohmann::json& j) {
  WindowComparison c;
  c.change = j.at("change").get<double>();
  c.low = NumOr(j.at("low"), -kInf);
  c.high = NumOr(j.at("high"), kInf);
  c.before_mean = j.at("before").get<double>();
  c.after_mean = j.at("after").get<double>();
  c.before_points = j.at("nb").get<int>();
  c.after_points = j.at("na").get<int>();
  return c;
}

}  // namespace

absl::Status HealthMonitor::Save() const {
  if (options_.state_dir.empty()) return absl::OkStatus();
  nlohmann::json series = nlohmann::json::array();
  for (const auto& [k, t] : tracked_) {
    nlohmann::json points = nlohmann::json::array(), changes = nlohmann::json::array();
    for (const Point& p : t.series->points()) points.push_back(PointJson(p));
    for (const ChangePoint& c : t.series->changes()) {
      changes.push_back({{"since", absl::ToUnixNanos(c.since)},
                         {"declared", absl::ToUnixNanos(c.declared)},
                         {"worse", c.worse},
                         {"comparison", ComparisonJson(c.comparison)}});
    }
    const Latest& l = t.latest;
    series.push_back(
        {{"gpu_uuid", t.gpu_uuid},
         {"gpu_model", t.gpu_model},
         {"device", t.device_index},
         {"kernel", t.key.kernel},
         {"elements", t.key.elements},
         {"cache_mode", CacheModeName(t.key.cache_mode)},
         {"metric", t.metric},
         {"results", t.results},
         {"points", points},
         {"level_start", t.series->level_start()},
         {"candidate", t.series->candidate_index() ? nlohmann::json(*t.series->candidate_index())
                                                   : nlohmann::json()},
         {"changes", changes},
         {"latest",
          {{"t", absl::ToUnixNanos(l.time)},
           {"ok", l.ok},
           {"error", l.error},
           {"verification_failed", l.verification_failed},
           {"v", l.value},
           {"lo", Num(l.low)},
           {"hi", Num(l.high)},
           {"throttled", l.throttled},
           {"clock", l.clock_note}}}});
  }
  const nlohmann::json state = {{"version", 1}, {"series", series}};
  // Whole or not at all: written beside it, then renamed over it.
  const std::string file = state_file(), tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << state.dump();
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", file));
  }
  return absl::OkStatus();
}

absl::Status HealthMonitor::Load() {
  if (options_.state_dir.empty()) return absl::OkStatus();
  std::ifstream in(state_file());
  if (!in) return absl::OkStatus();  // a first start: no history yet
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json state = nlohmann::json::parse(text.str(), nullptr, false);
  auto corrupt = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--state_dir: ", state_file(),
                                                   " is not a gpubench health state (", why,
                                                   "); move it away to start a new history"));
  };
  if (state.is_discarded() || !state.is_object() || state.value("version", 0) != 1) {
    return corrupt("unparsable or of another version");
  }
  std::lock_guard<std::mutex> lock(mu_);
  try {
    for (const nlohmann::json& s : state.at("series")) {
      MeasurementKey key{
          s.at("kernel").get<std::string>(), s.at("elements").get<int64_t>(),
          s.at("cache_mode").get<std::string>() == "hot" ? CacheMode::kHot : CacheMode::kCold};
      Tracked& t = TrackedFor({s.at("gpu_uuid").get<std::string>(), key},
                              s.at("gpu_model").get<std::string>(), s.at("device").get<int>(),
                              s.at("metric").get<std::string>());
      t.results = s.at("results").get<int>();
      std::deque<Point> points;
      for (const nlohmann::json& p : s.at("points")) points.push_back(PointFrom(p));
      std::vector<ChangePoint> changes;
      for (const nlohmann::json& c : s.at("changes")) {
        ChangePoint cp;
        cp.since = absl::FromUnixNanos(c.at("since").get<int64_t>());
        cp.declared = absl::FromUnixNanos(c.at("declared").get<int64_t>());
        cp.worse = c.at("worse").get<bool>();
        cp.comparison = ComparisonFrom(c.at("comparison"));
        changes.push_back(cp);
      }
      const nlohmann::json& cand = s.at("candidate");
      t.series->Restore(std::move(points), s.at("level_start").get<int>(),
                        cand.is_null() ? std::nullopt : std::optional<int>(cand.get<int>()),
                        std::move(changes));
      const nlohmann::json& l = s.at("latest");
      t.latest.time = absl::FromUnixNanos(l.at("t").get<int64_t>());
      t.latest.ok = l.at("ok").get<bool>();
      t.latest.error = l.at("error").get<std::string>();
      t.latest.verification_failed = l.at("verification_failed").get<bool>();
      t.latest.value = l.at("v").get<double>();
      t.latest.low = NumOr(l.at("lo"), -kInf);
      t.latest.high = NumOr(l.at("hi"), kInf);
      t.latest.throttled = l.at("throttled").get<bool>();
      t.latest.clock_note = l.at("clock").get<std::string>();
      t.updated = t.latest.time;
    }
  } catch (const std::exception& e) {
    return corrupt(e.what());
  }
  spdlog::info("health: {} series loaded from {}", tracked_.size(), state_file());
  return absl::OkStatus();
}

}  // namespace gpubench::health
