// The health monitor's verdicts and evidence from results, without a server: the model's floor
// (hardware vs throttling), failures, unknown GPUs, the history surviving a restart, and
// confirmation re-runs handed out for a candidate change.
#include "server/health/health_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "kernels/catalog.h"

namespace gpubench::health {
namespace {

constexpr char kModel[] = "Simulated GPU (cpu, 20 ms launches)";
constexpr int64_t k16Ki = 16 << 10;

RunSpec Spec() {
  RunSpec s;
  s.kernel = *FindKernel("add_f32");
  s.elements = k16Ki;
  s.cache_mode = CacheMode::kHot;
  s.device_index = 0;
  return s;
}

// A run at `bandwidth` with 1% sample noise over 20 samples.
RunResult Result(double bandwidth, int64_t at, int low_clock_samples = 0) {
  RunResult r;
  r.device.uuid = "CPU-gpu0";
  r.device.name = kModel;
  r.metric = Metric::kBytesPerSecond;
  r.bytes_moved = 12 * k16Ki;
  r.bandwidth_bytes_per_second = bandwidth;
  r.stats.count = 20;
  r.stats.median_seconds = r.bytes_moved / bandwidth;
  r.stats.stddev_seconds = 0.01 * r.stats.median_seconds;
  r.finished_at = absl::FromUnixSeconds(at);
  r.low_clock_samples = low_clock_samples;
  return r;
}

std::unique_ptr<HealthMonitor> Monitor(const std::string& state_dir = "") {
  MonitorOptions o;
  o.state_dir = state_dir;
  absl::StatusOr<std::unique_ptr<HealthMonitor>> m =
      HealthMonitor::Create(o, {{"CPU-gpu0", kModel}, {"CPU-gpu1", kModel}});
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

const double kFloor = 0.9 * 12 * k16Ki / 0.020;

TEST(HealthMonitorTest, NoResultsIsUnknown) {
  auto m = Monitor();
  const std::vector<GpuHealth> h = m->Health();
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].verdict, Verdict::kUnknown);
  EXPECT_NE(h[0].summary.find("no scheduled health results"), std::string::npos);
}

TEST(HealthMonitorTest, AtTheModelsSpeedPasses) {
  auto m = Monitor();
  m->Observe(Spec(), Result(12 * k16Ki / 0.020, 100), false);
  const GpuHealth g = m->Health()[0];
  EXPECT_EQ(g.verdict, Verdict::kPass) << g.summary;
  ASSERT_FALSE(g.evidence.empty());
  EXPECT_EQ(g.evidence[0].expectation_kind, "model_floor");
  EXPECT_DOUBLE_EQ(*g.evidence[0].expectation, kFloor);
  EXPECT_NE(g.evidence[0].expectation_source.find("derived"), std::string::npos);
  EXPECT_EQ(m->Health()[1].verdict, Verdict::kUnknown);  // the other GPU has no results
}

TEST(HealthMonitorTest, BelowTheFloorAtFullClockIsHardware) {
  auto m = Monitor();
  m->Observe(Spec(), Result(12 * k16Ki / 0.030, 100), false);  // 30 ms launches: 1.5x slower
  const GpuHealth g = m->Health()[0];
  EXPECT_EQ(g.verdict, Verdict::kDegraded) << g.summary;
  EXPECT_EQ(g.evidence[0].cause, "hardware");
  EXPECT_LT(g.evidence[0].value_high, kFloor);
  EXPECT_NE(g.summary.find("below the model's floor"), std::string::npos) << g.summary;
}

TEST(HealthMonitorTest, BelowTheFloorWhileClockedDownIsThrottling) {
  auto m = Monitor();
  m->Observe(Spec(), Result(12 * k16Ki / 0.030, 100, /*low_clock_samples=*/5), false);
  const GpuHealth g = m->Health()[0];
  EXPECT_EQ(g.verdict, Verdict::kDegraded);
  EXPECT_EQ(g.evidence[0].cause, "throttling");
}

TEST(HealthMonitorTest, JustUnderTheFloorWithinTheIntervalIsNoDifference) {
  auto m = Monitor();
  RunResult r = Result(0.995 * kFloor, 100);
  r.stats.stddev_seconds = 0.05 * r.stats.median_seconds;  // noisy: the interval spans the floor
  m->Observe(Spec(), r, false);
  EXPECT_EQ(m->Health()[0].verdict, Verdict::kPass) << m->Health()[0].summary;
}

TEST(HealthMonitorTest, AFailedRunIsFail) {
  auto m = Monitor();
  m->Observe(Spec(), absl::InternalError("verification failed: c[3] expected 1 got 2"), false);
  const GpuHealth g = m->Health()[0];
  EXPECT_EQ(g.verdict, Verdict::kFail);
  EXPECT_EQ(g.evidence[0].expectation_kind, "verification");
  m->Observe(Spec(), absl::CancelledError("stopping"), false);  // says nothing about the GPU
  EXPECT_EQ(m->Health()[0].verdict, Verdict::kFail);
}

TEST(HealthMonitorTest, ACandidateAsksForConfirmationsThenDeclaresAndSurvivesARestart) {
  const std::string dir = ::testing::TempDir() + "/health_state_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/health_state.json");
  const double level = 12 * k16Ki / 0.020;
  {
    auto m = Monitor(dir);
    for (int i = 0; i < 8; ++i) m->Observe(Spec(), Result(level * (1 + 0.002 * (i % 3)), i), false);
    EXPECT_FALSE(m->NextConfirmation().has_value());
    ASSERT_TRUE(m->EndPass().ok());
  }
  auto m = Monitor(dir);  // a restart: the history is back
  EXPECT_EQ(m->Health()[0].results, 8);
  m->Observe(Spec(), Result(0.95 * level, 100), false);
  int confirmations = 0;
  while (std::optional<RunSpec> again = m->NextConfirmation()) {
    EXPECT_EQ(again->kernel->name, "add_f32");
    m->Observe(*again, Result(0.95 * level * (1 + 0.001 * confirmations), 101 + confirmations),
               true);
    ++confirmations;
  }
  EXPECT_EQ(confirmations, 3);
  const GpuHealth g = m->Health()[0];
  EXPECT_EQ(g.verdict, Verdict::kDegraded) << g.summary;
  EXPECT_EQ(g.change_points, 1);
  const Evidence* history = nullptr;
  for (const Evidence& e : g.evidence) {
    if (e.expectation_kind == "own_history") history = &e;
  }
  ASSERT_NE(history, nullptr);
  EXPECT_EQ(history->verdict, Verdict::kDegraded);
  EXPECT_EQ(history->since, absl::FromUnixSeconds(100));
  ASSERT_TRUE(m->EndPass().ok());
  EXPECT_EQ(Monitor(dir)->Health()[0].change_points, 1);
}

// Every shipped bound says where it came from; the H200's are measured, one per item of the
// shipped health plan, and the derived ones name the H200 row they scale.
TEST(HealthMonitorTest, ShippedExpectationsSayWhereTheyCameFrom) {
  using ::testing::HasSubstr;
  int h200 = 0, derived = 0;
  for (const Expectation& x : ShippedExpectations()) {
    const bool measured = absl::StartsWith(x.source, "measured: ");
    EXPECT_TRUE(measured || absl::StartsWith(x.source, "derived: ")) << x.source;
    EXPECT_GT(x.bound, 0) << x.source;
    if (x.model == "NVIDIA H200") {
      ++h200;
      EXPECT_TRUE(measured) << x.source;
      EXPECT_THAT(x.source, HasSubstr("bench/results/2026-12-04-h200.md"));
    } else if (absl::StartsWith(x.source, "derived: ") && absl::StartsWith(x.model, "NVIDIA")) {
      ++derived;
      EXPECT_THAT(x.source, HasSubstr("the H200's"));
    }
  }
  EXPECT_EQ(h200, 12);        // bench/suites/health.json's items
  EXPECT_GE(derived, 4 * 7);  // four models x HBM, GEMM and PCIe rows
}

TEST(HealthMonitorTest, ExpectationsFileOverridesAndAdds) {
  absl::StatusOr<std::vector<Expectation>> x = ParseExpectations(R"json({"expectations": [
      {"model": "Simulated GPU (cpu, 20 ms launches)", "kernel": "add_f32", "elements": "16384",
       "cacheMode": "HOT", "metric": "bytes_per_second", "bound": 1e9, "source": "site test"},
      {"model": "NVIDIA B200", "kernel": "copy_d2d", "elements": 268435456, "bound": 6e12}]})json");
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->size(), ShippedExpectations().size() + 1);
  MonitorOptions o;
  o.expectations = *x;
  auto m = *HealthMonitor::Create(o, {{"CPU-gpu0", kModel}});
  m->Observe(Spec(), Result(12 * k16Ki / 0.020, 100), false);
  EXPECT_EQ(m->Health()[0].verdict, Verdict::kDegraded);  // the file's 1 GB/s floor
  EXPECT_EQ(m->Health()[0].evidence[0].expectation_source, "site test");
  EXPECT_FALSE(ParseExpectations(R"({"expectations": [{"model": "x"}]})").ok());
  EXPECT_FALSE(ParseExpectations("[1, 2]").ok());
}

}  // namespace
}  // namespace gpubench::health
