// The shipped table of per-model expectations for the fleet health plan's measurements
// (docs/health.md). Every figure says where it came from: measured (a bench/results file) or
// derived from a peak, and the fraction taken. A model or measurement missing here has no model
// expectation (its verdict rests on its own history); --health_expectations adds or replaces.
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "server/health/health_monitor.h"

namespace gpubench::health {

namespace {
constexpr int64_t k256Mi = int64_t{256} << 20;
constexpr int64_t k16Mi = int64_t{16} << 20;
constexpr int64_t k16Ki = int64_t{16} << 10;
// H200 SXM: HBM3e 4.81 TB/s (the server's 2 x memory clock x bus width), dense fp16/bf16 tensor
// 989.4 TFLOP/s (NVIDIA's datasheet figure, half the with-sparsity 1979), PCIe Gen5 x16 63.0 GB/s
// per direction after 128b/130b coding.
constexpr double kH200Dram = 4.81e12, kH200Tensor = 989.4e12, kGen5x16 = 63.0e9;
// The CPU backend's simulated model for tests: every launch takes at least 20 ms
// (--cpu_min_launch_seconds=0.02), so add_f32 at 16Ki (12 bytes per element) moves at most
// 196608 B / 20 ms = 9.83 MB/s.
constexpr double kSimAddBytes = 12.0 * k16Ki, kSimLaunch = 0.020;
}  // namespace

const std::vector<Expectation>& ShippedExpectations() {
  static const auto* table = new std::vector<Expectation>{
      {"NVIDIA H200",
       {"copy_d2d", k256Mi, CacheMode::kCold},
       "bytes_per_second",
       0.9 * 4.25e12,
       "derived: 90% of the 4.25 TB/s measured on one H200 "
       "(bench/results/2026-11-29-h200-seed-kernels.md)"},
      {"NVIDIA H200",
       {"saxpy_balanced", k256Mi, CacheMode::kCold},
       "bytes_per_second",
       0.9 * 2.70e12,
       "derived: 90% of the 2.70 TB/s measured on one H200 "
       "(bench/results/2026-11-29-h200-seed-kernels.md)"},
      {"NVIDIA H200",
       {"add_f32_tuned", k256Mi, CacheMode::kCold},
       "bytes_per_second",
       0.70 * kH200Dram,
       "derived: 70% of the 4.81 TB/s DRAM peak (no measured figure yet)"},
      {"NVIDIA H200",
       {"gemm_f16", 4096, CacheMode::kHot},
       "operations_per_second",
       0.5 * kH200Tensor,
       "derived: 50% of the 989.4 TFLOP/s dense fp16 peak (no measured figure "
       "of gpubench's gemm_f16 yet)"},
      {"NVIDIA H200",
       {"gemm_bf16", 4096, CacheMode::kHot},
       "operations_per_second",
       0.5 * kH200Tensor,
       "derived: 50% of the 989.4 TFLOP/s dense bf16 peak"},
      {"NVIDIA H200",
       {"copy_h2d_pinned", k16Mi, CacheMode::kHot},
       "bytes_per_second",
       0.7 * kGen5x16,
       "derived: 70% of PCIe Gen5 x16's 63.0 GB/s per direction"},
      {"NVIDIA H200",
       {"copy_d2h_pinned", k16Mi, CacheMode::kHot},
       "bytes_per_second",
       0.7 * kGen5x16,
       "derived: 70% of PCIe Gen5 x16's 63.0 GB/s per direction"},
      {"Simulated GPU (cpu, 20 ms launches)",
       {"add_f32", k16Ki, CacheMode::kHot},
       "bytes_per_second",
       0.9 * kSimAddBytes / kSimLaunch,
       "derived: 90% of 196608 B per launch / the model's 20 ms launch floor (CPU backend, "
       "--cpu_min_launch_seconds=0.02; tests only)"},
  };
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
