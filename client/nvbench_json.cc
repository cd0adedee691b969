#include "client/nvbench_json.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench::client {
namespace {

using Json = nlohmann::ordered_json;

// nvbench writes every summary value as a string (JSON numbers would truncate int64).
Json NamedValue(const std::string& name, const std::string& type, const std::string& value) {
  return Json{{"name", name}, {"type", type}, {"value", value}};
}
std::string Float(double v) { return absl::StrFormat("%.17g", v); }

Json Summary(const std::string& tag, const std::string& name, const std::string& hint,
             const std::string& description, Json value, bool hide = false) {
  Json s;
  s["tag"] = tag;
  s["name"] = name;
  s["description"] = description;
  s["hint"] = hint;
  if (hide) s["hide"] = "Hidden by default.";
  s["data"] = Json::array({std::move(value)});
  return s;
}
Json FloatSummary(const std::string& tag, const std::string& name, const std::string& hint,
                  const std::string& description, double value, bool hide = false) {
  return Summary(tag, name, hint, description, NamedValue("value", "float64", Float(value)), hide);
}
Json IntSummary(const std::string& tag, const std::string& name, const std::string& hint,
                const std::string& description, int64_t value) {
  return Summary(tag, name, hint, description, NamedValue("value", "int64", absl::StrCat(value)));
}
Json StringSummary(const std::string& tag, const std::string& name, const std::string& value) {
  return Summary(tag, name, "string", "gpubench: " + name, NamedValue("value", "string", value),
                 /*hide=*/true);
}

// What timed the samples, in nvbench's words (MeasurementSummary.timer; servers older than the
// field: by backend).
std::string ClockWords(const v1::RunResult& r) {
  const std::string& timer = r.measurement().timer();
  if (timer == "cupti_activity") return "(measured from CUPTI activity records)";
  if (timer == "gpu_time_duration") return "(measured by the gpu__time_duration counter)";
  if (timer == "cuda_event" || (timer.empty() && r.backend() == "cuda")) {
    return "(measured with CUDA events)";
  }
  return "(measured with a host steady clock)";
}

void AddColdSummaries(const v1::RunResult& r, Json* summaries) {
  const auto& t = r.timing();
  const std::string clock = ClockWords(r);
  Json& s = *summaries;
  s.push_back(IntSummary("nv/cold/sample_size", "Samples", "sample_size",
                         "Number of isolated kernel executions", t.samples()));
  s.push_back(FloatSummary("nv/cold/time/gpu/min", "Min GPU Time", "duration",
                           "Fastest isolated kernel execution time " + clock, t.min_seconds(), true));
  s.push_back(FloatSummary("nv/cold/time/gpu/max", "Max GPU Time", "duration",
                           "Slowest isolated kernel execution time " + clock, t.max_seconds(), true));
  s.push_back(FloatSummary("nv/cold/time/gpu/mean", "GPU Time", "duration",
                           "Mean isolated kernel execution time " + clock, t.mean_seconds()));
  s.push_back(FloatSummary("nv/cold/time/gpu/median", "Median GPU Time", "duration",
                           "Median isolated kernel execution time " + clock, t.median_seconds(),
                           true));
  s.push_back(FloatSummary("nv/cold/time/gpu/q1", "Q1 GPU Time", "duration",
                           "First quartile of isolated kernel execution times", t.p25_seconds(),
                           true));
  s.push_back(FloatSummary("nv/cold/time/gpu/q3", "Q3 GPU Time", "duration",
                           "Third quartile of isolated kernel execution times", t.p75_seconds(),
                           true));
  s.push_back(FloatSummary("nv/cold/time/gpu/iqr/absolute", "IQR", "duration",
                           "Interquartile range of isolated GPU times", t.iqr_seconds(), true));
  s.push_back(FloatSummary("nv/cold/time/gpu/iqr/relative", "IQR Noise", "percentage",
                           "Interquartile range of isolated GPU times relative to the median",
                           t.median_seconds() > 0 ? t.iqr_seconds() / t.median_seconds() : 0,
                           true));
  if (t.noise_known()) {
    s.push_back(FloatSummary("nv/cold/time/gpu/stdev/absolute", "Noise", "duration",
                             "Standard deviation of isolated GPU times", t.stddev_seconds(), true));
    s.push_back(FloatSummary("nv/cold/time/gpu/stdev/relative", "Noise", "percentage",
                             "Relative standard deviation of isolated GPU times",
                             t.relative_noise()));
  } else {
    // Fewer than two samples: no spread can be estimated; nvbench writes infinity then.
    s.push_back(FloatSummary("nv/cold/time/gpu/stdev/relative", "Noise", "percentage",
                             "Relative standard deviation of isolated GPU times (unknown: fewer "
                             "than two samples)",
                             std::numeric_limits<double>::infinity()));
  }
  if (t.mean_seconds() > 0) {
    s.push_back(FloatSummary("nv/cold/bw/item_rate", "Elem/s", "item_rate",
                             "Number of input elements processed per second",
                             static_cast<double>(r.request().elements()) / t.mean_seconds()));
    const double bytes_per_second =
        static_cast<double>(r.throughput().bytes_moved()) / t.mean_seconds();
    s.push_back(FloatSummary(
        "nv/cold/bw/global/bytes_per_second", "GlobalMem BW", "byte_rate",
        "Number of bytes read/written per second to the CUDA device's global memory",
        bytes_per_second));
    if (r.device().peak_bandwidth_bytes_per_second() > 0) {
      s.push_back(FloatSummary("nv/cold/bw/global/utilization", "BWUtil", "percentage",
                               "Global device memory utilization as a percentage of the device's "
                               "peak bandwidth",
                               bytes_per_second / r.device().peak_bandwidth_bytes_per_second()));
    }
  }
  s.push_back(FloatSummary("nv/cold/walltime", "Walltime", "duration",
                           "Walltime used for isolated measurements",
                           r.measurement().sampling_wall_seconds(), true));
}

void AddBatchSummaries(const v1::RunResult& r, Json* summaries) {
  const auto& t = r.timing();
  const int64_t launches =
      static_cast<int64_t>(t.samples()) * std::max(1, r.measurement().hot_batch_size());
  summaries->push_back(IntSummary("nv/batch/sample_size", "Samples", "sample_size",
                                  "Number of batch kernel executions", launches));
  summaries->push_back(FloatSummary(
      "nv/batch/time/gpu/mean", "Batch GPU", "duration",
      "Mean batch kernel execution time " + ClockWords(r),
      t.mean_seconds()));
  summaries->push_back(FloatSummary("nv/batch/walltime", "Walltime", "duration",
                                    "Walltime used for batch measurements",
                                    r.measurement().sampling_wall_seconds(), true));
}

// gpubench's own facts about one result, under gpubench/<mode>/*.
void AddGpubenchSummaries(const v1::RunResult& r, const std::string& mode, Json* summaries) {
  const std::string p = "gpubench/" + mode + "/";
  const auto& t = r.timing();
  summaries->push_back(StringSummary(p + "run_id", "Run", r.run_id()));
  summaries->push_back(StringSummary(p + "stop_rule", "Stop rule", r.measurement().stop_rule()));
  summaries->push_back(FloatSummary(p + "time/median", "Median", "duration",
                                    "gpubench: median per-launch time", t.median_seconds(), true));
  summaries->push_back(FloatSummary(p + "time/p5", "P5", "duration",
                                    "gpubench: 5th percentile per-launch time", t.p5_seconds(), true));
  summaries->push_back(FloatSummary(p + "time/p95", "P95", "duration",
                                    "gpubench: 95th percentile per-launch time", t.p95_seconds(),
                                    true));
  summaries->push_back(StringSummary(p + "verified", "Verified",
                                     !r.verification().requested() ? "skipped"
                                     : r.verification().passed()   ? "pass"
                                                                   : "FAIL"));
}

Json Device(const v1::DeviceInfo& d) {
  Json j;
  j["id"] = d.index();
  j["name"] = d.name();
  j["sm_version"] = d.compute_capability_major() * 100 + d.compute_capability_minor() * 10;
  j["ptx_version"] = d.compute_capability_major() * 100 + d.compute_capability_minor() * 10;
  j["sm_default_clock_rate"] = static_cast<int64_t>(d.sm_clock_hz());
  j["number_of_sms"] = d.multiprocessor_count();
  j["max_blocks_per_sm"] = d.max_blocks_per_multiprocessor();
  j["max_threads_per_sm"] = d.max_threads_per_multiprocessor();
  j["max_threads_per_block"] = d.max_threads_per_block();
  j["registers_per_sm"] = d.registers_per_multiprocessor();
  j["registers_per_block"] = d.registers_per_block();
  j["global_memory_size"] = d.total_memory_bytes();
  j["global_memory_bus_peak_clock_rate"] = static_cast<int64_t>(d.memory_clock_hz());
  j["global_memory_bus_width"] = d.memory_bus_width_bits();
  j["global_memory_bus_bandwidth"] = static_cast<int64_t>(d.peak_bandwidth_bytes_per_second());
  j["l2_cache_size"] = d.l2_cache_bytes();
  j["shared_memory_per_sm"] = d.shared_memory_per_multiprocessor_bytes();
  j["shared_memory_per_block"] = d.shared_memory_per_block_bytes();
  j["ecc_state"] = false;  // not reported by gpubench
  return j;
}

struct StateKey {
  int device;
  int64_t elements;
  int block_size;
  int items_per_thread;
  bool operator<(const StateKey& o) const {
    return std::tie(device, elements, block_size, items_per_thread) <
           std::tie(o.device, o.elements, o.block_size, o.items_per_thread);
  }
};

}  // namespace

std::string RenderNvbenchJson(const std::vector<v1::RunResult>& results,
                              const std::vector<std::string>& argv) {
  Json root;
  Json& meta = root["meta"];
  meta["argv"] = argv;
  meta["version"]["json"] = {{"major", 1}, {"minor", 0}, {"patch", 0}, {"string", "1.0.0"}};
  meta["version"]["gpubench"] = {{"string", "gpubench.v1"}};

  // Devices, by index, as the results saw them.
  std::map<int, Json> devices;
  for (const v1::RunResult& r : results) {
    devices.emplace(r.request().device_index(), Device(r.device()));
  }
  root["devices"] = Json::array();
  for (auto& [index, device] : devices) root["devices"].push_back(device);

  // Kernels in first-seen order; within each, states keyed by their axis values.
  std::vector<std::string> kernels;
  std::map<std::string, std::map<StateKey, std::vector<const v1::RunResult*>>> grouped;
  for (const v1::RunResult& r : results) {
    const auto& q = r.request();
    if (!grouped.count(q.kernel())) kernels.push_back(q.kernel());
    grouped[q.kernel()][{q.device_index(), q.elements(), q.block_size(), q.items_per_thread()}]
        .push_back(&r);
  }
  root["benchmarks"] = Json::array();
  for (const std::string& kernel : kernels) {
    const auto& states = grouped[kernel];
    const v1::RunResult& first = *states.begin()->second.front();
    Json bench;
    bench["name"] = kernel;
    bench["index"] = root["benchmarks"].size();
    bench["min_samples"] = first.request().min_samples();
    bench["min_time"] = first.request().min_time_seconds();
    bench["max_noise"] = first.request().max_noise();  // a fraction, as nvbench stores it
    bench["skip_time"] = -1.0;
    bench["timeout"] = first.request().timeout_seconds();
    std::map<int, bool> bench_devices;
    std::map<int64_t, bool> sizes, blocks, items;
    for (const auto& [key, rs] : states) {
      bench_devices[key.device] = true;
      sizes[key.elements] = true;
      blocks[key.block_size] = true;
      items[key.items_per_thread] = true;
    }
    bench["devices"] = Json::array();
    for (const auto& [d, _] : bench_devices) bench["devices"].push_back(d);
    auto axis = [](const std::string& name, const std::map<int64_t, bool>& values) {
      Json a;
      a["name"] = name;
      a["type"] = "int64";
      a["flags"] = "";
      a["values"] = Json::array();
      for (const auto& [v, _] : values) {
        a["values"].push_back(
            Json{{"input_string", absl::StrCat(v)}, {"description", ""}, {"value", v}});
      }
      return a;
    };
    bench["axes"] = Json::array(
        {axis("Elements", sizes), axis("BlockSize", blocks), axis("ItemsPerThread", items)});
    bench["states"] = Json::array();
    for (const auto& [key, rs] : states) {
      const v1::RunResult& r0 = *rs.front();
      Json st;
      st["name"] = absl::StrCat("Device=", key.device, " Elements=", key.elements,
                                " BlockSize=", key.block_size, " ItemsPerThread=",
                                key.items_per_thread);
      st["min_samples"] = r0.request().min_samples();
      st["min_time"] = r0.request().min_time_seconds();
      st["max_noise"] = r0.request().max_noise();
      st["skip_time"] = -1.0;
      st["timeout"] = r0.request().timeout_seconds();
      st["device"] = key.device;
      st["type_config_index"] = 0;
      st["axis_values"] = Json::array(
          {NamedValue("Elements", "int64", absl::StrCat(key.elements)),
           NamedValue("BlockSize", "int64", absl::StrCat(key.block_size)),
           NamedValue("ItemsPerThread", "int64", absl::StrCat(key.items_per_thread))});
      Json summaries = Json::array();
      // The latest cold and the latest hot result of this state (a later one replaces).
      const v1::RunResult* cold = nullptr;
      const v1::RunResult* hot = nullptr;
      for (const v1::RunResult* r : rs) (r->request().cache_mode() == v1::HOT ? hot : cold) = r;
      if (cold != nullptr) AddColdSummaries(*cold, &summaries);
      if (hot != nullptr) AddBatchSummaries(*hot, &summaries);
      if (cold != nullptr) AddGpubenchSummaries(*cold, "cold", &summaries);
      if (hot != nullptr) AddGpubenchSummaries(*hot, "batch", &summaries);
      st["summaries"] = std::move(summaries);
      st["is_skipped"] = false;
      bench["states"].push_back(std::move(st));
    }
    root["benchmarks"].push_back(std::move(bench));
  }
  return root.dump(2) + "\n";
}

}  // namespace gpubench::client
