#include "server/engine/measurement.h"

#include <gtest/gtest.h>

#include "engine/fake_backend.h"

namespace gpubench {
namespace {

class MeasureTest : public ::testing::Test {
 protected:
  RunSpec Spec(const char* kernel = "add_f32", int64_t n = 4096) {
    RunRequest r;
    r.kernel = kernel;
    r.elements = n;
    r.seed = 7;
    r.measurement.min_samples = 10;
    r.measurement.min_time_seconds = 0.005;
    r.measurement.timeout_seconds = 30;
    ServerLimits limits;
    return *ResolveRunRequest(r, *backend_, limits);
  }
  absl::StatusOr<RunResult> Measure(const RunSpec& spec, CancelledFn cancelled = [] { return false; }) {
    return MeasureRun(*backend_, spec, cancelled, &pool_);
  }
  std::unique_ptr<testing::FakeBackend> backend_ =
      std::make_unique<testing::FakeBackend>(testing::FakeScript{});
  ParallelPool pool_{2};
};

TEST_F(MeasureTest, StopsAtMinSamplesWhenQuiet) {
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stats.count, 10);
  EXPECT_TRUE(r->noise_reached);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 1e-3);
  EXPECT_EQ(r->bytes_moved, 4096 * 12);
  EXPECT_DOUBLE_EQ(r->bandwidth_bytes_per_second, 4096 * 12 / 1e-3);
  EXPECT_DOUBLE_EQ(*r->percent_of_peak, 100.0 * 4096 * 12 / 1e-3 / 1e12);
  ASSERT_TRUE(r->verification.has_value());
  EXPECT_TRUE(r->verification->passed);
}

TEST_F(MeasureTest, MinTimeKeepsSampling) {
  RunSpec spec = Spec();
  spec.measurement.min_samples = 2;
  spec.measurement.min_time_seconds = 0.05;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.count, 50);
  EXPECT_NEAR(r->measured_seconds, 0.05, 1e-9);
}

TEST_F(MeasureTest, NoisySamplesStopAtMaxSamplesWithNoiseNotReached) {
  backend_->script().seconds = [](int i) { return i % 2 ? 2e-3 : 1e-3; };
  RunSpec spec = Spec();
  spec.measurement.max_samples = 40;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.count, 40);
  EXPECT_FALSE(r->noise_reached);
  EXPECT_NE(r->stop_reason.find("max_samples"), std::string::npos);
  EXPECT_NEAR(r->stats.relative_noise, 0.5 / 1.5 * std::sqrt(40.0 / 39.0), 1e-9);
}

TEST_F(MeasureTest, TimeoutEndsAnEndlessNoisyRun) {
  backend_->script().seconds = [](int i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return i % 2 ? 2e-3 : 1e-3;
  };
  RunSpec spec = Spec();
  spec.measurement.timeout_seconds = 0.2;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->noise_reached);
  EXPECT_NE(r->stop_reason.find("timeout"), std::string::npos);
}

TEST_F(MeasureTest, ThrottledSamplesAreDiscarded) {
  backend_->script().default_clock_hz = 1.98e9;
  backend_->script().clock_hz = [](int i) { return std::optional<double>(i % 3 == 0 ? 0.9e9 : 1.9e9); };
  // Throttled samples would be slow; they must not enter the statistics.
  backend_->script().seconds = [](int i) { return i % 3 == 0 ? 5e-3 : 1e-3; };
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.count, 10);
  EXPECT_EQ(r->throttled_samples, 5);  // samples 0, 3, 6, 9, 12 of 15 taken
  EXPECT_DOUBLE_EQ(r->stats.max_seconds, 1e-3);
  EXPECT_DOUBLE_EQ(*r->min_clock_hz, 0.9e9);
  EXPECT_DOUBLE_EQ(*r->max_clock_hz, 1.9e9);
}

TEST_F(MeasureTest, AllThrottledIsAnErrorNotAResult) {
  backend_->script().default_clock_hz = 2e9;
  backend_->script().clock_hz = [](int) { return std::optional<double>(1e9); };
  RunSpec spec = Spec();
  spec.measurement.max_samples = 20;
  spec.measurement.timeout_seconds = 0.1;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(MeasureTest, HotBatchesManyShortLaunches) {
  backend_->script().seconds = [](int) { return 1e-5; };
  RunSpec spec = Spec();
  spec.cache_mode = CacheMode::kHot;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->hot_batch_size, 200);  // ceil(2 ms / 10 us)
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 1e-5);
}

TEST_F(MeasureTest, CancellationBetweenSamples) {
  std::atomic<int> polls{0};
  absl::StatusOr<RunResult> r = Measure(Spec(), [&] { return ++polls > 3; });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
}

TEST_F(MeasureTest, WrongOutputFailsVerification) {
  backend_->script().corrupt_output = true;
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->verification.has_value());
  EXPECT_FALSE(r->verification->passed);
  EXPECT_EQ(r->verification->first_mismatch_index, 0);
}

TEST_F(MeasureTest, NoVerificationWhenNotRequested) {
  RunSpec spec = Spec();
  spec.verify = false;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->verification.has_value());
}

TEST(MeasureOnCpu, RealCpuBackendMeasuresAndVerifies) {
  auto backend = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
  RunRequest req;
  req.kernel = "saxpy_sophisticated";
  req.elements = 100003;
  req.measurement.min_samples = 5;
  req.measurement.min_time_seconds = 0.001;
  req.measurement.max_noise = 1.0;
  for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
    req.cache_mode = mode;
    RunSpec spec = *ResolveRunRequest(req, *backend, ServerLimits());
    ParallelPool pool(2);
    absl::StatusOr<RunResult> r = MeasureRun(*backend, spec, [] { return false; }, &pool);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GE(r->stats.count, 5);
    EXPECT_GT(r->stats.median_seconds, 0);
    EXPECT_LE(r->stats.min_seconds, r->stats.median_seconds);
    EXPECT_LE(r->stats.median_seconds, r->stats.max_seconds);
    EXPECT_TRUE(r->verification->passed);
    EXPECT_EQ(r->backend, "cpu");
    EXPECT_FALSE(r->resources.available);
  }
}

}  // namespace
}  // namespace gpubench
