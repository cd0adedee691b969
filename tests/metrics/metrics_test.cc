#include "server/metrics/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "absl/time/clock.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Scrape(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

RunResult Result(const RunSpec& spec, double median) {
  RunResult r;
  r.spec = spec;
  r.stats.median_seconds = median;
  r.bandwidth_bytes_per_second = 1e12;
  r.percent_of_peak = 50;
  r.verification = Verification{.passed = true};
  r.finished_at = absl::Now();
  return r;
}

class MetricsTest : public ::testing::Test {
 protected:
  RunSpec Spec(int64_t n) {
    RunSpec s;
    s.kernel = *FindKernel("add_f32x4");
    s.elements = n;
    return s;
  }
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
};

TEST_F(MetricsTest, ExportsResultsCountersAndInfo) {
  Metrics m(registry_, {.max_result_series = 10, .node_name = "node-a"});
  DeviceInfo d;
  d.index = 0;
  d.uuid = "GPU-1234";
  d.name = "NVIDIA H200";
  d.backend = "cuda";
  d.nvml_index = 3;
  d.pci_bus_id = "00000000:19:00.0";
  d.kernel_driver_version = "580.159.04";
  m.SetInfo({d}, "cuda");
  m.OnRunFinished(Spec(1024), Result(Spec(1024), 2e-6), absl::Milliseconds(30));
  m.OnRunFinished(Spec(1024), absl::DeadlineExceededError("late"), absl::Seconds(1));
  RunResult bad = Result(Spec(2048), 3e-6);
  bad.verification->passed = false;
  m.OnRunFinished(Spec(2048), bad, absl::Milliseconds(20));
  m.OnQueueDepth(0, 3);
  m.OnRpc("/gpubench.v1.Benchmark/RunBenchmark", absl::StatusCode::kOk, 0.01);
  const std::string text = Scrape(*registry_);
  // Ours and dcgm-exporter's labels (UUID, gpu = NVML index, pci_bus_id, modelName, Hostname).
  EXPECT_THAT(text, HasSubstr("gpubench_run_median_seconds{Hostname=\"node-a\",UUID=\"GPU-1234\","
                              "cache_mode=\"cold\",device=\"0\",dtype=\"f32\",elements=\"1024\","
                              "family=\"elementwise_add\",gpu=\"3\",gpu_model=\"NVIDIA H200\",gpu_uuid=\"GPU-1234\","
                              "kernel=\"add_f32x4\",modelName=\"NVIDIA H200\","
                              "pci_bus_id=\"00000000:19:00.0\"} 2e-06"));
  EXPECT_THAT(text, HasSubstr("gpubench_run_peak_bandwidth_ratio{"));
  EXPECT_THAT(text, HasSubstr("outcome=\"DEADLINE_EXCEEDED\"} 1"));
  EXPECT_THAT(text, HasSubstr("outcome=\"verification_failed\"} 1"));
  EXPECT_THAT(text, HasSubstr("elements=\"2048\",family=\"elementwise_add\",gpu=\"3\","
                              "gpu_model=\"NVIDIA H200\","
                              "gpu_uuid=\"GPU-1234\",kernel=\"add_f32x4\",modelName=\"NVIDIA H200\","
                              "pci_bus_id=\"00000000:19:00.0\"} 0"));
  EXPECT_THAT(text, HasSubstr("gpubench_queue_depth{device=\"0\"} 3"));
  EXPECT_THAT(text, HasSubstr("gpubench_device_info{Hostname=\"node-a\",UUID=\"GPU-1234\","
                              "backend=\"cuda\""));
  EXPECT_THAT(text, HasSubstr("kernel_driver=\"580.159.04\""));
  EXPECT_THAT(text, HasSubstr("gpubench_build_info{"));
  EXPECT_THAT(text, HasSubstr("gpubench_grpc_request_duration_seconds_bucket{"));
  EXPECT_THAT(text, HasSubstr("gpubench_grpc_requests_total{code=\"OK\",method="));
  EXPECT_THAT(text, HasSubstr("# HELP gpubench_runs_total"));
}

TEST_F(MetricsTest, EachFamilyExportsItsPrimaryMetricWithTheUnitInTheName) {
  Metrics m(registry_, {});
  // A latency run: seconds per load, no bandwidth (its bytes are 0), no peak.
  RunSpec chase;
  chase.kernel = *FindKernel("latency_chase");
  chase.elements = 1 << 20;
  RunResult latency = Result(chase, 4e-3);
  latency.bandwidth_bytes_per_second = 0;
  latency.percent_of_peak.reset();
  latency.metric = Metric::kSecondsPerOperation;
  latency.operation_unit = "load";
  latency.seconds_per_operation = 6.1e-8;
  m.OnRunFinished(chase, latency, absl::Milliseconds(30));
  // A FLOP run: FLOP/s and the fraction of the FLOP peak, not of the bandwidth peak.
  RunResult flop = Result(Spec(4096), 1e-3);
  flop.bandwidth_bytes_per_second = 2e11;
  flop.metric = Metric::kOperationsPerSecond;
  flop.operation_unit = "FLOP";
  flop.operations_per_second = 9e14;
  flop.percent_of_peak = 90;
  m.OnRunFinished(Spec(4096), flop, absl::Milliseconds(30));
  const std::string text = Scrape(*registry_);
  EXPECT_THAT(text, HasSubstr("gpubench_run_seconds_per_load{cache_mode=\"cold\",device=\"0\","
                              "dtype=\"u64\",elements=\"1048576\",family=\"latency\","));
  EXPECT_THAT(text, HasSubstr("kernel=\"latency_chase\""));
  EXPECT_THAT(text, Not(HasSubstr("gpubench_run_bandwidth_bytes_per_second{cache_mode=\"cold\","
                                  "device=\"0\",dtype=\"u64\"")));
  EXPECT_THAT(text, HasSubstr("gpubench_run_flops_per_second{"));
  EXPECT_THAT(text, HasSubstr("} 900000000000000"));
  EXPECT_THAT(text, HasSubstr("gpubench_run_peak_flops_ratio{"));
  EXPECT_THAT(text, Not(HasSubstr("gpubench_run_peak_bandwidth_ratio{")));
}

TEST_F(MetricsTest, BusyGpuRunsAreCountedAsSkippedNotFailed) {
  Metrics m(registry_, {.node_name = "node-a"});
  DeviceInfo d;
  d.uuid = "GPU-1234";
  m.SetInfo({d}, "cuda");
  absl::Status busy = absl::FailedPreconditionError("GPU GPU-1234 (device 0) is in use");
  busy.SetPayload(kGpuBusyPayload, absl::Cord("GPU-1234"));
  RunSpec scheduled = Spec(1024);
  scheduled.scheduled = true;
  m.OnRunFinished(scheduled, busy, absl::Milliseconds(1));
  m.OnRunFinished(scheduled, busy, absl::Milliseconds(1));
  m.OnRunFinished(Spec(1024), busy, absl::Milliseconds(1));
  const std::string text = Scrape(*registry_);
  EXPECT_THAT(text, HasSubstr("gpubench_runs_skipped_total{Hostname=\"node-a\",UUID=\"GPU-1234\","));
  EXPECT_THAT(text, HasSubstr("reason=\"gpu_busy\",source=\"schedule\"} 2"));
  EXPECT_THAT(text, HasSubstr("reason=\"gpu_busy\",source=\"rpc\"} 1"));
  EXPECT_THAT(text, Not(HasSubstr("outcome=\"FAILED_PRECONDITION\"")));
}

TEST_F(MetricsTest, ResultSeriesAreCappedByAnLru) {
  Metrics m(registry_, {.max_result_series = 3});
  for (int64_t n = 1; n <= 10; ++n) m.OnRunFinished(Spec(n), Result(Spec(n), 1e-6), absl::Seconds(1));
  EXPECT_EQ(m.result_series(), 3);
  // Touching the oldest survivor keeps it; the next new series evicts another one.
  m.OnRunFinished(Spec(8), Result(Spec(8), 1e-6), absl::Seconds(1));
  m.OnRunFinished(Spec(11), Result(Spec(11), 1e-6), absl::Seconds(1));
  const std::string text = Scrape(*registry_);
  EXPECT_THAT(text, HasSubstr("elements=\"8\""));
  EXPECT_THAT(text, HasSubstr("elements=\"11\""));
  EXPECT_THAT(text, Not(HasSubstr("elements=\"9\"")));
  EXPECT_THAT(text, Not(HasSubstr("elements=\"1\",")));
  EXPECT_THAT(text, HasSubstr("gpubench_metrics_series_evicted_total 8"));
}

}  // namespace
}  // namespace gpubench
