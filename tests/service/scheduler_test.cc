// The scheduler: a plan, validated at creation, run every interval through the same
// device queues as RPC work (marked as scheduled), and stopped promptly.
#include "server/service/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "engine/fake_backend.h"
#include "proto/plan_json.h"
#include "tests/eventually.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

// Counts finished runs, and whether each was submitted by the schedule.
class Recorder final : public RunObserver {
 public:
  void OnRunFinished(const RunSpec& spec, const absl::StatusOr<RunResult>& result,
                     absl::Duration) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++runs_;
    if (!spec.scheduled) ++unscheduled_;
    if (result.ok()) ++ok_;
  }
  void OnQueueDepth(int, int) override {}
  int runs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_;
  }
  int ok() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ok_;
  }
  int unscheduled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unscheduled_;
  }

 private:
  mutable std::mutex mu_;
  int runs_ = 0, ok_ = 0, unscheduled_ = 0;
};

constexpr char kPlan[] = R"({
  "kernels": ["add_f32", "copy_d2d"],
  "sizes": ["1024"],
  "measurement": {"minSamples": 3, "minTimeSeconds": 0.001}
})";

class SchedulerTest : public ::testing::Test {
 protected:
  void Make(testing::FakeScript script = {}) {
    engine_ = std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script),
                                       ServerLimits{});
    engine_->AddObserver(&recorder_);
  }
  static bool WaitFor(const std::function<bool()>& done) {
    return Eventually(done, absl::Seconds(10), absl::Milliseconds(2));
  }
  Recorder recorder_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(SchedulerTest, BadPlansAndIntervalsFailAtCreation) {
  Make();
  const v1::Plan plan = *ParsePlanJson(kPlan);
  EXPECT_EQ(Scheduler::Create(engine_.get(), plan, absl::ZeroDuration(), 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::Plan unknown = plan;
  unknown.mutable_sweeps(0)->add_kernels("no_such_kernel");
  absl::StatusOr<std::unique_ptr<Scheduler>> s =
      Scheduler::Create(engine_.get(), unknown, absl::Seconds(1), 100);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(),
              HasSubstr("sweep 1 of the plan: sweep item kernel=no_such_kernel"));
  EXPECT_EQ(Scheduler::Create(engine_.get(), plan, absl::Seconds(1), 1).status().code(),
            absl::StatusCode::kInvalidArgument);  // 2 items over a limit of 1
  EXPECT_EQ(recorder_.runs(), 0);  // nothing ran
}

// A user kernel in a scheduled plan is refused at creation (so at the server's start), whether
// the server allows user kernels or not: scheduled results are the devices' health evidence.
TEST_F(SchedulerTest, AUserKernelIsRefusedAtCreation) {
  ServerLimits limits;
  limits.user_kernels.allowed = true;
  engine_ = std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(testing::FakeScript{}),
                                     limits);
  v1::Plan plan = *ParsePlanJson(kPlan);
  v1::RunSweepRequest* user = plan.add_sweeps();
  user->add_sizes(1024);
  user->mutable_user_kernel()->set_ptx(".version 8.0");
  user->mutable_user_kernel()->set_entry("my_add");
  user->mutable_user_kernel()->set_family("elementwise_add");
  user->mutable_user_kernel()->set_dtype("f32");
  user->mutable_user_kernel()->mutable_launch()->set_block_size(256);
  absl::StatusOr<std::unique_ptr<Scheduler>> s =
      Scheduler::Create(engine_.get(), plan, absl::Seconds(1), 100);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("sweep 2 of the plan carries a user_kernel: "
                                              "scheduled plans run catalog kernels only"));
  v1::Plan multi = *ParsePlanJson(kPlan);
  *multi.add_multi_device_sweeps() = *user;
  EXPECT_THAT(Scheduler::Create(engine_.get(), multi, absl::Seconds(1), 100).status().message(),
              HasSubstr("multi-device sweep 1 of the plan carries a user_kernel"));
}

TEST_F(SchedulerTest, RunsEveryItemEachPassAsScheduledWork) {
  Make();
  absl::StatusOr<std::unique_ptr<Scheduler>> s =
      Scheduler::Create(engine_.get(), *ParsePlanJson(kPlan), absl::Milliseconds(20), 100);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->completed_passes(), 0);
  (*s)->Start();
  ASSERT_TRUE(WaitFor([&] { return (*s)->completed_passes() >= 2; }));
  (*s)->Stop();
  const int passes = (*s)->completed_passes();
  EXPECT_GE(recorder_.runs(), 2 * passes);  // two items a pass
  EXPECT_EQ(recorder_.ok(), recorder_.runs());
  EXPECT_EQ(recorder_.unscheduled(), 0);
  const int runs = recorder_.runs();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(recorder_.runs(), runs);  // stopped: no more passes
}

TEST_F(SchedulerTest, StopCancelsTheRunInFlight) {
  std::atomic<bool> release{false};
  std::atomic<int> samples{0};
  testing::FakeScript script;
  script.release = &release;
  script.samples_taken = &samples;
  Make(script);
  absl::StatusOr<std::unique_ptr<Scheduler>> s =
      Scheduler::Create(engine_.get(), *ParsePlanJson(kPlan), absl::Seconds(30), 100);
  ASSERT_TRUE(s.ok()) << s.status();
  (*s)->Start();
  // The first item is queued, and waits inside its first sample until released.
  ASSERT_TRUE(WaitFor([&] { return engine_->QueueDepth(0) == 1; }));
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  (*s)->Stop();  // cancels the run in flight and returns without waiting 30 s
  stopper.join();
  EXPECT_EQ((*s)->completed_passes(), 0);
  EXPECT_LE(recorder_.runs(), 1);
  EXPECT_EQ(recorder_.ok(), 0);
}

}  // namespace
}  // namespace gpubench
