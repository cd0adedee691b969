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

}  // namespace
}  // namespace gpubench
