#include "server/engine/engine.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/fake_backend.h"
#include "server/engine/worker_pool.h"

namespace gpubench {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  void Make(int capacity, int devices = 1) {
    testing::FakeScript script;
    script.release = &release_;
    script.samples_taken = &samples_;
    script.devices = devices;
    ServerLimits limits;
    limits.queue_capacity = capacity;
    engine_ = std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script), limits);
  }
  RunSpec Spec(int device = 0) {
    RunRequest r;
    r.kernel = "add_f32";
    r.elements = 256;
    r.device_index = device;
    r.measurement.min_samples = 3;
    r.measurement.min_time_seconds = 0.001;
    return *engine_->Resolve(r);
  }
  struct Waiter {
    std::promise<absl::StatusOr<RunResult>> promise;
    std::future<absl::StatusOr<RunResult>> future = promise.get_future();
    std::atomic<bool> started{false};
    JobCallbacks Callbacks() {
      JobCallbacks cb;
      cb.on_start = [this] { started = true; };
      cb.on_done = [this](absl::StatusOr<RunResult> r) { promise.set_value(std::move(r)); };
      return cb;
    }
  };
  void TearDown() override { release_ = true; }

  std::atomic<bool> release_{false};
  std::atomic<int> samples_{0};
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, FifoPositionsAndFullQueue) {
  Make(/*capacity=*/2);
  Waiter first, second, third, fourth;
  int position = -1;
  ASSERT_TRUE(engine_->Submit(Spec(), absl::InfiniteFuture(), first.Callbacks(), &position).ok());
  EXPECT_EQ(position, 0);
  // Wait until the first run holds the worker, so only it counts ahead of the next ones.
  while (!first.started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(engine_->QueueDepth(0), 1);
  ASSERT_TRUE(engine_->Submit(Spec(), absl::InfiniteFuture(), second.Callbacks(), &position).ok());
  EXPECT_EQ(position, 1);
  ASSERT_TRUE(engine_->Submit(Spec(), absl::InfiniteFuture(), third.Callbacks(), &position).ok());
  EXPECT_EQ(position, 2);
  absl::StatusOr<std::shared_ptr<Job>> rejected =
      engine_->Submit(Spec(), absl::InfiniteFuture(), fourth.Callbacks(), &position);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kResourceExhausted);
  release_ = true;
  EXPECT_TRUE(first.future.get().ok());
  EXPECT_TRUE(second.future.get().ok());
  EXPECT_TRUE(third.future.get().ok());
}

TEST_F(EngineTest, CancelWhileQueuedAnswersAtOnce) {
  Make(4);
  Waiter running, queued;
  ASSERT_TRUE(engine_->Submit(Spec(), absl::InfiniteFuture(), running.Callbacks(), nullptr).ok());
  auto job = engine_->Submit(Spec(), absl::InfiniteFuture(), queued.Callbacks(), nullptr);
  ASSERT_TRUE(job.ok());
  (*job)->Cancel();
  ASSERT_EQ(queued.future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(queued.future.get().status().code(), absl::StatusCode::kCancelled);
  release_ = true;
  EXPECT_TRUE(running.future.get().ok());
}

// A run that leaves the queue (cancelled, or its deadline passed while another held the worker)
// reaches the observers (metrics: gpubench_runs_total by outcome) with its status, as a run the
// worker finds expired when it takes it does: which of the two sees it first is a race.
TEST_F(EngineTest, RunsLeavingTheQueueReachTheObservers) {
  Make(4);
  class Codes final : public RunObserver {
   public:
    void OnRunFinished(const RunSpec&, const absl::StatusOr<RunResult>& result,
                       absl::Duration) override {
      std::lock_guard<std::mutex> lock(mu);
      codes.push_back(result.status().code());
    }
    void OnQueueDepth(int, int) override {}
    std::mutex mu;
    std::vector<absl::StatusCode> codes;
  } codes;
  engine_->AddObserver(&codes);
  Waiter running, cancelled, expired;
  ASSERT_TRUE(engine_->Submit(Spec(), absl::InfiniteFuture(), running.Callbacks(), nullptr).ok());
  while (!running.started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto job = engine_->Submit(Spec(), absl::InfiniteFuture(), cancelled.Callbacks(), nullptr);
  ASSERT_TRUE(job.ok());
  (*job)->Cancel();
  // The RPC layer cancels a job when the client's deadline passes: here, after it passed.
  auto late = engine_->Submit(Spec(), absl::Now() + absl::Milliseconds(20), expired.Callbacks(),
                              nullptr);
  ASSERT_TRUE(late.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  (*late)->Cancel();
  ASSERT_EQ(expired.future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(expired.future.get().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cancelled.future.get().status().code(), absl::StatusCode::kCancelled);
  {
    std::lock_guard<std::mutex> lock(codes.mu);
    EXPECT_EQ(codes.codes, (std::vector<absl::StatusCode>{absl::StatusCode::kCancelled,
                                                           absl::StatusCode::kDeadlineExceeded}));
  }
  release_ = true;
  EXPECT_TRUE(running.future.get().ok());
  // The worker tells the observers after the run's callbacks: stop the engine (joining its
  // workers) while `codes`, which it still holds, is alive.
  engine_.reset();
}

TEST_F(EngineTest, CancelWhileRunningStopsAtSampleBoundary) {
  Make(4);
  release_ = true;
  Waiter w;
  RunSpec spec = Spec();
  spec.measurement.min_samples = 1000000;
  spec.measurement.max_samples = 1000000;
  spec.measurement.timeout_seconds = 100;
  auto job = engine_->Submit(spec, absl::InfiniteFuture(), w.Callbacks(), nullptr);
  ASSERT_TRUE(job.ok());
  while (samples_ < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  (*job)->Cancel();
  ASSERT_EQ(w.future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(w.future.get().status().code(), absl::StatusCode::kCancelled);
}

TEST_F(EngineTest, DeadlineWhileRunning) {
  Make(4);
  release_ = true;
  Waiter w;
  RunSpec spec = Spec();
  spec.measurement.min_samples = 1000000;
  spec.measurement.max_samples = 1000000;
  spec.measurement.timeout_seconds = 100;
  ASSERT_TRUE(engine_->Submit(spec, absl::Now() + absl::Milliseconds(50), w.Callbacks(), nullptr).ok());
  ASSERT_EQ(w.future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(w.future.get().status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(EngineTest, DevicesRunConcurrently) {
  Make(4, /*devices=*/2);
  Waiter a, b;
  ASSERT_TRUE(engine_->Submit(Spec(0), absl::InfiniteFuture(), a.Callbacks(), nullptr).ok());
  int position = -1;
  ASSERT_TRUE(engine_->Submit(Spec(1), absl::InfiniteFuture(), b.Callbacks(), &position).ok());
  EXPECT_EQ(position, 0);  // device 1's queue is independent of device 0's
  release_ = true;
  EXPECT_EQ(a.future.get()->spec.device_index, 0);
  EXPECT_EQ(b.future.get()->spec.device_index, 1);
}

TEST(EngineFaults, DeviceLostErrorsReachTheHandler) {
  testing::FakeScript script;
  absl::Status lost = absl::InternalError("cudaErrorIllegalAddress");
  lost.SetPayload(kDeviceLostPayload, absl::Cord("x"));
  script.sample_error = lost;
  Engine engine(std::make_unique<testing::FakeBackend>(script), ServerLimits());
  std::promise<int> lost_device;
  engine.SetDeviceLostHandler([&](int d, const absl::Status& s) {
    EXPECT_TRUE(IsDeviceLost(s));
    lost_device.set_value(d);
  });
  RunRequest r;
  r.kernel = "add_f32";
  r.elements = 64;
  std::promise<absl::StatusOr<RunResult>> done;
  JobCallbacks cb;
  cb.on_done = [&](absl::StatusOr<RunResult> res) { done.set_value(std::move(res)); };
  ASSERT_TRUE(engine.Submit(*engine.Resolve(r), absl::InfiniteFuture(), cb, nullptr).ok());
  absl::StatusOr<RunResult> res = done.get_future().get();
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(res.status().message().find("IllegalAddress"), std::string::npos);
  EXPECT_EQ(lost_device.get_future().get(), 0);
}

TEST_F(EngineTest, CopyCeilingFromTheLatestLargeCopy) {
  Make(4);
  release_ = true;
  auto run = [&](const char* kernel) {
    RunRequest r;
    r.kernel = kernel;
    r.elements = 4096;
    r.measurement.min_samples = 3;
    r.measurement.min_time_seconds = 0.001;
    Waiter w;
    EXPECT_TRUE(engine_->Submit(*engine_->Resolve(r), absl::InfiniteFuture(), w.Callbacks(), nullptr).ok());
    return w.future.get();
  };
  absl::StatusOr<RunResult> before = run("add_f32");
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before->percent_of_copy_ceiling.has_value());  // no copy measured yet
  absl::StatusOr<RunResult> copy = run("copy_d2d");  // the fake device has no L2: DRAM-bound
  ASSERT_TRUE(copy.ok());
  EXPECT_DOUBLE_EQ(*copy->percent_of_copy_ceiling, 100.0);
  absl::StatusOr<RunResult> after = run("add_f32");
  ASSERT_TRUE(after.ok());
  // Both take 1 ms per launch in the fake: add moves 12 bytes/element, copy 8.
  EXPECT_DOUBLE_EQ(*after->percent_of_copy_ceiling, 150.0);
  EXPECT_DOUBLE_EQ(after->copy_ceiling_bytes_per_second, copy->bandwidth_bytes_per_second);
}

// The check at run start (the device's memory may have changed since the request was resolved)
// counts the placement pad too: 16Mi add_f32 is three 64 MiB buffers, the fake device has 1 GiB.
TEST_F(EngineTest, AdmissionAtRunStartCountsThePlacementPad) {
  Make(4);
  release_ = true;
  RunRequest r;
  r.kernel = "add_f32";
  r.elements = 16 << 20;
  r.measurement.placement_pad_bytes = 256 << 20;  // 960 MiB in all: resolves
  absl::StatusOr<RunSpec> spec = engine_->Resolve(r);
  ASSERT_TRUE(spec.ok()) << spec.status();
  spec->measurement.placement_pad_bytes = 300 << 20;  // 1092 MiB: refused before allocation
  Waiter w;
  ASSERT_TRUE(engine_->Submit(*spec, absl::InfiniteFuture(), w.Callbacks(), nullptr).ok());
  absl::StatusOr<RunResult> result = w.future.get();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(result.status().message().find("bytes of device memory"), std::string::npos)
      << result.status();
}

TEST_F(EngineTest, ShutdownCancelsWhatGraceDoesNotCover) {
  Make(4);
  Waiter running, queued;
  RunSpec spec = Spec();
  ASSERT_TRUE(engine_->Submit(spec, absl::InfiniteFuture(), running.Callbacks(), nullptr).ok());
  ASSERT_TRUE(engine_->Submit(spec, absl::InfiniteFuture(), queued.Callbacks(), nullptr).ok());
  std::thread releaser([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    release_ = true;
  });
  engine_->Shutdown(absl::Milliseconds(50));
  releaser.join();
  EXPECT_FALSE(queued.future.get().ok());
  Waiter late;
  auto rejected = engine_->Submit(spec, absl::InfiniteFuture(), late.Callbacks(), nullptr);
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kUnavailable);
  // The running one finished (cancelled by the shutdown or measured): either is fine here.
  running.future.get().IgnoreError();
}

// A DeviceRunner that logs its calls with the role of each run (RoleFor) and measures on a fake
// backend of its own, in this process.
class RecordingRunner final : public DeviceRunner {
 public:
  explicit RecordingRunner(testing::FakeScript script) : backend_(script) {}
  absl::Status Available(int) const override { return absl::OkStatus(); }
  absl::Status Prepare(const RunSpec& spec, const CancelledFn&) override {
    Log("prepare", spec);
    return prepare_status;
  }
  absl::StatusOr<RunResult> Measure(const RunSpec& spec, const DeviceInfo& device, absl::Time,
                                    const CancelledFn& cancelled) override {
    Log("measure", spec);
    ParallelPool pool(0);
    return MeasureRun(backend_, spec, device, cancelled, &pool);
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  absl::Status prepare_status = absl::OkStatus();

 private:
  void Log(const char* what, const RunSpec& spec) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(absl::StrCat(what, " ", spec.kernel->name, " ",
                                RoleFor(spec) == WorkerRole::kUser ? "user" : "catalog"));
  }
  testing::FakeBackend backend_;
  std::mutex mu_;
  std::vector<std::string> log_;
};

absl::StatusOr<RunResult> RunOn(Engine& engine, const RunSpec& spec) {
  std::promise<absl::StatusOr<RunResult>> done;
  JobCallbacks cb;
  cb.on_done = [&](absl::StatusOr<RunResult> r) { done.set_value(std::move(r)); };
  absl::StatusOr<std::shared_ptr<Job>> job =
      engine.Submit(spec, absl::Now() + absl::Seconds(60), cb, nullptr);
  if (!job.ok()) return job.status();
  return done.get_future().get();
}

// The runner readies each run's process (Prepare: a user-kernel worker started on demand) before
// the run's device description and memory admission, so the admission sees what that process
// holds; then measures it. A run's role follows its spec: catalog, or user for a run in the
// user-kernel context.
TEST(EngineRunner, PreparesEachRunBeforeMeasuringItInItsRolesWorker) {
  testing::FakeScript script;
  Engine engine(std::make_unique<testing::FakeBackend>(script), ServerLimits());
  RecordingRunner runner(script);
  engine.SetRunner(&runner);
  RunRequest r;
  r.kernel = "add_f32";
  r.elements = 256;
  r.measurement.min_samples = 3;
  r.measurement.min_time_seconds = 0.001;
  RunSpec spec = *engine.Resolve(r);
  ASSERT_TRUE(RunOn(engine, spec).ok());
  spec.user_context = true;  // as --compare's built-ins are submitted
  ASSERT_TRUE(RunOn(engine, spec).ok());
  EXPECT_EQ(runner.log(),
            (std::vector<std::string>{"prepare add_f32 catalog", "measure add_f32 catalog",
                                      "prepare add_f32 user", "measure add_f32 user"}));
}

// A process that cannot be readied fails the run with its reason, before anything is measured.
TEST(EngineRunner, APrepareErrorFailsTheRunUnmeasured) {
  testing::FakeScript script;
  Engine engine(std::make_unique<testing::FakeBackend>(script), ServerLimits());
  RecordingRunner runner(script);
  runner.prepare_status =
      absl::UnavailableError("the user-kernel worker of device 0 did not start: no memory");
  engine.SetRunner(&runner);
  RunRequest r;
  r.kernel = "add_f32";
  r.elements = 256;
  absl::StatusOr<RunResult> result = RunOn(engine, *engine.Resolve(r));
  EXPECT_EQ(result.status(), runner.prepare_status);
  EXPECT_EQ(runner.log(), std::vector<std::string>{"prepare add_f32 catalog"});
}

}  // namespace
}  // namespace gpubench
