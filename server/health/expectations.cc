// The shipped table of per-model expectations for the fleet health plan's measurements
// (docs/health.md). Every figure says where it came from: measured (a bench/results file) or
// derived (from a peak or a model), and the fraction taken. A model or measurement missing here has no model
// expectation (its verdict rests on its own history); --health_expectations adds or replaces.
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "server/health/health_monitor.h"

namespace gpubench::health {

namespace {
constexpr int64_t k256Mi = int64_t{256} << 20;
constexpr int64_t k16Mi = int64_t{16} << 20;
constexpr int64_t k4Mi = int64_t{4} << 20;
constexpr int64_t k64Ki = int64_t{64} << 10;
constexpr int64_t k16Ki = int64_t{16} << 10;
// The health plan on one H200 (driver 580.159.04, clocks not locked): the median of four passes,
// bench/results/2026-12-04-h200.md. Floors take 90% of HBM rates (GPUs of one SKU differ by ~8%
// on average), 80% of GEMM rates (clock-bound: 657-715 TFLOP/s pass to pass on one GPU), 85% of
// PCIe rates; latency ceilings 115% of the time per load.
constexpr char kH200Source[] = "of the median of 4 health-plan passes on one H200 "
                               "(bench/results/2026-12-04-h200.md)";
struct Measured {
  const char* kernel;
  int64_t elements;
  CacheMode mode;
  const char* metric;
  double median;    // in the metric's unit
  double fraction;  // of the median: a floor (rates) or a ceiling (seconds per operation)
  const char* shown;  // the median as a person reads it
};
constexpr Measured kH200[] = {
    {"add_f32_tuned", k256Mi, CacheMode::kCold, "bytes_per_second", 4.427e12, 0.90, "4.43 TB/s"},
    {"saxpy_balanced", k256Mi, CacheMode::kCold, "bytes_per_second", 2.716e12, 0.90, "2.72 TB/s"},
    {"copy_d2d", k256Mi, CacheMode::kCold, "bytes_per_second", 4.278e12, 0.90, "4.28 TB/s"},
    {"gemm_f16", 4096, CacheMode::kHot, "operations_per_second", 684.7e12, 0.80, "685 TFLOP/s"},
    {"gemm_bf16", 4096, CacheMode::kHot, "operations_per_second", 688.4e12, 0.80, "688 TFLOP/s"},
    {"copy_h2d_pinned", k16Mi, CacheMode::kHot, "bytes_per_second", 55.29e9, 0.85, "55.3 GB/s"},
    {"copy_d2h_pinned", k16Mi, CacheMode::kHot, "bytes_per_second", 55.14e9, 0.85, "55.1 GB/s"},
    {"copy_bidir_pinned", k16Mi, CacheMode::kHot, "bytes_per_second", 101.0e9, 0.85, "101 GB/s"},
    {"latency_chase", k64Ki, CacheMode::kHot, "seconds_per_operation", 16.29e-9, 1.15, "16.3 ns"},
    {"latency_chase", k4Mi, CacheMode::kHot, "seconds_per_operation", 141.9e-9, 1.15, "142 ns"},
    {"latency_chase", k256Mi, CacheMode::kHot, "seconds_per_operation", 332.7e-9, 1.15,
     "333 ns"},
    {"add_f32", k16Mi, CacheMode::kHot, "bytes_per_second", 3.301e12, 0.85, "3.30 TB/s"},
};
// The CPU backend's simulated model for tests: every launch takes at least 20 ms
// (--cpu_min_launch_seconds=0.02), so add_f32 at 16Ki (12 bytes per element) moves at most
// 196608 B / 20 ms = 9.83 MB/s.
constexpr double kSimAddBytes = 12.0 * k16Ki, kSimLaunch = 0.020;
}  // namespace

const std::vector<Expectation>& ShippedExpectations() {
  static const auto* table = [] {
    auto* t = new std::vector<Expectation>;
    for (const Measured& m : kH200) {
      t->push_back({"NVIDIA H200",
                    {m.kernel, m.elements, m.mode},
                    m.metric,
                    m.fraction * m.median,
                    absl::StrCat("measured: ", static_cast<int>(100 * m.fraction + 0.5), "% of ",
                                 m.shown, ", ", kH200Source)});
    }
    t->push_back({"Simulated GPU (cpu, 20 ms launches)",
                  {"add_f32", k16Ki, CacheMode::kHot},
                  "bytes_per_second",
                  0.9 * kSimAddBytes / kSimLaunch,
                  "derived: 90% of 196608 B per launch / the model's 20 ms launch floor (CPU "
                  "backend, --cpu_min_launch_seconds=0.02; tests only)"});
    return t;
  }();
  return *table;
}

absl::StatusOr<std::vector<Expectation>> ParseExpectations(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("expectations") ||
      !j["expectations"].is_array()) {
    return absl::InvalidArgumentError(
        "not an expectations file: want {\"expectations\": [{\"model\", \"kernel\", \"elements\", "
        "\"cacheMode\", \"metric\", \"bound\", \"source\"}, ...]}");
  }
  std::vector<Expectation> out;
  int index = 0;
  for (const nlohmann::json& e : j["expectations"]) {
    ++index;
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("expectation ", index, ": ", why));
    };
    if (!e.is_object()) return bad("not an object");
    Expectation x;
    try {
      x.model = e.at("model").get<std::string>();
      x.key.kernel = e.at("kernel").get<std::string>();
      const nlohmann::json& n = e.at("elements");
      x.key.elements = n.is_string() ? std::stoll(n.get<std::string>()) : n.get<int64_t>();
      const std::string mode = e.value("cacheMode", std::string("COLD"));
      if (mode != "COLD" && mode != "HOT") return bad("cacheMode must be COLD or HOT");
      x.key.cache_mode = mode == "HOT" ? CacheMode::kHot : CacheMode::kCold;
      x.metric = e.value("metric", std::string("bytes_per_second"));
      x.bound = e.at("bound").get<double>();
      x.source = e.value("source", std::string("--health_expectations file"));
    } catch (const std::exception& ex) {
      return bad(ex.what());
    }
    if (x.metric != "bytes_per_second" && x.metric != "operations_per_second" &&
        x.metric != "seconds_per_operation") {
      return bad("metric must be bytes_per_second, operations_per_second or seconds_per_operation");
    }
    if (!(x.bound > 0) || x.key.elements <= 0 || x.model.empty() || x.key.kernel.empty()) {
      return bad("model, kernel, elements > 0 and bound > 0 are required");
    }
    out.push_back(std::move(x));
  }
  std::vector<Expectation> merged = ShippedExpectations();
  for (const Expectation& x : out) {
    bool replaced = false;
    for (Expectation& m : merged) {
      if (m.model == x.model && m.key == x.key) m = x, replaced = true;
    }
    if (!replaced) merged.push_back(x);
  }
  return merged;
}

}  // namespace gpubench::health
