// gpubench results rendered in nvbench's JSON schema (file version 1.0.0): the fields and summary
// tags that nvbench's json_printer writes and nvbench_compare.py reads.
#include "client/nvbench_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/output.h"

namespace gpubench::client {
namespace {

using Json = nlohmann::json;

v1::RunResult Result(v1::CacheMode mode, int64_t elements, double mean, int samples) {
  v1::RunResult r;
  r.set_run_id(mode == v1::HOT ? "hot-run" : "cold-run");
  r.set_backend("cuda");
  auto* q = r.mutable_request();
  q->set_kernel("add_f32");
  q->set_elements(elements);
  q->set_device_index(0);
  q->set_block_size(256);
  q->set_items_per_thread(4);
  q->set_cache_mode(mode);
  q->set_min_samples(10);
  q->set_min_time_seconds(0.05);
  q->set_max_noise(0.005);
  q->set_timeout_seconds(15);
  auto* t = r.mutable_timing();
  t->set_samples(samples);
  t->set_mean_seconds(mean);
  t->set_median_seconds(mean * 0.99);
  t->set_min_seconds(mean * 0.9);
  t->set_max_seconds(mean * 1.2);
  t->set_stddev_seconds(mean * 0.01);
  t->set_relative_noise(0.01);
  t->set_p25_seconds(mean * 0.98);
  t->set_p75_seconds(mean * 1.01);
  t->set_iqr_seconds(mean * 0.03);
  t->set_noise_known(samples >= 2);
  r.mutable_measurement()->set_hot_batch_size(mode == v1::HOT ? 64 : 1);
  r.mutable_measurement()->set_stop_rule("noise_converged");
  r.mutable_measurement()->set_sampling_wall_seconds(0.25);
  r.mutable_throughput()->set_bytes_moved(elements * 12);
  r.mutable_verification()->set_requested(true);
  r.mutable_verification()->set_passed(true);
  auto* d = r.mutable_device();
  d->set_index(0);
  d->set_name("NVIDIA H200");
  d->set_compute_capability_major(9);
  d->set_multiprocessor_count(132);
  d->set_sm_clock_hz(1.98e9);
  d->set_peak_bandwidth_bytes_per_second(4.8e12);
  d->set_l2_cache_bytes(50 << 20);
  return r;
}

// The summary with `tag` in `state`, or null.
const Json* FindSummary(const Json& state, const std::string& tag) {
  for (const Json& s : state["summaries"]) {
    if (s["tag"] == tag) return &s;
  }
  return nullptr;
}

// nvbench's reader takes the value named "value" from data[], written as a string.
double Value(const Json& summary) {
  for (const Json& d : summary["data"]) {
    if (d["name"] == "value") return std::stod(d["value"].get<std::string>());
  }
  ADD_FAILURE() << "no value in " << summary.dump();
  return NAN;
}

TEST(NvbenchJson, SchemaFieldsAndTags) {
  const std::vector<v1::RunResult> results = {Result(v1::COLD, 1 << 20, 6e-6, 4000),
                                              Result(v1::HOT, 1 << 20, 4e-6, 300),
                                              Result(v1::COLD, 1 << 24, 6e-5, 900)};
  const Json root = Json::parse(RenderNvbenchJson(results, {"gpubench", "sweep"}));

  // meta: argv and the JSON file version nvbench's reader checks.
  EXPECT_EQ(root["meta"]["argv"], Json({"gpubench", "sweep"}));
  EXPECT_EQ(root["meta"]["version"]["json"]["string"], "1.0.0");
  EXPECT_EQ(root["meta"]["version"]["json"]["major"], 1);

  // devices: nvbench's device section.
  ASSERT_EQ(root["devices"].size(), 1u);
  const Json& dev = root["devices"][0];
  for (const char* field :
       {"id", "name", "sm_version", "sm_default_clock_rate", "number_of_sms",
        "max_blocks_per_sm", "max_threads_per_sm", "max_threads_per_block", "registers_per_sm",
        "registers_per_block", "global_memory_size", "global_memory_bus_peak_clock_rate",
        "global_memory_bus_width", "global_memory_bus_bandwidth", "l2_cache_size",
        "shared_memory_per_sm", "shared_memory_per_block"}) {
    EXPECT_TRUE(dev.contains(field)) << field;
  }
  // Not reported by gpubench: left out rather than guessed (ecc false, ptx = sm before).
  EXPECT_FALSE(dev.contains("ecc_state"));
  EXPECT_FALSE(dev.contains("ptx_version"));
  EXPECT_EQ(dev["sm_version"], 900);
  EXPECT_EQ(dev["number_of_sms"], 132);

  // One benchmark per kernel and mode (hot: "<kernel> (hot)"), with nvbench's fields.
  ASSERT_EQ(root["benchmarks"].size(), 2u);
  EXPECT_EQ(root["benchmarks"][1]["name"], "add_f32 (hot)");
  const Json& bench = root["benchmarks"][0];
  EXPECT_EQ(bench["name"], "add_f32");
  EXPECT_EQ(bench["index"], 0);
  for (const char* field : {"min_samples", "min_time", "max_noise", "skip_time", "timeout",
                            "devices", "axes", "states"}) {
    EXPECT_TRUE(bench.contains(field)) << field;
  }
  EXPECT_DOUBLE_EQ(bench["max_noise"].get<double>(), 0.005);  // a fraction, as nvbench stores it
  ASSERT_EQ(bench["axes"].size(), 1u);  // one launch per size: the launch is no axis
  EXPECT_EQ(bench["axes"][0]["name"], "Elements");
  EXPECT_EQ(bench["axes"][0]["type"], "int64");
  EXPECT_TRUE(bench["axes"][0].contains("flags"));
  EXPECT_EQ(bench["axes"][0]["values"].size(), 2u);
  EXPECT_EQ(bench["axes"][0]["values"][0]["input_string"], "1048576");

  ASSERT_EQ(bench["states"].size(), 2u);
  const Json& st = bench["states"][0];
  EXPECT_EQ(st["name"], "Device=0 Elements=1048576");
  EXPECT_EQ(st["device"], 0);
  EXPECT_EQ(st["is_skipped"], false);
  ASSERT_EQ(st["axis_values"].size(), 1u);
  EXPECT_EQ(st["axis_values"][0], Json({{"name", "Elements"}, {"type", "int64"}, {"value", "1048576"}}));

  // Every summary: tag, name, description, hint, and data[] of {name, type, value-as-string}.
  std::set<std::string> tags;
  for (const Json& s : st["summaries"]) {
    tags.insert(s["tag"]);
    for (const char* field : {"tag", "name", "description", "hint", "data"}) {
      EXPECT_TRUE(s.contains(field)) << field << " in " << s.dump();
    }
    for (const Json& d : s["data"]) {
      EXPECT_TRUE(d["value"].is_string()) << s.dump();
      EXPECT_TRUE(d["type"] == "int64" || d["type"] == "float64" || d["type"] == "string");
    }
  }
  for (const char* tag :
       {"nv/cold/sample_size", "nv/cold/time/gpu/mean", "nv/cold/time/gpu/min",
        "nv/cold/time/gpu/max", "nv/cold/time/gpu/stdev/relative",
        "nv/cold/bw/item_rate", "nv/cold/bw/global/bytes_per_second",
        "nv/cold/bw/global/utilization", "nv/cold/walltime", "gpubench/run_id",
        "gpubench/stop_rule", "gpubench/launch"}) {
    EXPECT_TRUE(tags.count(tag)) << tag;
  }
  EXPECT_DOUBLE_EQ(Value(*FindSummary(st, "nv/cold/time/gpu/mean")), 6e-6);
  EXPECT_DOUBLE_EQ(Value(*FindSummary(st, "nv/cold/time/gpu/stdev/relative")), 0.01);
  EXPECT_EQ(Value(*FindSummary(st, "nv/cold/sample_size")), 4000);
  EXPECT_EQ((*FindSummary(st, "nv/cold/sample_size"))["data"][0]["type"], "int64");
  // Without the samples no quartiles: the server's interpolate, nvbench's select.
  EXPECT_EQ(FindSummary(st, "nv/cold/time/gpu/q1"), nullptr);
  // The hot benchmark: per-launch figures in the nv/cold/* tags the compare scripts read.
  const Json& hot = root["benchmarks"][1]["states"][0];
  EXPECT_EQ(hot["name"], "Device=0 Elements=1048576");
  EXPECT_DOUBLE_EQ(Value(*FindSummary(hot, "nv/cold/time/gpu/mean")), 4e-6);
  EXPECT_DOUBLE_EQ(Value(*FindSummary(hot, "nv/batch/time/gpu/mean")), 4e-6);
  EXPECT_EQ(Value(*FindSummary(hot, "nv/batch/sample_size")), 300 * 64);  // launches
  EXPECT_DOUBLE_EQ(Value(*FindSummary(st, "nv/cold/bw/global/bytes_per_second")),
                   (1 << 20) * 12 / 6e-6);
  EXPECT_EQ((*FindSummary(st, "nv/cold/time/gpu/stdev/relative"))["hint"], "percentage");
  EXPECT_EQ((*FindSummary(st, "nv/cold/time/gpu/mean"))["hint"], "duration");
  EXPECT_EQ(FindSummary(bench["states"][1], "nv/batch/time/gpu/mean"), nullptr);
}

TEST(NvbenchJson, QuantilesSelectByNvbenchsRankRule) {
  // round(0.25 * 3) = 1, round(0.5 * 3) = 2 (1.5 rounds away from zero), round(0.75 * 3) = 2.
  EXPECT_EQ(NvbenchQuantile({4, 1, 3, 2}, 0.25), 2);
  EXPECT_EQ(NvbenchQuantile({4, 1, 3, 2}, 0.5), 3);
  EXPECT_EQ(NvbenchQuantile({4, 1, 3, 2}, 0.75), 3);
  EXPECT_TRUE(std::isnan(NvbenchQuantile({}, 0.5)));
  v1::RunResult r = Result(v1::COLD, 1 << 20, 6e-6, 5);
  for (double v : {5e-6, 1e-6, 3e-6, 2e-6, 4e-6}) r.mutable_samples()->add_seconds(v);
  r.mutable_samples()->set_count(5);
  NvbenchInput in;
  in.results = {r};
  in.json_path = "/tmp/out.json";
  const NvbenchOutput out = RenderNvbench(in);
  const Json st = Json::parse(out.json)["benchmarks"][0]["states"][0];
  EXPECT_DOUBLE_EQ(Value(*FindSummary(st, "nv/cold/time/gpu/q1")), 2e-6);
  EXPECT_DOUBLE_EQ(Value(*FindSummary(st, "nv/cold/time/gpu/median")), 3e-6);
  EXPECT_DOUBLE_EQ(Value(*FindSummary(st, "nv/cold/time/gpu/q3")), 4e-6);
  // The samples in nvbench's side file, named relative to the JSON's directory.
  ASSERT_EQ(out.side_files.size(), 1u);
  EXPECT_EQ(out.side_files[0].path, "out.json-bin/0.bin");
  EXPECT_EQ(out.side_files[0].bytes.size(), 5u * 4u);
  const Json* bin = FindSummary(st, "nv/json/bin:nv/cold/sample_times");
  ASSERT_NE(bin, nullptr);
  EXPECT_EQ((*bin)["data"][0]["value"], "out.json-bin/0.bin");
  EXPECT_EQ((*bin)["data"][1]["value"], "5");
}

TEST(NvbenchJson, FailedItemsAreSkippedStatesAndEveryDeviceIsListed) {
  NvbenchInput in;
  in.results = {Result(v1::COLD, 1 << 20, 6e-6, 100)};
  v1::SweepItemError e;
  e.set_kernel("add_f32");
  e.set_elements(1 << 24);
  e.set_block_size(256);
  e.set_items_per_thread(4);
  e.set_code(13);
  e.set_message("verification failed");
  in.errors = {e};
  for (int i = 0; i < 2; ++i) {
    v1::DeviceInfo d = in.results[0].device();
    d.set_index(i);
    in.devices.push_back(d);
  }
  const Json root = Json::parse(RenderNvbench(in).json);
  ASSERT_EQ(root["devices"].size(), 2u);  // device 1 ran nothing but is listed
  const Json& bench = root["benchmarks"][0];
  EXPECT_EQ(bench["devices"], Json::array({0}));
  ASSERT_EQ(bench["states"].size(), 2u);
  const Json& skipped = bench["states"][1];
  EXPECT_EQ(skipped["name"], "Device=0 Elements=16777216");
  EXPECT_EQ(skipped["is_skipped"], true);
  EXPECT_EQ(skipped["skip_reason"], "INTERNAL: verification failed");
  EXPECT_TRUE(skipped["summaries"].is_null());
}

TEST(NvbenchJson, AnAppliedAutotuneKeepsTheStateNameButALaunchSweepGetsAxes) {
  v1::RunResult before = Result(v1::COLD, 1 << 20, 6e-6, 100);
  v1::RunResult after = before;
  after.mutable_request()->set_block_size(512);
  after.mutable_request()->set_block_size_source("tuned");
  const Json a = Json::parse(RenderNvbenchJson({before}, {}));
  const Json b = Json::parse(RenderNvbenchJson({after}, {}));
  EXPECT_EQ(a["benchmarks"][0]["axes"], b["benchmarks"][0]["axes"]);
  EXPECT_EQ(a["benchmarks"][0]["states"][0]["name"], b["benchmarks"][0]["states"][0]["name"]);
  const Json both = Json::parse(RenderNvbenchJson({before, after}, {}));
  ASSERT_EQ(both["benchmarks"][0]["axes"].size(), 3u);
  EXPECT_EQ(both["benchmarks"][0]["states"][0]["name"],
            "Device=0 Elements=1048576 BlockSize=256 ItemsPerThread=4");
}

TEST(NvbenchJson, UnknownNoiseIsInfinityNotZero) {
  const Json root = Json::parse(RenderNvbenchJson({Result(v1::COLD, 1000, 1e-3, 1)}, {}));
  const Json& st = root["benchmarks"][0]["states"][0];
  EXPECT_TRUE(std::isinf(Value(*FindSummary(st, "nv/cold/time/gpu/stdev/relative"))));
}

// The time summaries' descriptions name the clock that timed the samples (MeasurementSummary.timer;
// a server older than the field: by backend).
TEST(NvbenchJson, DescriptionsNameTheTimer) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "(measured with CUDA events)"},
      {"cuda_event", "(measured with CUDA events)"},
      {"cupti_activity", "(measured from CUPTI activity records)"},
      {"gpu_time_duration", "(measured by the gpu__time_duration counter)"},
      {"cpu_clock", "(measured with a host steady clock)"}};
  for (const auto& [timer, words] : cases) {
    v1::RunResult r = Result(v1::COLD, 1 << 20, 6e-6, 4000);
    r.mutable_measurement()->set_timer(timer);
    if (std::string(timer) == "cpu_clock") r.set_backend("cpu");
    const Json root = Json::parse(RenderNvbenchJson({r}, {}));
    const Json* mean = FindSummary(root["benchmarks"][0]["states"][0], "nv/cold/time/gpu/mean");
    ASSERT_NE(mean, nullptr) << timer;
    EXPECT_EQ((*mean)["description"], std::string("Mean isolated kernel execution time ") + words)
        << timer;
  }
}

TEST(NvbenchJson, EmptyResultsAreAValidFile) {
  const Json root = Json::parse(RenderNvbenchJson({}, {}));
  EXPECT_TRUE(root["benchmarks"].empty());
  EXPECT_EQ(root["meta"]["version"]["json"]["string"], "1.0.0");
}

TEST(Histogram, CountsEverySampleOnce) {
  v1::RunResult r = Result(v1::COLD, 1000, 1e-3, 1000);
  for (int i = 0; i < 1000; ++i) r.mutable_samples()->add_seconds(i < 500 ? 1e-3 : 2e-3);
  r.mutable_samples()->add_seconds(1.0);  // one slow outlier, above p99
  r.mutable_samples()->set_count(1001);
  const std::string h = RenderHistogram(r, 10);
  EXPECT_NE(h.find("histogram of 1001 samples"), std::string::npos) << h;
  int64_t total = 0;
  int rows = 0;
  for (absl::string_view line : absl::StrSplit(h, '\n', absl::SkipEmpty())) {
    if (line.find("histogram") != absl::string_view::npos) continue;
    ++rows;
    const size_t hash = line.find('#');
    const absl::string_view head = line.substr(0, hash == absl::string_view::npos ? line.size() : hash);
    const absl::string_view count = absl::StripAsciiWhitespace(head.substr(26));
    int64_t c = 0;
    ASSERT_TRUE(absl::SimpleAtoi(count, &c)) << line;
    total += c;
  }
  EXPECT_EQ(total, 1001);
  EXPECT_EQ(rows, 11);  // 10 bins + the outlier row
  EXPECT_NE(h.find("> "), std::string::npos);
  EXPECT_NE(RenderHistogram(v1::RunResult()).find("no samples"), std::string::npos);
}

TEST(FormatNoise, NeverZeroForOneSample) {
  v1::TimingStatistics t;
  t.set_samples(1);
  EXPECT_EQ(FormatNoise(t), "n/a (1 sample)");
  t.set_samples(3);
  t.set_noise_known(true);
  t.set_relative_noise(0.0123);
  t.set_below_min_samples(true);
  EXPECT_EQ(FormatNoise(t), "1.23% (<min_samples)");
}

}  // namespace
}  // namespace gpubench::client
