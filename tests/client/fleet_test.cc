// The fleet report's logic without servers: identity keys (node + GPU UUID + measurement, never the
// address), per-model summaries and outliers, regressions (slower, failed, missing) and the JSON.
#include "client/fleet.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpubench::client {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

v1::FleetRow Row(const std::string& node, const std::string& model, double bandwidth,
                 int block_size = 256, const std::string& target = "") {
  v1::FleetRow r;
  r.set_node_name(node);
  r.set_gpu_uuid("GPU-" + node);
  r.set_gpu_model(model);
  r.set_target(target.empty() ? node + ":50051" : target);
  r.set_kernel("add_f32");
  r.set_dtype("f32");
  r.set_elements(1 << 20);
  r.set_cache_mode(v1::COLD);
  r.set_block_size(block_size);
  r.set_items_per_thread(1);
  r.set_bandwidth_bytes_per_second(bandwidth);
  r.set_verified(true);
  return r;
}

// One target per row's node (rows of the same node go to the same target).
v1::FleetReport Report(const std::vector<v1::FleetRow>& rows) {
  v1::FleetReport report;
  for (const v1::FleetRow& r : rows) {
    v1::FleetTarget* t = nullptr;
    for (v1::FleetTarget& existing : *report.mutable_targets()) {
      if (existing.node_name() == r.node_name()) t = &existing;
    }
    if (t == nullptr) {
      t = report.add_targets();
      t->set_target(r.target());
      t->set_node_name(r.node_name());
      t->set_ok(true);
      t->set_attempts(1);
    }
    *t->add_rows() = r;
  }
  return report;
}

TEST(FleetSummary, OutliersAreJudgedAgainstTheirOwnModel) {
  // Model B is half as fast as model A: no B GPU is an outlier of the fleet, one A GPU is slow.
  v1::FleetReport report =
      Report({Row("a1", "A", 100), Row("a2", "A", 101), Row("a3", "A", 60), Row("a4", "A", 99),
              Row("b1", "B", 50), Row("b2", "B", 51), Row("b3", "B", 49)});
  Summarize(0.10, &report);
  ASSERT_THAT(report.summaries(), SizeIs(2));
  for (const v1::FleetModelSummary& s : report.summaries()) {
    if (s.gpu_model() == "A") {
      EXPECT_EQ(s.gpus(), 4);
      EXPECT_DOUBLE_EQ(s.median_bandwidth_bytes_per_second(), 99.5);
      EXPECT_DOUBLE_EQ(s.min_bandwidth_bytes_per_second(), 60);
      EXPECT_DOUBLE_EQ(s.max_bandwidth_bytes_per_second(), 101);
      EXPECT_EQ(s.outliers(), 1);
    } else {
      EXPECT_EQ(s.gpus(), 3);
      EXPECT_DOUBLE_EQ(s.median_bandwidth_bytes_per_second(), 50);
      EXPECT_EQ(s.outliers(), 0);
    }
  }
  ASSERT_THAT(report.outliers(), SizeIs(1));
  EXPECT_EQ(report.outliers(0).node_name(), "a3");
  EXPECT_EQ(report.outliers(0).gpu_model(), "A");
  EXPECT_NEAR(report.outliers(0).fraction_under_median(), 1 - 60 / 99.5, 1e-12);
  EXPECT_EQ(report.targets_total(), 7);
  EXPECT_EQ(report.targets_completed(), 7);
}

TEST(FleetSummary, EveryMeasurementIsItsOwnGroupAndFailuresAreListed) {
  // Two block sizes of one kernel are two measurements: neither overwrites the other.
  v1::FleetReport report = Report({Row("n1", "A", 100, 128), Row("n1", "A", 50, 512),
                                   Row("n2", "A", 100, 128), Row("n2", "A", 50, 512)});
  v1::FleetTarget* dead = report.add_targets();
  dead->set_target("10.0.0.9:50051");
  dead->set_error("code 14: connection refused");
  dead->set_attempts(3);
  Summarize(0.10, &report);
  ASSERT_THAT(report.summaries(), SizeIs(2));
  EXPECT_EQ(report.summaries(0).block_size(), 128);
  EXPECT_EQ(report.summaries(0).gpus(), 2);
  EXPECT_EQ(report.summaries(1).block_size(), 512);
  EXPECT_THAT(report.outliers(), SizeIs(0));
  ASSERT_THAT(report.failures(), SizeIs(1));
  EXPECT_EQ(report.failures(0).target(), "10.0.0.9:50051");
  EXPECT_EQ(report.targets_completed(), 2);
  EXPECT_EQ(report.targets_total(), 3);
}

TEST(FleetBaseline, NewAddressesOfTheSameHardwareAreNoRegression) {
  const v1::FleetReport baseline = Report(
      {Row("n1", "A", 100, 256, "10.0.0.1:50051"), Row("n2", "A", 100, 256, "10.0.0.2:50051")});
  // Pods recreated: new addresses, same nodes and GPUs, within the threshold.
  v1::FleetReport now = Report(
      {Row("n1", "A", 97, 256, "10.0.1.7:50051"), Row("n2", "A", 120, 256, "10.0.1.3:50051")});
  CompareWithBaseline(baseline, 0.05, &now);
  EXPECT_THAT(now.regressions(), SizeIs(0));
}

TEST(FleetBaseline, SlowerFailedAndMissingAreRegressions) {
  v1::FleetReport baseline = Report({Row("n1", "A", 100, 128), Row("n1", "A", 100, 512),
                                     Row("n2", "A", 100), Row("n3", "B", 50), Row("n4", "B", 50)});
  // n1 block 512 is 30% slower (block 128 unchanged); n2 answered ListDevices and then failed;
  // n3 never answered at its old address; n4 is gone (no target at all).
  v1::FleetReport now = Report({Row("n1", "A", 100, 128), Row("n1", "A", 70, 512)});
  v1::FleetTarget* n2 = now.add_targets();
  n2->set_target("10.9.9.2:50051");  // a new address: matched by node name
  n2->set_node_name("n2");
  n2->set_error("code 4: deadline exceeded");
  v1::FleetTarget* n3 = now.add_targets();
  n3->set_target("n3:50051");  // unnamed (never answered): matched by address
  n3->set_error("code 14: connection refused");
  CompareWithBaseline(baseline, 0.05, &now);

  std::map<v1::FleetRegression::Kind, std::vector<v1::FleetRegression>> by_kind;
  for (const v1::FleetRegression& g : now.regressions()) by_kind[g.kind()].push_back(g);
  ASSERT_THAT(by_kind[v1::FleetRegression::SLOWER], SizeIs(1));
  const v1::FleetRegression& slower = by_kind[v1::FleetRegression::SLOWER][0];
  EXPECT_EQ(slower.node_name(), "n1");
  EXPECT_EQ(slower.block_size(), 512);
  EXPECT_NEAR(slower.change(), -0.30, 1e-12);
  EXPECT_DOUBLE_EQ(slower.baseline_bandwidth_bytes_per_second(), 100);
  EXPECT_THAT(slower.description(), HasSubstr("n1 GPU-n1 (A)"));
  EXPECT_THAT(slower.description(), HasSubstr("block 512x1"));

  ASSERT_THAT(by_kind[v1::FleetRegression::FAILED], SizeIs(2));
  EXPECT_EQ(by_kind[v1::FleetRegression::FAILED][0].node_name(), "n2");
  EXPECT_EQ(by_kind[v1::FleetRegression::FAILED][0].target(), "10.9.9.2:50051");
  EXPECT_EQ(by_kind[v1::FleetRegression::FAILED][1].target(), "n3:50051");

  // The rows of n2, n3 and n4 are all missing now, each named by node and GPU.
  std::set<std::string> missing;
  for (const v1::FleetRegression& g : by_kind[v1::FleetRegression::MISSING]) {
    missing.insert(g.node_name());
    EXPECT_EQ(g.gpu_uuid(), "GPU-" + g.node_name());
    EXPECT_THAT(g.description(), HasSubstr("MISSING " + g.node_name()));
  }
  EXPECT_EQ(missing, (std::set<std::string>{"n2", "n3", "n4"}));
}

TEST(FleetBaseline, AStaleAddressOfANodeThatCompletedElsewhereIsNoRegression) {
  const v1::FleetReport baseline = Report({Row("n1", "A", 100, 256, "10.0.0.1:50051")});
  v1::FleetReport now = Report({Row("n1", "A", 100, 256, "10.0.1.1:50051")});
  v1::FleetTarget* stale = now.add_targets();  // the old address, still in DNS, nobody answers
  stale->set_target("10.0.0.1:50051");
  stale->set_error("code 14: connection refused");
  CompareWithBaseline(baseline, 0.05, &now);
  EXPECT_THAT(now.regressions(), SizeIs(0));
  Summarize(0.10, &now);
  EXPECT_THAT(now.failures(), SizeIs(1));  // still a failed target of this run (exit 1)
}

TEST(FleetBaseline, TheSameGpuOnAnotherNodeOrWithAnotherLaunchIsNotTheSameRow) {
  const v1::FleetReport baseline = Report({Row("n1", "A", 100, 256)});
  v1::FleetRow moved = Row("n1", "A", 10, 256);
  moved.set_node_name("n1-renamed");
  v1::FleetRow relaunched = Row("n1", "A", 10, 128);
  v1::FleetReport now = Report({moved, relaunched});
  CompareWithBaseline(baseline, 0.05, &now);
  ASSERT_THAT(now.regressions(), SizeIs(1));  // no SLOWER: nothing matches; the old row is missing
  EXPECT_EQ(now.regressions(0).kind(), v1::FleetRegression::MISSING);
}

TEST(FleetSummary, OutlierThresholdIsStrictAndLoneOrIdleGroupsHaveNone) {
  // Median 100 with a 10% threshold: 91 is inside, 89 is an outlier.
  v1::FleetReport report =
      Report({Row("a1", "A", 100), Row("a2", "A", 91), Row("a3", "A", 89), Row("a4", "A", 100),
              Row("a5", "A", 101), Row("b1", "B", 10), Row("c1", "C", 0), Row("c2", "C", 0)});
  Summarize(0.10, &report);
  ASSERT_THAT(report.outliers(), SizeIs(1));
  EXPECT_EQ(report.outliers(0).node_name(), "a3");
  EXPECT_DOUBLE_EQ(report.outliers(0).model_median_bandwidth_bytes_per_second(), 100);
  for (const v1::FleetModelSummary& s : report.summaries()) {
    if (s.gpu_model() == "B") {
      EXPECT_EQ(s.outliers(), 0) << "a model's only GPU is its median";
    }
    if (s.gpu_model() == "C") {
      EXPECT_EQ(s.outliers(), 0) << "no bandwidth, no ratio";
    }
  }
  // The outlier of this run is not a regression (there is no baseline) but is in the table.
  const std::string table = RenderFleet(report, "table");
  EXPECT_THAT(table, HasSubstr("OUTLIER a3 GPU-a3 (A)"));
  EXPECT_THAT(table, HasSubstr("11.0% under the model's median"));
  EXPECT_THAT(table, HasSubstr("1 outlier(s)"));
  EXPECT_THAT(table, ::testing::Not(HasSubstr("regression(s)")));
}

TEST(FleetBaseline, SlowerNeedsMoreThanTheThresholdAndFasterIsFine) {
  const v1::FleetReport baseline = Report({Row("n1", "A", 100, 128), Row("n1", "A", 100, 256),
                                           Row("n1", "A", 100, 512), Row("n2", "A", 0)});
  // 4% slower (inside 5%), 6% slower, 50% faster; n2's baseline had no bandwidth (nothing to
  // compare a ratio with).
  v1::FleetReport now = Report({Row("n1", "A", 96, 128), Row("n1", "A", 94, 256),
                                Row("n1", "A", 150, 512), Row("n2", "A", 1)});
  CompareWithBaseline(baseline, 0.05, &now);
  ASSERT_THAT(now.regressions(), SizeIs(1));
  EXPECT_EQ(now.regressions(0).kind(), v1::FleetRegression::SLOWER);
  EXPECT_EQ(now.regressions(0).block_size(), 256);
  EXPECT_DOUBLE_EQ(now.regression_threshold(), 0.05);
  // A looser threshold keeps the 6% drop too.
  CompareWithBaseline(baseline, 0.10, &now);
  EXPECT_THAT(now.regressions(), SizeIs(0));
}

TEST(FleetBaseline, OnlyNodesThatCompletedInTheBaselineCanRegressByFailing) {
  // n1 failed in the baseline and fails now; n9 is new and fails: failures of this run (exit 1),
  // not regressions (exit 5). n2 completed in the baseline and fails now: FAILED and MISSING.
  v1::FleetReport baseline = Report({Row("n2", "A", 100)});
  v1::FleetTarget* old_failure = baseline.add_targets();
  old_failure->set_target("n1:50051");
  old_failure->set_node_name("n1");
  old_failure->set_error("code 14: connection refused");
  v1::FleetReport now;
  for (const char* node : {"n1", "n9", "n2"}) {
    v1::FleetTarget* t = now.add_targets();
    t->set_target(std::string(node) + ":50051");
    t->set_node_name(node);
    t->set_error("code 4: deadline exceeded");
    t->set_attempts(3);
  }
  CompareWithBaseline(baseline, 0.05, &now);
  ASSERT_THAT(now.regressions(), SizeIs(2));
  EXPECT_EQ(now.regressions(0).kind(), v1::FleetRegression::FAILED);
  EXPECT_EQ(now.regressions(0).node_name(), "n2");
  EXPECT_THAT(now.regressions(0).description(),
              HasSubstr("completed in the baseline (at n2:50051), failed now: code 4"));
  EXPECT_EQ(now.regressions(1).kind(), v1::FleetRegression::MISSING);
  EXPECT_EQ(now.regressions(1).node_name(), "n2");
  Summarize(0.10, &now);
  EXPECT_THAT(now.failures(), SizeIs(3));
  EXPECT_EQ(now.targets_completed(), 0);
}

TEST(FleetRender, TableAndCsvCarryTheSameRowsFailuresAndRegressions) {
  v1::FleetReport baseline = Report({Row("n1", "A", 100), Row("n2", "A", 100)});
  v1::FleetRow unverified = Row("n1", "A", 60);
  unverified.set_verified(false);
  unverified.set_item_wall_seconds(1.5);
  v1::FleetReport now = Report({unverified});
  v1::FleetTarget* dead = now.add_targets();
  dead->set_target("n2:50051");
  dead->set_node_name("n2");
  dead->set_error("code 14: \"connection refused\"");
  dead->set_attempts(3);
  Summarize(0.10, &now);
  now.set_baseline("base.json");
  CompareWithBaseline(baseline, 0.05, &now);

  const std::string table = RenderFleet(now, "table");
  EXPECT_THAT(table, HasSubstr(" FAIL     1.500 s\n"));  // the unverified row says so, and its time
  EXPECT_THAT(table, HasSubstr("1 of 2 targets completed"));
  EXPECT_THAT(table, HasSubstr("FAILED n2:50051 (node n2) after 3 attempt(s): code 14"));
  EXPECT_THAT(table, HasSubstr("3 regression(s) against base.json (more than 5% slower"));
  EXPECT_THAT(table, HasSubstr("  SLOWER n1 GPU-n1 (A)"));
  EXPECT_THAT(table, HasSubstr("  FAILED n2 at n2:50051"));
  EXPECT_THAT(table, HasSubstr("  MISSING n2 GPU-n2 (A)"));

  const std::string csv = RenderFleet(now, "csv");
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    lines.emplace_back(line);
  }
  ASSERT_THAT(lines, SizeIs(3));
  const auto fields = [](const std::string& line) {
    return std::count(line.begin(), line.end(), ',') + 1;
  };
  const auto columns = fields(lines[0]);
  EXPECT_GE(columns, 16);
  EXPECT_EQ(fields(lines[1]), columns);  // the row, error empty
  EXPECT_THAT(lines[1], HasSubstr(",FAIL,"));
  EXPECT_EQ(fields(lines[2]), columns);  // the failed target, its error (quotes made safe)
  EXPECT_THAT(lines[2], ::testing::StartsWith("n2,,,n2:50051,"));
  EXPECT_THAT(lines[2], HasSubstr(",\"code 14: 'connection refused'\""));
}

TEST(FleetJson, TheWholeReportRoundTripsInProtobufsJsonMapping) {
  v1::FleetReport baseline = Report({Row("n1", "A", 100), Row("n2", "A", 100)});
  v1::FleetReport report = Report({Row("n1", "A", 100), Row("n2", "A", 50)});
  Summarize(0.10, &report);
  report.set_baseline("base.json");
  CompareWithBaseline(baseline, 0.05, &report);
  const std::string json = RenderFleet(report, "json");
  EXPECT_THAT(json, HasSubstr("\"gpuUuid\": \"GPU-n2\""));
  EXPECT_THAT(json, HasSubstr("\"kind\": \"SLOWER\""));
  EXPECT_THAT(json, HasSubstr("\"outliers\": ["));
  EXPECT_THAT(json, HasSubstr("\"elements\": \"1048576\""));  // int64 as a string, as elsewhere
  absl::StatusOr<v1::FleetReport> parsed = ParseFleetReport(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*parsed, report));

  const std::string table = RenderFleet(report, "table");
  EXPECT_THAT(table, HasSubstr("OUTLIER n2 GPU-n2 (A)"));
  EXPECT_THAT(table, HasSubstr("1 regression(s) against base.json"));
  EXPECT_THAT(table, HasSubstr("2 of 2 targets completed"));
  const std::string csv = RenderFleet(report, "csv");
  EXPECT_THAT(csv, HasSubstr("n2,GPU-n2,\"A\",n2:50051,"));
}

// A row of another family: its primary metric and value (bandwidth stays 0 for latency).
v1::FleetRow MetricRow(const std::string& node, const std::string& metric, const std::string& unit,
                       double value) {
  v1::FleetRow r = Row(node, "A", 0);
  r.set_kernel(metric == "seconds_per_operation" ? "latency_chase" : "gemm_f16");
  r.set_metric(metric);
  r.set_operation_unit(unit);
  r.set_value(value);
  return r;
}

TEST(FleetMetrics, ForLatencyTheOutlierIsTheSlowGpuAboveTheMedian) {
  // Seconds per load: lower is better. n3 is 16% over the median (an outlier); n4 is 17% under
  // it (faster: not an outlier).
  v1::FleetReport report = Report({MetricRow("n1", "seconds_per_operation", "load", 600e-9),
                                   MetricRow("n2", "seconds_per_operation", "load", 610e-9),
                                   MetricRow("n3", "seconds_per_operation", "load", 700e-9),
                                   MetricRow("n4", "seconds_per_operation", "load", 500e-9)});
  Summarize(0.10, &report);
  ASSERT_THAT(report.summaries(), SizeIs(1));
  EXPECT_EQ(report.summaries(0).metric(), "seconds_per_operation");
  EXPECT_DOUBLE_EQ(report.summaries(0).median_value(), 605e-9);
  ASSERT_THAT(report.outliers(), SizeIs(1));
  EXPECT_EQ(report.outliers(0).node_name(), "n3");
  EXPECT_NEAR(report.outliers(0).fraction_under_median(), 700.0 / 605 - 1, 1e-9);
  const std::string table = RenderFleet(report, "table");
  EXPECT_THAT(table, HasSubstr("ns/load"));
  EXPECT_THAT(table, HasSubstr("over the model's median"));
}

TEST(FleetMetrics, ARateFamilyIsJudgedByItsValueNotItsBandwidth) {
  // GEMM rows: FLOP/s is the value; a 30% lower FLOP/s is an outlier whatever the bandwidth.
  v1::FleetReport report = Report({MetricRow("n1", "operations_per_second", "FLOP", 900e12),
                                   MetricRow("n2", "operations_per_second", "FLOP", 910e12),
                                   MetricRow("n3", "operations_per_second", "FLOP", 630e12)});
  Summarize(0.10, &report);
  ASSERT_THAT(report.outliers(), SizeIs(1));
  EXPECT_EQ(report.outliers(0).node_name(), "n3");
  EXPECT_THAT(RenderFleet(report, "table"), HasSubstr("TFLOP/s"));
}

TEST(FleetMetrics, AHigherLatencyIsARegressionAndALowerOneIsNot) {
  const v1::FleetReport baseline =
      Report({MetricRow("n1", "seconds_per_operation", "load", 600e-9),
              MetricRow("n2", "seconds_per_operation", "load", 600e-9)});
  v1::FleetReport now = Report({MetricRow("n1", "seconds_per_operation", "load", 660e-9),
                                MetricRow("n2", "seconds_per_operation", "load", 500e-9)});
  CompareWithBaseline(baseline, 0.05, &now);
  ASSERT_THAT(now.regressions(), SizeIs(1));
  const v1::FleetRegression& g = now.regressions(0);
  EXPECT_EQ(g.kind(), v1::FleetRegression::SLOWER);
  EXPECT_EQ(g.node_name(), "n1");
  EXPECT_NEAR(g.change(), -0.10, 1e-9);
  EXPECT_DOUBLE_EQ(g.baseline_value(), 600e-9);
  EXPECT_THAT(g.description(), HasSubstr("10.0% worse"));
}

// Confidence: a row's 95% interval (from its run's samples) must lie wholly past the threshold
// for an outlier or a regression; a noisy row whose point value is past it is not declared.
v1::FleetRow WithInterval(v1::FleetRow r, double low, double high) {
  r.set_value_low(low);
  r.set_value_high(high);
  return r;
}

TEST(FleetConfidence, AnOutlierNeedsItsWholeIntervalPastTheThreshold) {
  // Median 100; n3 and n4 both 15% under it (threshold 10%): n3's interval [84, 87] excludes
  // 90, n4's [80, 95] does not.
  v1::FleetReport report = Report(
      {MetricRow("n1", "bytes_per_second", "", 100), MetricRow("n2", "bytes_per_second", "", 100),
       MetricRow("n5", "bytes_per_second", "", 101),
       WithInterval(MetricRow("n3", "bytes_per_second", "", 85), 84, 87),
       WithInterval(MetricRow("n4", "bytes_per_second", "", 85), 80, 95)});
  Summarize(0.10, &report);
  ASSERT_THAT(report.outliers(), SizeIs(1));
  EXPECT_EQ(report.outliers(0).node_name(), "n3");
  EXPECT_DOUBLE_EQ(report.outliers(0).value_low(), 84);
  EXPECT_DOUBLE_EQ(report.outliers(0).value_high(), 87);
}

TEST(FleetConfidence, ARegressionNeedsTheChangesIntervalPastTheThreshold) {
  // Both 8% slower than a baseline of 100 (threshold 5%): n1's change interval from [91, 93]
  // against [99, 101] is -9.9% .. -6.1% (declared); n2's from [88, 97] is -12.9% .. -2.0% (not).
  const v1::FleetReport baseline =
      Report({WithInterval(MetricRow("n1", "bytes_per_second", "", 100), 99, 101),
              WithInterval(MetricRow("n2", "bytes_per_second", "", 100), 99, 101)});
  v1::FleetReport now = Report({WithInterval(MetricRow("n1", "bytes_per_second", "", 92), 91, 93),
                                WithInterval(MetricRow("n2", "bytes_per_second", "", 92), 88, 97)});
  CompareWithBaseline(baseline, 0.05, &now);
  ASSERT_THAT(now.regressions(), SizeIs(1));
  const v1::FleetRegression& g = now.regressions(0);
  EXPECT_EQ(g.node_name(), "n1");
  EXPECT_NEAR(g.change_low(), 91.0 / 101 - 1, 1e-12);
  EXPECT_NEAR(g.change_high(), 93.0 / 99 - 1, 1e-12);
  EXPECT_DOUBLE_EQ(g.baseline_value_low(), 99);
  EXPECT_THAT(g.description(), HasSubstr("95% interval 6.1% to 9.9%"));
  // Latency (lower is better): 10% higher with [655, 665] ns against [598, 602] ns is declared.
  const v1::FleetReport lat_base = Report(
      {WithInterval(MetricRow("n1", "seconds_per_operation", "load", 600e-9), 598e-9, 602e-9)});
  v1::FleetReport lat_now = Report(
      {WithInterval(MetricRow("n1", "seconds_per_operation", "load", 660e-9), 655e-9, 665e-9)});
  CompareWithBaseline(lat_base, 0.05, &lat_now);
  ASSERT_THAT(lat_now.regressions(), SizeIs(1));
  EXPECT_NEAR(lat_now.regressions(0).change_high(), 1 - 655.0 / 602, 1e-9);
}

TEST(FleetConfidence, AnIntervalThatDoesNotHoldItsValueIsIgnored) {
  // An edited baseline (value scaled, interval not): judged by the values alone.
  const v1::FleetReport baseline =
      Report({WithInterval(MetricRow("n1", "bytes_per_second", "", 10000), 99, 101)});
  v1::FleetReport now =
      Report({WithInterval(MetricRow("n1", "bytes_per_second", "", 100), 99, 101)});
  CompareWithBaseline(baseline, 0.05, &now);
  ASSERT_THAT(now.regressions(), SizeIs(1));
  EXPECT_NEAR(now.regressions(0).change(), -0.99, 1e-12);
}

TEST(FleetJson, BadBaselinesAreRejectedWithAReason) {
  EXPECT_EQ(ParseFleetReport("not json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParseFleetReport("{}").status().message(), HasSubstr("no targets"));
}

// A broken or hostile server: answers ListDevices, then streams results (or item errors)
// without end until the client cancels. Counts what it sent.
class EndlessServer final : public v1::Benchmark::Service {
 public:
  explicit EndlessServer(bool errors, int message_bytes = 0)
      : errors_(errors), message_bytes_(message_bytes) {}
  grpc::Status ListDevices(grpc::ServerContext*, const v1::ListDevicesRequest*,
                           v1::ListDevicesResponse* response) override {
    auto* d = response->add_devices();
    d->set_name("Hostile GPU");
    d->set_uuid("GPU-hostile");
    d->set_node_name("hostile-node");
    return grpc::Status::OK;
  }
  grpc::Status RunSweep(grpc::ServerContext* context, const v1::RunSweepRequest*,
                        grpc::ServerWriter<v1::RunSweepResponse>* writer) override {
    v1::RunSweepResponse event;
    if (errors_) {
      event.mutable_error()->set_kernel("add_f32");
      event.mutable_error()->set_message(std::string(std::max(1, message_bytes_), 'x'));
    } else {
      auto* r = event.mutable_result();
      r->mutable_request()->set_kernel("add_f32");
      r->mutable_request()->set_elements(1024);
      r->mutable_device()->set_uuid("GPU-hostile");
      r->mutable_device()->set_node_name("hostile-node");
      r->set_explanation(std::string(message_bytes_, 'y'));
    }
    while (!context->IsCancelled() && sent_ < 10'000'000) {
      if (!writer->Write(event)) break;
      ++sent_;
    }
    return grpc::Status::OK;
  }
  std::atomic<int64_t> sent_{0};

 private:
  bool errors_;
  int message_bytes_;
};

struct Served {
  explicit Served(EndlessServer* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    server = builder.BuildAndStart();
  }
  ~Served() { server->Shutdown(std::chrono::system_clock::now()); }
  std::string target() const { return absl::StrCat("127.0.0.1:", port); }
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

v1::FleetReport RunAgainst(const std::string& target, const FleetOptions& options) {
  v1::Plan plan;
  plan.add_sweeps()->add_kernels("add_f32");
  return RunFleet(
      {target}, plan, options,
      [](const std::string& t) {
        return grpc::CreateChannel(t, grpc::InsecureChannelCredentials());
      },
      [](grpc::ClientContext*) {});
}

TEST(FleetLimits, EndlessResultsEndTheTargetAtTheRowLimit) {
  EndlessServer service(/*errors=*/false);
  Served served(&service);
  FleetOptions options;
  options.progress = false;
  options.target_timeout_seconds = 60;
  options.max_rows = 500;
  const v1::FleetReport report = RunAgainst(served.target(), options);
  ASSERT_EQ(report.targets_size(), 1);
  const v1::FleetTarget& t = report.targets(0);
  EXPECT_FALSE(t.ok());
  EXPECT_THAT(t.error(), HasSubstr("--max_target_rows"));
  EXPECT_LE(t.rows_size(), options.max_rows);
  EXPECT_EQ(t.attempts(), 1);  // a limit is not retried
  ASSERT_EQ(report.failures_size(), 1);
}

TEST(FleetLimits, EndlessBytesAndErrorsEndTheTarget) {
  {
    EndlessServer service(/*errors=*/false, /*message_bytes=*/64 << 10);
    Served served(&service);
    FleetOptions options;
    options.progress = false;
    options.target_timeout_seconds = 60;
    options.max_bytes = 4 << 20;
    const v1::FleetReport report = RunAgainst(served.target(), options);
    EXPECT_FALSE(report.targets(0).ok());
    EXPECT_THAT(report.targets(0).error(), HasSubstr("--max_target_bytes"));
  }
  {
    EndlessServer service(/*errors=*/true, /*message_bytes=*/100 << 10);
    Served served(&service);
    FleetOptions options;
    options.progress = false;
    options.target_timeout_seconds = 60;
    options.max_errors = 50;
    const v1::FleetReport report = RunAgainst(served.target(), options);
    const v1::FleetTarget& t = report.targets(0);
    EXPECT_FALSE(t.ok());
    EXPECT_THAT(t.error(), HasSubstr("--max_target_errors"));
    // The kept messages are capped: 50 errors of 100 KiB would be 5 MB of error text.
    EXPECT_LT(t.error().size(), 50u * 1100u);
  }
}

TEST(FleetTargets, UnboundedOrHugeTargetFilesAreRefused) {
  absl::StatusOr<std::vector<std::string>> t = ResolveTargets({}, "/dev/zero", {});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("larger than"));

  const std::string path = ::testing::TempDir() + "/many_targets.txt";
  {
    std::ofstream f(path);
    for (int i = 0; i <= kMaxTargetsFileLines; ++i) f << "h" << i << ":1\n";
  }
  t = ResolveTargets({}, path, {});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("lines"));
  {
    std::ofstream f(path);
    f << "# two targets\nnode1:50051\n\n  node2:50051  \nnode1:50051\n";
  }
  t = ResolveTargets({}, path, {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, (std::vector<std::string>{"node1:50051", "node2:50051"}));
  std::remove(path.c_str());
}

// A user kernel's rows (kernel "user_kernel" for every one) are their own measurement, one per
// entry and code hash: summarised per GPU model like catalog rows, never with another user
// kernel's or a catalog kernel's; regressions name them; a skipped sweep is listed, not failed.
TEST(FleetUserKernels, RowsAreKeyedByEntryAndCodeHash) {
  auto user = [](const std::string& node, const std::string& id, double bandwidth) {
    v1::FleetRow r = Row(node, "A", bandwidth);
    r.set_kernel("user_kernel");
    r.set_user_kernel(id);
    r.set_user_kernel_sha256(id.substr(id.find('@') + 1) + std::string(52, '0'));
    r.set_seed(static_cast<uint64_t>(bandwidth));  // fresh per run
    r.set_output_hash(static_cast<uint64_t>(bandwidth));
    return r;
  };
  v1::FleetReport report =
      Report({Row("n1", "A", 100), Row("n2", "A", 100), user("n1", "my_add@0123456789ab", 90),
              user("n2", "my_add@0123456789ab", 91), user("n1", "my_add@ba9876543210", 50),
              user("n2", "my_add@ba9876543210", 10)});
  report.mutable_targets(1)->add_skipped()->set_sweep(3);
  report.mutable_targets(1)->mutable_skipped(0)->set_kernel("user:other@aaaaaaaaaaaa");
  report.mutable_targets(1)->mutable_skipped(0)->set_reason(
      "the server does not allow user kernels (it runs without --allow_user_kernels)");
  Summarize(0.10, &report);
  std::map<std::string, int> gpus;
  for (const v1::FleetModelSummary& s : report.summaries()) gpus[s.kernel()] = s.gpus();
  EXPECT_EQ(gpus,
            (std::map<std::string, int>{
                {"add_f32", 2}, {"user:my_add@0123456789ab", 2}, {"user:my_add@ba9876543210", 2}}));
  ASSERT_EQ(report.outliers_size(), 1);
  EXPECT_EQ(report.outliers(0).kernel(), "user:my_add@ba9876543210");
  EXPECT_EQ(report.outliers(0).node_name(), "n2");
  // Fresh seeds: no SDC groups of user rows, whatever their hashes.
  EXPECT_EQ(report.sdc_suspects_size(), 0);
  EXPECT_EQ(report.targets_completed(), 2);
  EXPECT_EQ(report.failures_size(), 0);
  const std::string table = RenderFleet(report, "table");
  EXPECT_THAT(table, HasSubstr("user:my_add@0123456789ab"));
  EXPECT_THAT(table,
              HasSubstr("SKIPPED n2:50051 (node n2): sweep 3 of the plan "
                        "(user:other@aaaaaaaaaaaa): the server does not allow user kernels"));
  EXPECT_THAT(RenderFleet(report, "csv"),
              HasSubstr(",user:other@aaaaaaaaaaaa,,,,,,,,,\"skipped sweep 3: the server does not"));

  // Another revision of the kernel (another hash) is not the same row: MISSING, not SLOWER.
  v1::FleetReport now = Report({user("n1", "my_add@cccccccccccc", 10)});
  CompareWithBaseline(report, 0.05, &now);
  int missing = 0;
  for (const v1::FleetRegression& g : now.regressions()) {
    EXPECT_NE(g.kind(), v1::FleetRegression::SLOWER) << g.description();
    missing += g.kind() == v1::FleetRegression::MISSING;
  }
  EXPECT_GE(missing, 2);
  now = Report({user("n1", "my_add@0123456789ab", 10)});
  CompareWithBaseline(report, 0.05, &now);
  bool slower = false;
  for (const v1::FleetRegression& g : now.regressions()) {
    if (g.kind() != v1::FleetRegression::SLOWER) continue;
    slower = true;
    EXPECT_EQ(g.kernel(), "user:my_add@0123456789ab");
    EXPECT_THAT(g.description(), HasSubstr("user:my_add@0123456789ab 1Mi cold"));
  }
  EXPECT_TRUE(slower);
}

}  // namespace
}  // namespace gpubench::client
