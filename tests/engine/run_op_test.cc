// The Run operation: resolve and queue; a failed verification reaches the caller as an error.
#include "server/engine/run_op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "engine/fake_backend.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Engine> MakeEngine(testing::FakeScript script = {}) {
  return std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script), ServerLimits{});
}

RunRequest Request() {
  RunRequest r;
  r.kernel = "add_f32";
  r.elements = 1024;
  r.measurement.min_samples = 3;
  r.measurement.min_time_seconds = 1e-3;
  return r;
}

absl::StatusOr<RunResult> SubmitAndWait(Engine& engine, const RunRequest& request) {
  std::promise<absl::StatusOr<RunResult>> done;
  absl::StatusOr<std::shared_ptr<Job>> job =
      SubmitRun(engine, request, absl::InfiniteFuture(),
                [&done](absl::StatusOr<RunResult> r) { done.set_value(std::move(r)); });
  if (!job.ok()) return job.status();
  return done.get_future().get();
}

TEST(RunOpTest, ResolvesQueuesAndFinishes) {
  auto engine = MakeEngine();
  absl::StatusOr<RunResult> result = SubmitAndWait(*engine, Request());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(OutcomeOf(*result), RunOutcome::kVerified);
  // Finished by the worker, which says how the run was verified too.
  EXPECT_EQ(result->method,
            "fake cold sample; L2 flush: clean; stream: nonblocking; verified: all 1024 elements "
            "on the host");
  EXPECT_LE(result->queued_at, result->started_at);
}

// The output hash of a verified run: the same for the same seed, another for another seed,
// absent without verification, and flipped by the test-only fault in the server's engine.
TEST(RunOpTest, VerifiedRunsCarryTheOutputHash) {
  auto engine = MakeEngine();
  RunRequest seeded = Request();
  seeded.seed = 77;
  absl::StatusOr<RunResult> a = SubmitAndWait(*engine, seeded);
  absl::StatusOr<RunResult> b = SubmitAndWait(*engine, seeded);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->output_hash.has_value());
  EXPECT_EQ(a->output_hash, b->output_hash);
  seeded.seed = 78;
  absl::StatusOr<RunResult> other = SubmitAndWait(*engine, seeded);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->output_hash, a->output_hash);
  RunRequest unverified = seeded;
  unverified.verify = false;
  absl::StatusOr<RunResult> none = SubmitAndWait(*engine, unverified);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->output_hash.has_value());

  ServerLimits faulty;
  faulty.test_output_hash_xor = 1;
  Engine flipped(std::make_unique<testing::FakeBackend>(testing::FakeScript{}), faulty);
  seeded.seed = 77;
  absl::StatusOr<RunResult> f = SubmitAndWait(flipped, seeded);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->output_hash ^ *a->output_hash, 1u);
  EXPECT_EQ(OutcomeOf(*f), RunOutcome::kVerified);  // only the hash tells
}

TEST(RunOpTest, BadRequestsFailBeforeQueueing) {
  auto engine = MakeEngine();
  RunRequest bad = Request();
  bad.elements = 0;
  bool called = false;
  absl::StatusOr<std::shared_ptr<Job>> job =
      SubmitRun(*engine, bad, absl::InfiniteFuture(), [&](absl::StatusOr<RunResult>) {
        called = true;
      });
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(called);
}

TEST(RunOpTest, AFailedVerificationIsAnError) {
  testing::FakeScript script;
  script.corrupt_output = true;
  auto engine = MakeEngine(script);
  absl::StatusOr<RunResult> result = SubmitAndWait(*engine, Request());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(result.status().message(), HasSubstr("verification failed for add_f32"));

  absl::StatusOr<RunResult> waited =
      RunAndWait(*engine, *engine->Resolve(Request()), absl::InfiniteFuture());
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kInternal);
}

TEST(RunOpTest, RunAndWaitHandsOverTheJobForCancelling) {
  std::atomic<bool> release{false};
  testing::FakeScript script;
  script.release = &release;
  auto engine = MakeEngine(script);
  absl::StatusOr<RunResult> result = RunAndWait(
      *engine, *engine->Resolve(Request()), absl::InfiniteFuture(),
      [&release](std::shared_ptr<Job> job) {
        job->Cancel();
        release = true;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace gpubench
