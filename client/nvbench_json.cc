#include "client/nvbench_json.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench::client {
namespace {

using Json = nlohmann::ordered_json;

// nvbench's statistics need this many samples before a standard deviation means anything
// (min_samples_for_noise_estimate); below it the noise is infinite.
constexpr int kMinSamplesForNoise = 5;

// nvbench writes every summary value as a string (JSON numbers would truncate int64).
Json NamedValue(const std::string& name, const std::string& type, const std::string& value) {
  return Json{{"name", name}, {"type", type}, {"value", value}};
}
std::string Float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.17g", v);
}

Json Summary(const std::string& tag, const std::string& name, const std::string& hint,
             const std::string& description, Json data, bool hide = false) {
  Json s;
  s["tag"] = tag;
  s["name"] = name;
  s["description"] = description;
  s["hint"] = hint;
  if (hide) s["hide"] = "Hidden by default.";
  s["data"] = std::move(data);
  return s;
}
Json FloatSummary(const std::string& tag, const std::string& name, const std::string& hint,
                  const std::string& description, double value, bool hide = false) {
  return Summary(tag, name, hint, description,
                 Json::array({NamedValue("value", "float64", Float(value))}), hide);
}
Json IntSummary(const std::string& tag, const std::string& name, const std::string& hint,
                const std::string& description, int64_t value) {
  return Summary(tag, name, hint, description,
                 Json::array({NamedValue("value", "int64", absl::StrCat(value))}));
}
Json StringSummary(const std::string& tag, const std::string& name, const std::string& value) {
  return Summary(tag, name, "string", "gpubench: " + name,
                 Json::array({NamedValue("value", "string", value)}), /*hide=*/true);
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

bool IsHot(const v1::RunResult& r) { return r.request().cache_mode() == v1::HOT; }

// The per-launch statistics of one result in nv/cold/* tags (the tags the compare scripts read;
// for a hot result, the per-launch times of its batches, named so in the descriptions).
void AddTimeSummaries(const v1::RunResult& r, const std::vector<float>* sample_file_values,
                      const std::string& sample_file, Json* summaries) {
  const auto& t = r.timing();
  const std::string clock = ClockWords(r);
  const std::string what = IsHot(r) ? "per-launch time of batched kernel executions"
                                    : "isolated kernel execution time";
  Json& s = *summaries;
  s.push_back(IntSummary("nv/cold/sample_size", "Samples", "sample_size",
                         IsHot(r) ? "Number of batches (samples) of kernel executions"
                                  : "Number of isolated kernel executions",
                         t.samples()));
  s.push_back(FloatSummary("nv/cold/time/gpu/min", "Min GPU Time", "duration",
                           "Fastest " + what + " " + clock, t.min_seconds(), true));
  s.push_back(FloatSummary("nv/cold/time/gpu/max", "Max GPU Time", "duration",
                           "Slowest " + what + " " + clock, t.max_seconds(), true));
  s.push_back(FloatSummary("nv/cold/time/gpu/mean", "GPU Time", "duration",
                           "Mean " + what + " " + clock, t.mean_seconds()));
  const bool noise = t.noise_known() && t.samples() >= kMinSamplesForNoise;
  const double inf = std::numeric_limits<double>::infinity();
  s.push_back(FloatSummary("nv/cold/time/gpu/stdev/absolute", "Noise", "duration",
                           "Standard deviation of GPU times", noise ? t.stddev_seconds() : inf,
                           true));
  s.push_back(FloatSummary("nv/cold/time/gpu/stdev/relative", "Noise", "percentage",
                           noise ? std::string("Relative standard deviation of GPU times")
                                 : absl::StrCat("Relative standard deviation of GPU times "
                                                "(unknown: fewer than ",
                                                kMinSamplesForNoise, " samples)"),
                           noise ? t.relative_noise() : inf));
  // Quartiles only from the complete samples, by nvbench's rank rule; the server's own
  // percentiles interpolate, which nvbench does not (gpubench/*/time/* keep them).
  const auto& samples = r.samples();
  if (samples.seconds_size() > 0 && !samples.strided() &&
      samples.seconds_size() == samples.count()) {
    std::vector<double> v(samples.seconds().begin(), samples.seconds().end());
    const double q1 = NvbenchQuantile(v, 0.25), q2 = NvbenchQuantile(v, 0.5),
                 q3 = NvbenchQuantile(v, 0.75);
    s.push_back(FloatSummary("nv/cold/time/gpu/q1", "Q1 GPU Time", "duration",
                             "First quartile of GPU times", q1, true));
    s.push_back(FloatSummary("nv/cold/time/gpu/median", "Median GPU Time", "duration",
                             "Median of GPU times", q2, true));
    s.push_back(FloatSummary("nv/cold/time/gpu/q3", "Q3 GPU Time", "duration",
                             "Third quartile of GPU times", q3, true));
    s.push_back(FloatSummary("nv/cold/time/gpu/iqr/absolute", "IQR", "duration",
                             "Interquartile range of GPU times", q3 - q1, true));
    s.push_back(FloatSummary(
        "nv/cold/time/gpu/iqr/relative", "IQR Noise", "percentage",
        "Interquartile range of GPU times relative to the median",
        v.size() >= kMinSamplesForNoise && q2 > 0 ? (q3 - q1) / q2 : inf, true));
  }
  // gpubench reads the SM clock before every sample but reports only the lowest and highest:
  // their midpoint stands for nvbench's mean (exact when they agree; documented).
  const auto& m = r.measurement();
  if (m.min_sm_clock_hz() > 0 && m.max_sm_clock_hz() > 0) {
    const double mean_clock = 0.5 * (m.min_sm_clock_hz() + m.max_sm_clock_hz());
    s.push_back(FloatSummary("nv/cold/sm_clock_rate/mean", "Clock Rate", "frequency",
                             "SM clock rate: midpoint of the lowest and highest read over the "
                             "samples (gpubench reports no per-sample clocks)",
                             mean_clock, true));
    if (r.device().sm_clock_hz() > 0) {
      s.push_back(FloatSummary("nv/cold/sm_clock_rate/scaling/percent", "Clock Scaling",
                               "percentage", "SM clock rate relative to the default clock",
                               mean_clock / r.device().sm_clock_hz(), true));
    }
  }
  if (t.mean_seconds() > 0) {
    s.push_back(FloatSummary("nv/cold/bw/item_rate", "Elem/s", "item_rate",
                             "Number of input elements processed per second",
                             static_cast<double>(r.request().elements()) / t.mean_seconds()));
    const double bytes_per_second =
        static_cast<double>(r.throughput().bytes_moved()) / t.mean_seconds();
    if (r.throughput().bytes_moved() > 0) {
      s.push_back(FloatSummary(
          "nv/cold/bw/global/bytes_per_second", "GlobalMem BW", "byte_rate",
          "Number of bytes read/written per second to the CUDA device's global memory",
          bytes_per_second));
      if (r.device().peak_bandwidth_bytes_per_second() > 0) {
        s.push_back(FloatSummary("nv/cold/bw/global/utilization", "BWUtil", "percentage",
                                 "Global device memory utilization as a percentage of the "
                                 "device's peak bandwidth",
                                 bytes_per_second / r.device().peak_bandwidth_bytes_per_second()));
      }
    }
  }
  s.push_back(FloatSummary("nv/cold/walltime", "Walltime", "duration",
                           "Walltime used for the measurements", m.sampling_wall_seconds(), true));
  if (sample_file_values != nullptr) {
    s.push_back(Summary(
        "nv/json/bin:nv/cold/sample_times", "Samples Times File", "file/sample_times",
        "Binary file containing sample times as little-endian float32.",
        Json::array({NamedValue("filename", "string", sample_file),
                     NamedValue("size", "int64", absl::StrCat(sample_file_values->size()))}),
        false));
    s.back()["hide"] = "Not needed in table.";
  }
}

// nvbench's batch summaries of a hot result: launches and the mean per-launch time.
void AddBatchSummaries(const v1::RunResult& r, Json* summaries) {
  const auto& t = r.timing();
  const int64_t launches =
      static_cast<int64_t>(t.samples()) * std::max(1, r.measurement().hot_batch_size());
  summaries->push_back(IntSummary("nv/batch/sample_size", "Samples", "sample_size",
                                  "Number of batch kernel executions", launches));
  summaries->push_back(FloatSummary("nv/batch/time/gpu/mean", "Batch GPU", "duration",
                                    "Mean batch kernel execution time " + ClockWords(r),
                                    t.mean_seconds()));
  summaries->push_back(FloatSummary("nv/batch/walltime", "Walltime", "duration",
                                    "Walltime used for batch measurements",
                                    r.measurement().sampling_wall_seconds(), true));
}

// gpubench's own facts about one result, under gpubench/*: nvbench's tools ignore them.
void AddGpubenchSummaries(const v1::RunResult& r, Json* summaries) {
  const std::string p = "gpubench/";
  const auto& t = r.timing();
  const auto& q = r.request();
  summaries->push_back(StringSummary(p + "run_id", "Run", r.run_id()));
  summaries->push_back(StringSummary(p + "mode", "Mode", IsHot(r) ? "hot" : "cold"));
  // The launch is a fact of the result, not of the state's name (an autotune changes it).
  summaries->push_back(StringSummary(
      p + "launch", "Launch",
      absl::StrCat(q.block_size(), "x", q.items_per_thread(),
                   q.block_size_source().empty() ? "" : " (" + q.block_size_source() + ")")));
  summaries->push_back(StringSummary(p + "stop_rule", "Stop rule", r.measurement().stop_rule()));
  summaries->push_back(FloatSummary(p + "time/median", "Median", "duration",
                                    "gpubench: median per-launch time (interpolated)",
                                    t.median_seconds(), true));
  summaries->push_back(FloatSummary(p + "time/p5", "P5", "duration",
                                    "gpubench: 5th percentile per-launch time", t.p5_seconds(),
                                    true));
  summaries->push_back(FloatSummary(p + "time/p95", "P95", "duration",
                                    "gpubench: 95th percentile per-launch time", t.p95_seconds(),
                                    true));
  if (r.measurement().min_sm_clock_hz() > 0) {
    summaries->push_back(FloatSummary(p + "sm_clock_rate/min", "Min clock", "frequency",
                                      "gpubench: lowest SM clock read",
                                      r.measurement().min_sm_clock_hz(), true));
    summaries->push_back(FloatSummary(p + "sm_clock_rate/max", "Max clock", "frequency",
                                      "gpubench: highest SM clock read",
                                      r.measurement().max_sm_clock_hz(), true));
  }
  if (r.samples().strided()) {
    summaries->push_back(StringSummary(
        p + "samples", "Samples",
        absl::StrCat("strided: ", r.samples().seconds_size(), " of ", r.samples().count())));
  }
  summaries->push_back(StringSummary(p + "verified", "Verified",
                                     !r.verification().requested() ? "skipped"
                                     : r.verification().passed()   ? "pass"
                                                                   : "FAIL"));
}

// nvbench's device fields. ecc_state and ptx_version are left out: gpubench's DeviceInfo does
// not report them (nvbench's compare reads neither; a guess would make two files disagree).
Json Device(const v1::DeviceInfo& d) {
  Json j;
  j["id"] = d.index();
  j["name"] = d.name();
  j["sm_version"] = d.compute_capability_major() * 100 + d.compute_capability_minor() * 10;
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
  return j;
}

// One state's entry: a result, or a failed item (skipped).
struct Entry {
  int device = 0;
  int64_t elements = 0;
  int block_size = 0;
  int items_per_thread = 0;
  const v1::RunResult* result = nullptr;
  const v1::SweepItemError* error = nullptr;
};

std::string CodeName(int code) {
  static const char* kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                                 "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
                                 "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                                 "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : absl::StrCat("code ", code);
}

}  // namespace

double NvbenchQuantile(std::vector<double> samples, double q) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(samples.begin(), samples.end());
  const auto rank =
      static_cast<size_t>(std::round(q * static_cast<double>(samples.size() - 1)));
  return samples[std::min(rank, samples.size() - 1)];
}

NvbenchOutput RenderNvbench(const NvbenchInput& input) {
  NvbenchOutput out;
  Json root;
  Json& meta = root["meta"];
  meta["argv"] = input.argv;
  meta["version"]["json"] = {{"major", 1}, {"minor", 0}, {"patch", 0}, {"string", "1.0.0"}};
  meta["version"]["gpubench"] = {{"string", "gpubench.v1"}};

  // Every device of the server when known, so two files of one server have the same section
  // whichever devices each ran on (the compare scripts refuse differing sections).
  std::map<int, Json> devices;
  for (const v1::DeviceInfo& d : input.devices) devices.emplace(d.index(), Device(d));
  if (input.devices.empty()) {
    for (const v1::RunResult& r : input.results) {
      devices.emplace(r.request().device_index(), Device(r.device()));
    }
  }
  root["devices"] = Json::array();
  for (auto& [index, device] : devices) root["devices"].push_back(device);

  // Benchmarks (kernel, mode) in first-seen order; a later entry of the same state replaces.
  using BenchKey = std::pair<std::string, bool>;  // kernel, hot
  std::vector<BenchKey> order;
  std::map<BenchKey, std::vector<Entry>> entries;
  auto add = [&](const BenchKey& key, Entry e) {
    if (!entries.count(key)) order.push_back(key);
    entries[key].push_back(e);
  };
  for (const v1::RunResult& r : input.results) {
    const auto& q = r.request();
    add({q.kernel(), IsHot(r)},
        {q.device_index(), q.elements(), q.block_size(), q.items_per_thread(), &r, nullptr});
  }
  for (const v1::SweepItemError& e : input.errors) {
    add({e.kernel(), input.errors_mode == v1::HOT},
        {e.device_index(), e.elements(), e.block_size(), e.items_per_thread(), nullptr, &e});
  }

  const std::string bin_dir =
      input.json_path.empty()
          ? ""
          : std::filesystem::path(input.json_path).filename().string() + "-bin";
  root["benchmarks"] = Json::array();
  for (const BenchKey& key : order) {
    const std::vector<Entry>& list = entries[key];
    // Launch axes only where one device and size holds several launches (a launch sweep):
    // otherwise the launch would only rename states between runs (autotune, catalog changes).
    std::map<std::pair<int, int64_t>, std::set<std::pair<int, int>>> launches;
    for (const Entry& e : list) {
      launches[{e.device, e.elements}].insert({e.block_size, e.items_per_thread});
    }
    bool launch_axes = false;
    for (const auto& [_, l] : launches) launch_axes |= l.size() > 1;
    using StateKey = std::tuple<int, int64_t, int, int>;
    std::map<StateKey, const Entry*> states;
    for (const Entry& e : list) {
      states[{e.device, e.elements, launch_axes ? e.block_size : 0,
              launch_axes ? e.items_per_thread : 0}] = &e;
    }
    const v1::RunResult* first = nullptr;
    for (const Entry& e : list) {
      if (e.result != nullptr) {
        first = e.result;
        break;
      }
    }
    const v1::ResolvedRun settings = first != nullptr ? first->request() : v1::ResolvedRun();
    Json bench;
    bench["name"] = key.second ? key.first + " (hot)" : key.first;
    bench["index"] = root["benchmarks"].size();
    bench["min_samples"] = settings.min_samples();
    bench["min_time"] = settings.min_time_seconds();
    bench["max_noise"] = settings.max_noise();  // a fraction, as nvbench stores it
    bench["skip_time"] = -1.0;
    bench["timeout"] = settings.timeout_seconds();
    std::set<int> bench_devices;
    std::set<int64_t> sizes, blocks, items;
    for (const auto& [k, e] : states) {
      bench_devices.insert(std::get<0>(k));
      sizes.insert(std::get<1>(k));
      blocks.insert(std::get<2>(k));
      items.insert(std::get<3>(k));
    }
    bench["devices"] = Json::array();
    for (int d : bench_devices) bench["devices"].push_back(d);
    auto axis = [](const std::string& name, const std::set<int64_t>& values) {
      Json a;
      a["name"] = name;
      a["type"] = "int64";
      a["flags"] = "";
      a["values"] = Json::array();
      for (int64_t v : values) {
        a["values"].push_back(
            Json{{"input_string", absl::StrCat(v)}, {"description", ""}, {"value", v}});
      }
      return a;
    };
    bench["axes"] = Json::array({axis("Elements", sizes)});
    if (launch_axes) {
      bench["axes"].push_back(axis("BlockSize", blocks));
      bench["axes"].push_back(axis("ItemsPerThread", items));
    }
    bench["states"] = Json::array();
    for (const auto& [k, e] : states) {
      const auto& [device, elements, block, per_thread] = k;
      const v1::ResolvedRun& q = e->result != nullptr ? e->result->request() : settings;
      Json st;
      st["name"] = absl::StrCat("Device=", device, " Elements=", elements);
      if (launch_axes) {
        absl::StrAppend(st["name"].get_ptr<std::string*>(), " BlockSize=", block,
                        " ItemsPerThread=", per_thread);
      }
      st["min_samples"] = q.min_samples();
      st["min_time"] = q.min_time_seconds();
      st["max_noise"] = q.max_noise();
      st["skip_time"] = -1.0;
      st["timeout"] = q.timeout_seconds();
      st["device"] = device;
      st["type_config_index"] = 0;
      st["axis_values"] = Json::array({NamedValue("Elements", "int64", absl::StrCat(elements))});
      if (launch_axes) {
        st["axis_values"].push_back(NamedValue("BlockSize", "int64", absl::StrCat(block)));
        st["axis_values"].push_back(
            NamedValue("ItemsPerThread", "int64", absl::StrCat(per_thread)));
      }
      if (e->error != nullptr) {
        // nvbench's skipped state: no summaries, the reason.
        st["summaries"] = nullptr;
        st["is_skipped"] = true;
        st["skip_reason"] = absl::StrCat(CodeName(e->error->code()), ": ", e->error->message());
        bench["states"].push_back(std::move(st));
        continue;
      }
      const v1::RunResult& r = *e->result;
      std::vector<float> values;
      std::string file;
      if (!bin_dir.empty() && r.samples().seconds_size() > 0) {
        file = absl::StrCat(bin_dir, "/", out.side_files.size(), ".bin");
        std::string bytes;
        for (double s : r.samples().seconds()) {
          const float f = static_cast<float>(s);
          char b[4];
          std::memcpy(b, &f, 4);
          if constexpr (std::endian::native == std::endian::big) {
            std::swap(b[0], b[3]);
            std::swap(b[1], b[2]);
          }
          bytes.append(b, 4);
          values.push_back(f);
        }
        out.side_files.push_back({file, std::move(bytes)});
      }
      Json summaries = Json::array();
      AddTimeSummaries(r, file.empty() ? nullptr : &values, file, &summaries);
      if (IsHot(r)) AddBatchSummaries(r, &summaries);
      AddGpubenchSummaries(r, &summaries);
      st["summaries"] = std::move(summaries);
      st["is_skipped"] = false;
      bench["states"].push_back(std::move(st));
    }
    root["benchmarks"].push_back(std::move(bench));
  }
  out.json = root.dump(2) + "\n";
  return out;
}

absl::Status WriteNvbenchSideFiles(const NvbenchOutput& output, const std::string& json_path) {
  const std::filesystem::path dir = std::filesystem::path(json_path).parent_path();
  for (const NvbenchFile& f : output.side_files) {
    const std::filesystem::path path = dir / f.path;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(f.bytes.data(), static_cast<std::streamsize>(f.bytes.size()));
    file.close();
    if (!file) return absl::UnavailableError(absl::StrCat("cannot write ", path.string()));
  }
  return absl::OkStatus();
}

std::string RenderNvbenchJson(const std::vector<v1::RunResult>& results,
                              const std::vector<std::string>& argv) {
  NvbenchInput input;
  input.results = results;
  input.argv = argv;
  return RenderNvbench(input).json;
}

}  // namespace gpubench::client
