// Plan files: one RunSweepRequest (the original form, still accepted) or a Plan of several sweeps;
// anything else is INVALID_ARGUMENT with the parser's reason.
#include "proto/plan_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpubench {
namespace {

using ::testing::HasSubstr;

TEST(PlanJson, OneSweepIsAPlanOfOneSweep) {
  absl::StatusOr<v1::Plan> plan =
      ParsePlanJson(R"({"kernels": ["add_f32"], "sizes": ["4096"], "verify": true})");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->sweeps_size(), 1);
  EXPECT_EQ(plan->sweeps(0).kernels(0), "add_f32");
  EXPECT_EQ(plan->sweeps(0).sizes(0), 4096);
}

TEST(PlanJson, SeveralSweepsKeepTheirOrderAndOwnSizes) {
  absl::StatusOr<v1::Plan> plan = ParsePlanJson(R"({"sweeps": [
      {"kernels": ["add_f32"], "sizes": ["268435456"]},
      {"kernels": ["latency_chase"], "sizes": ["65536", "8388608", "1073741824"],
       "measurement": {"cacheMode": "HOT"}}]})");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->sweeps_size(), 2);
  EXPECT_EQ(plan->sweeps(0).sizes_size(), 1);
  EXPECT_EQ(plan->sweeps(1).kernels(0), "latency_chase");
  EXPECT_EQ(plan->sweeps(1).sizes(2), int64_t{1} << 30);
  EXPECT_EQ(plan->sweeps(1).measurement().cache_mode(), v1::HOT);
}

TEST(PlanJson, EverythingElseIsRejectedWithTheReason) {
  EXPECT_EQ(ParsePlanJson("not json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParsePlanJson(R"({"kernel": "add_f32"})").status().message(),
              HasSubstr("not a RunSweepRequest"));
  EXPECT_THAT(ParsePlanJson(R"({"sweeps": [{"kernelz": ["add_f32"]}]})").status().message(),
              HasSubstr("not a Plan"));
  EXPECT_THAT(ParsePlanJson(R"({"sweeps": []})").status().message(), HasSubstr("no sweeps"));
  EXPECT_THAT(ParsePlanJson("{}").status().message(), HasSubstr("no sweeps"));
}

// A sweep may carry a user kernel (in a plan or alone) instead of kernels; what the server would
// refuse for the whole sweep is refused with the plan, naming the sweep.
TEST(PlanJson, AUserKernelSweepIsCheckedWhole) {
  absl::StatusOr<v1::Plan> plan = ParsePlanJson(R"({"sweeps": [
      {"kernels": ["add_f32"], "sizes": ["4096"]},
      {"userKernel": {"source": "extern \"C\" __global__ void my_add() {}", "entry": "my_add",
                      "family": "elementwise_add", "dtype": "f16", "launch": {"blockSize": 256}},
       "sizes": ["4096", "65536"], "blockSizes": [128, 256]}]})");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->sweeps_size(), 2);
  EXPECT_TRUE(plan->sweeps(1).has_user_kernel());
  EXPECT_EQ(plan->sweeps(1).user_kernel().entry(), "my_add");
  EXPECT_EQ(plan->sweeps(1).user_kernel().launch().block_size(), 256);
  EXPECT_EQ(plan->sweeps(1).block_sizes_size(), 2);
  absl::StatusOr<v1::Plan> alone = ParsePlanJson(
      R"({"userKernel": {"ptx": ".version 8.0", "entry": "my_add", "family": "copy",
          "dtype": "f32"}, "sizes": ["4096"]})");
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_TRUE(alone->sweeps(0).user_kernel().has_ptx());

  const struct {
    const char* json;
    const char* says;
  } refused[] = {
      {R"({"kernels": ["add_f32"], "sizes": ["1"], "userKernel": {"ptx": "x", "entry": "e",
          "family": "copy", "dtype": "f32"}})",
       "plan: sweep 1: kernels and userKernel are exclusive"},
      {R"({"sweeps": [{"kernels": ["add_f32"], "sizes": ["1"]}, {"sizes": ["1"],
          "userKernel": {"entry": "e", "family": "copy", "dtype": "f32"}}]})",
       "plan: sweep 2: userKernel needs its code"},
      {R"({"sizes": ["1"], "userKernel": {"ptx": "x", "family": "copy", "dtype": "f32"}})",
       "userKernel needs entry, family and dtype"},
      {R"({"sizes": ["1"], "userKernel": {"ptx": "x", "entry": "e", "family": "copy",
          "dtype": "f32", "compare": true}})",
       "userKernel.compare is for RunBenchmark"},
      {R"({"sizes": ["1"], "seed": "7", "userKernel": {"ptx": "x", "entry": "e",
          "family": "copy", "dtype": "f32"}})",
       "leave out seed and verify"},
      {R"({"sizes": ["1"], "verify": false, "userKernel": {"ptx": "x", "entry": "e",
          "family": "copy", "dtype": "f32"}})",
       "leave out seed and verify"},
      {R"({"sweeps": [{"kernels": ["add_f32"], "sizes": ["1"]}], "multiDeviceSweeps": [
          {"sizes": ["1"], "userKernel": {"ptx": "x", "entry": "e", "family": "copy",
           "dtype": "f32"}}]})",
       "plan: multi-device sweep 1: a user kernel runs on one device"},
      {R"({"sizes": ["1"], "userKernel": {"ptx": "x", "entry": "e", "family": "copy",
          "dtype": "f32", "launch": {"blockSize": 256, "color": 1}}})",
       "not a RunSweepRequest"},
  };
  for (const auto& r : refused) {
    absl::StatusOr<v1::Plan> p = ParsePlanJson(r.json);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << r.json;
    EXPECT_THAT(p.status().message(), HasSubstr(r.says)) << r.json;
  }
}

}  // namespace
}  // namespace gpubench
