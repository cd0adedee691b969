// The shipped table of per-model expectations for the fleet health plan's measurements
// (docs/health.md). Every figure says where it came from: measured (a bench/results file) or
// derived (from a peak or a model), and the fraction taken. A model or measurement missing here has
// no model expectation (its verdict rests on its own history); --health_expectations adds or
// replaces.
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
constexpr char kH200Source[] =
    "of the median of 4 health-plan passes on one H200 "
    "(bench/results/2026-12-04-h200.md)";
struct Measured {
  const char* kernel;
  int64_t elements;
  CacheMode mode;
  const char* metric;
  double median;      // in the metric's unit
  double fraction;    // of the median: a floor (rates) or a ceiling (seconds per operation)
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
    {"latency_chase", k256Mi, CacheMode::kHot, "seconds_per_operation", 332.7e-9, 1.15, "333 ns"},
    {"add_f32", k16Mi, CacheMode::kHot, "bytes_per_second", 3.301e12, 0.85, "3.30 TB/s"},
};
// Other models: no measured figure yet, so each bound is derived from the model's peak and the
// fraction of peak the H200 reached in the same measurement (median / peak there), times the
// floor fraction above. Peaks from NVIDIA's datasheets: DRAM bandwidth, dense fp16/bf16 tensor
// FLOP/s (without sparsity), PCIe per direction after coding (Gen4 x16 31.5 GB/s, Gen5 63.0);
// the H200's: 4.8 TB/s, 989.4 TFLOP/s, Gen5.
// Latency and the hot SDC item (L2-sized effects) have no derived bound.
struct Peaks {
  const char* model;  // as CUDA and DCGM name it
  double dram, tensor, pcie;
};
constexpr Peaks kDerivedModels[] = {
    {"NVIDIA H100 80GB HBM3", 3.35e12, 989.4e12, 63.0e9},   // H100 SXM5, Gen5 x16
    {"NVIDIA H100 PCIe", 2.0e12, 756.0e12, 63.0e9},         // Gen5 x16
    {"NVIDIA A100-SXM4-80GB", 2.039e12, 312.0e12, 31.5e9},  // Gen4 x16
    {"NVIDIA A100-SXM4-40GB", 1.555e12, 312.0e12, 31.5e9},  // Gen4 x16
};
constexpr double kH200Dram = 4.8e12, kH200Tensor = 989.4e12, kH200Pcie = 63.0e9;
struct PeakPair {
  double h200 = 0, model = 0;  // model 0: this measurement derives from no peak
  const char* what = "";
};
// The peak a measured H200 row is a fraction of, there and on `peaks`' model.
PeakPair PeakFor(const Measured& m, const Peaks& peaks) {
  const std::string kernel = m.kernel;
  if (m.elements == k256Mi && m.mode == CacheMode::kCold) {
    return {kH200Dram, peaks.dram, "DRAM peak"};
  }
  if (kernel.rfind("gemm_", 0) == 0) return {kH200Tensor, peaks.tensor, "dense tensor peak"};
  if (kernel == "copy_bidir_pinned") return {2 * kH200Pcie, 2 * peaks.pcie, "PCIe peak, both ways"};
  if (kernel.rfind("copy_h2d", 0) == 0 || kernel.rfind("copy_d2h", 0) == 0) {
    return {kH200Pcie, peaks.pcie, "PCIe peak per direction"};
  }
  return {};
}

std::string Rate(double value, const char* metric) {
  if (std::string(metric) == "operations_per_second") {
    return absl::StrFormat("%.4g TFLOP/s", value / 1e12);
  }
  return value >= 1e12 ? absl::StrFormat("%.4g TB/s", value / 1e12)
                       : absl::StrFormat("%.4g GB/s", value / 1e9);
}

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
    for (const Peaks& peaks : kDerivedModels) {
      for (const Measured& m : kH200) {
        const PeakPair peak = PeakFor(m, peaks);
        if (peak.model <= 0) continue;
        const double efficiency = m.median / peak.h200;
        t->push_back(
            {peaks.model,
             {m.kernel, m.elements, m.mode},
             m.metric,
             m.fraction * efficiency * peak.model,
             absl::StrFormat("derived: %.0f%% of %.3f x %s, the model's %s (%.3f: the "
                             "H200's %s / its %s, the median %s)",
                             100 * m.fraction, efficiency, Rate(peak.model, m.metric), peak.what,
                             efficiency, m.shown, Rate(peak.h200, m.metric), kH200Source)});
      }
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
