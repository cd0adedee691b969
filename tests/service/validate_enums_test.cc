// Enum values outside their declared range: refused by the reflection walk, by the plan parser
// and by every RPC that takes one (over an in-process channel to the real service), naming the
// field. Before the check, cache_mode 99 ran as cold and timer 99 as auto.
#include "server/service/validate_enums.h"

#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/cpu_backend.h"
#include "proto/plan_json.h"
#include "server/service/benchmark_service.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

TEST(ValidateEnumsTest, DeclaredValuesPass) {
  v1::RunBenchmarkRequest r;
  r.set_kernel("add_f32");
  r.mutable_measurement()->set_cache_mode(v1::HOT);
  r.mutable_measurement()->set_timer(v1::TIMER_EVENTS);
  EXPECT_TRUE(ValidateEnums(r).ok());
  EXPECT_TRUE(ValidateEnums(v1::RunBenchmarkRequest()).ok());
}

TEST(ValidateEnumsTest, UndeclaredValueNamesTheFieldPath) {
  v1::RunBenchmarkRequest r;
  r.mutable_measurement()->set_cache_mode(static_cast<v1::CacheMode>(99));
  absl::Status s = ValidateEnums(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("measurement.cache_mode: 99"));
  EXPECT_THAT(s.message(), HasSubstr("COLD"));

  v1::AutotuneRequest a;
  a.mutable_measurement()->set_timer(static_cast<v1::Timer>(-3));
  s = ValidateEnums(a);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("measurement.timer: -3"));
}

TEST(ValidateEnumsTest, RepeatedMessagesAreWalkedWithTheirIndex) {
  v1::Plan plan;
  plan.add_sweeps()->add_kernels("add_f32");
  plan.add_sweeps()->mutable_measurement()->set_timer(static_cast<v1::Timer>(42));
  absl::Status s = ValidateEnums(plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("sweeps[1].measurement.timer: 42"));
}

TEST(ValidateEnumsTest, PlanFilesRefuseNumericEnumsOutOfRange) {
  absl::StatusOr<v1::Plan> plan = ParsePlanJson(
      R"({"sweeps": [{"kernels": ["add_f32"], "sizes": ["1024"],
                      "measurement": {"cacheMode": 99}}]})");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("sweeps[0].measurement.cache_mode: 99"));
  // A bare RunSweepRequest plan too; declared numbers and names still parse.
  plan = ParsePlanJson(R"({"kernels": ["add_f32"], "measurement": {"timer": 7}})");
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("measurement.timer: 7"));
  EXPECT_TRUE(ParsePlanJson(R"({"kernels": ["add_f32"], "measurement": {"cacheMode": 2}})").ok());
  EXPECT_TRUE(ParsePlanJson(R"({"kernels": ["add_f32"], "measurement": {"cacheMode": "HOT"}})").ok());
}

class ServiceEnumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerLimits limits;
    limits.max_elements = 1 << 16;
    limits.defaults.min_time_seconds = 0.001;
    limits.defaults.timeout_seconds = 0.05;
    engine_ = std::make_unique<Engine>(MakeCpuBackend({.devices = 1, .threads_per_device = 1}),
                                       limits);
    service_ =
        std::make_unique<BenchmarkService>(engine_.get(), ServiceOptions{.max_sweep_items = 8});
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::Benchmark::NewStub(server_->InProcessChannel({}));
  }
  void TearDown() override {
    server_->Shutdown();
    engine_->Shutdown(absl::Seconds(1));
  }
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<BenchmarkService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Benchmark::Stub> stub_;
};

TEST_F(ServiceEnumTest, EveryRpcWithEnumsRefusesUndeclaredValues) {
  v1::MeasurementOptions bad;
  bad.set_cache_mode(static_cast<v1::CacheMode>(99));
  {
    v1::RunBenchmarkRequest r;
    r.set_kernel("add_f32");
    r.set_elements(1024);
    *r.mutable_measurement() = bad;
    grpc::ClientContext ctx;
    v1::RunBenchmarkResponse response;
    grpc::Status s = stub_->RunBenchmark(&ctx, r, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("measurement.cache_mode"));
  }
  {
    v1::RunSweepRequest r;
    r.add_kernels("add_f32");
    r.add_sizes(1024);
    r.mutable_measurement()->set_timer(static_cast<v1::Timer>(99));
    grpc::ClientContext ctx;
    auto reader = stub_->RunSweep(&ctx, r);
    v1::RunSweepResponse event;
    int events = 0;
    while (reader->Read(&event)) ++events;
    grpc::Status s = reader->Finish();
    EXPECT_EQ(events, 0);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("measurement.timer"));
  }
  {
    v1::AutotuneRequest r;
    r.set_kernel("add_f32");
    r.set_elements(1024);
    *r.mutable_measurement() = bad;
    grpc::ClientContext ctx;
    v1::AutotuneResponse response;
    grpc::Status s = stub_->Autotune(&ctx, r, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("measurement.cache_mode"));
  }
}

}  // namespace
}  // namespace gpubench
