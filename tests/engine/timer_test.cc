// The sample timer (MeasurementOptions.timer): kernel durations from the session (CUPTI activity
// on CUDA) for cold samples under auto, for every sample under cupti, never under events; the
// event-timed median kept as a cross-check; fallbacks that never mix the two clocks; and the CPU
// backend's steady clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "engine/fake_backend.h"
#include "kernels/cpu_backend.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"
#include "server/engine/run_result.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

class TimerTest : public ::testing::Test {
 protected:
  TimerTest() {
    // Events see 10 us per launch; the kernels' own timestamps 9 us (the launch overhead apart).
    backend_->script().seconds = [](int) { return 10e-6; };
    backend_->script().kernel_seconds = [](int) { return std::optional<double>(9e-6); };
    backend_->script().kernel_duration_starts = &starts_;
    backend_->script().kernel_duration_source = &source_;
  }
  RunSpec Spec(TimerChoice timer, CacheMode mode = CacheMode::kCold) {
    RunRequest r;
    r.kernel = "add_f32";
    r.elements = 4096;
    r.seed = 7;
    r.cache_mode = mode;
    r.measurement.min_samples = 20;
    r.measurement.max_samples = 20;
    r.measurement.min_time_seconds = 1e-6;
    r.measurement.timer = timer;
    return *ResolveRunRequest(r, *backend_, ServerLimits());
  }
  absl::StatusOr<RunResult> Measure(const RunSpec& spec) {
    absl::StatusOr<RunResult> r = MeasureRun(*backend_, spec, [] { return false; }, &pool_);
    return r;
  }
  std::unique_ptr<testing::FakeBackend> backend_ =
      std::make_unique<testing::FakeBackend>(testing::FakeScript{});
  std::atomic<int> starts_{0};
  std::optional<TimerStrategy> source_;
  ParallelPool pool_{2};
};

TEST_F(TimerTest, CuptiTimesColdSamplesByKernelDurationsAndKeepsTheEventMedian) {
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kCupti));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timer, SampleTimer::kCuptiActivity);
  EXPECT_STREQ(SampleTimerName(r->timer), "cupti_activity");
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 9e-6);
  ASSERT_TRUE(r->event_median_seconds.has_value());
  EXPECT_DOUBLE_EQ(*r->event_median_seconds, 10e-6);
  EXPECT_NEAR(r->measured_seconds, 20 * 9e-6, 1e-12);
  EXPECT_THAT(r->method, HasSubstr("(kernel durations)"));
  EXPECT_TRUE(r->notes.empty());
  EXPECT_EQ(starts_.load(), 1);
}

TEST_F(TimerTest, AutoKeepsPageableCopiesOnEvents) {
  // Timed without the blocking kernel: their time includes host-side staging no record covers.
  RunRequest r;
  r.kernel = "copy_h2d_pageable";
  r.elements = 4096;
  r.measurement.min_samples = 5;
  r.measurement.min_time_seconds = 1e-6;
  absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *backend_, ServerLimits());
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_FALSE(spec->kernel->family->blocking_kernel);
  absl::StatusOr<RunResult> result = Measure(*spec);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->timer, SampleTimer::kCudaEvent);
  EXPECT_EQ(starts_.load(), 0);
  spec->measurement.timer = TimerChoice::kCupti;  // asked for: the span of the copies' records
  result = Measure(*spec);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->timer, SampleTimer::kCuptiActivity);
}

TEST_F(TimerTest, AutoKeepsHotBatchesOnEvents) {
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kAuto, CacheMode::kHot));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timer, SampleTimer::kCudaEvent);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 10e-6);
  EXPECT_FALSE(r->event_median_seconds.has_value());
  EXPECT_EQ(starts_.load(), 0);
  EXPECT_THAT(r->method, ::testing::Not(HasSubstr("kernel durations")));
}

TEST_F(TimerTest, CuptiTimesHotBatchesByTheirSpanPerLaunch) {
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kCupti, CacheMode::kHot));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->hot_batch_size, 1);
  EXPECT_EQ(r->timer, SampleTimer::kCuptiActivity);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 9e-6);  // the batch's span / launches
  EXPECT_DOUBLE_EQ(*r->event_median_seconds, 10e-6);
}

TEST_F(TimerTest, EventsNeverStartKernelDurations) {
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kEvents));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timer, SampleTimer::kCudaEvent);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 10e-6);
  EXPECT_EQ(starts_.load(), 0);
}

// Auto is CUDA events, cold and hot: CUPTI tracing slowed large-grid kernels on the H200.
TEST_F(TimerTest, AutoIsCudaEventsAndNeverStartsKernelDurations) {
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kAuto));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timer, SampleTimer::kCudaEvent);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 10e-6);
  EXPECT_FALSE(r->event_median_seconds.has_value());
  EXPECT_TRUE(r->notes.empty());
  EXPECT_EQ(starts_.load(), 0);
}

TEST_F(TimerTest, CuptiWithoutCuptiIsAFailedPrecondition) {
  backend_->script().kernel_seconds = nullptr;
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kCupti));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("timer = cupti"));
}

TEST_F(TimerTest, CuptiFailsWhenARecordIsMissing) {
  backend_->script().kernel_seconds = [](int i) {
    return i == 3 ? std::nullopt : std::optional<double>(9e-6);
  };
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kCupti));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("sample 4"));
}

// gpu_time: the session's time counter for every sample, hot samples one launch each (the profiler
// serializes launches), no event median (the events then include the profiler's work), and a note
// that the throttle check had no clock.
TEST_F(TimerTest, GpuTimeTimesEverySampleByTheCounterOneLaunchAtATime) {
  for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
    source_.reset();
    absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kGpuTime, mode));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(source_, TimerStrategy::kTimeCounter);
    EXPECT_EQ(r->timer, SampleTimer::kGpuTimeDuration);
    EXPECT_STREQ(SampleTimerName(r->timer), "gpu_time_duration");
    EXPECT_EQ(r->hot_batch_size, 1);
    EXPECT_DOUBLE_EQ(r->stats.median_seconds, 9e-6);
    EXPECT_FALSE(r->event_median_seconds.has_value());
    EXPECT_THAT(r->method, HasSubstr("(time counter)"));
    ASSERT_EQ(r->notes.size(), 1u);
    EXPECT_THAT(r->notes[0], HasSubstr("throttled samples were not detected"));
  }
  EXPECT_EQ(starts_.load(), 2);
  source_.reset();
  ASSERT_TRUE(Measure(Spec(TimerChoice::kCupti)).ok());
  EXPECT_EQ(source_, TimerStrategy::kActivityRecords);
}

TEST_F(TimerTest, GpuTimeWithoutTheCounterIsAFailedPrecondition) {
  backend_->script().kernel_seconds = nullptr;
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kGpuTime));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("timer = gpu_time"));
  EXPECT_THAT(r.status().message(), HasSubstr("gpu__time_duration"));
}

TEST_F(TimerTest, GpuTimeFailsWhenASampleRanNoKernel) {
  backend_->script().kernel_seconds = [](int i) {
    return i == 2 ? std::nullopt : std::optional<double>(9e-6);
  };
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kGpuTime));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("measured no kernel in sample 3"));
}

TEST_F(TimerTest, DurationsLongerThanTheEventsAreFlagged) {
  backend_->script().kernel_seconds = [](int) { return std::optional<double>(12e-6); };
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kCupti));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timer, SampleTimer::kCuptiActivity);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_THAT(r->notes[0], HasSubstr("cross-check"));
}

TEST_F(TimerTest, ThrottledSamplesCountInNeitherClock) {
  // Samples 0-2 throttled with slow event and kernel times; they must not reach either median.
  backend_->script().default_clock_hz = 1e9;
  backend_->script().clock_hz = [](int i) { return std::optional<double>(i < 3 ? 0.5e9 : 1e9); };
  backend_->script().seconds = [](int i) { return i < 3 ? 1.0 : 10e-6; };
  backend_->script().kernel_seconds = [](int i) {
    if (i == 5) return std::optional<double>();  // auto records none; cupti would fail here
    return std::optional<double>(i < 3 ? 0.9 : 9e-6);
  };
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kAuto));  // events
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->throttled_samples, 3);
  EXPECT_EQ(r->timer, SampleTimer::kCudaEvent);
  EXPECT_EQ(r->stats.count, 20);
  EXPECT_DOUBLE_EQ(r->stats.max_seconds, 10e-6);
  EXPECT_EQ(r->samples_taken, 23);

  backend_->script().kernel_seconds = [](int i) {
    return std::optional<double>(i % 23 < 3 ? 0.9 : 9e-6);
  };
  backend_->script().clock_hz = [](int i) {
    return std::optional<double>(i % 23 < 3 ? 0.5e9 : 1e9);
  };
  backend_->script().seconds = [](int i) { return i % 23 < 3 ? 1.0 : 10e-6; };
  r = Measure(Spec(TimerChoice::kCupti));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timer, SampleTimer::kCuptiActivity);
  EXPECT_DOUBLE_EQ(r->stats.max_seconds, 9e-6);
  EXPECT_DOUBLE_EQ(*r->event_median_seconds, 10e-6);
}

TEST_F(TimerTest, ProfileFallbackIsTimedByEvents) {
  backend_->script().blocking_timeout = true;
  absl::StatusOr<RunResult> r = Measure(Spec(TimerChoice::kAuto));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->profile_mode);
  EXPECT_EQ(r->timer, SampleTimer::kCudaEvent);
  EXPECT_FALSE(r->event_median_seconds.has_value());
}

TEST_F(TimerTest, CuptiWithProfileRunsIsRefusedAtResolve) {
  RunRequest r;
  r.kernel = "add_f32";
  r.elements = 4096;
  r.measurement.profile_runs = 3;
  for (TimerChoice timer : {TimerChoice::kCupti, TimerChoice::kGpuTime}) {
    r.measurement.timer = timer;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *backend_, ServerLimits());
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(spec.status().message(),
                HasSubstr(absl::StrCat("timer = ", TimerChoiceName(timer), " with profile_runs")));
  }
  r.measurement.timer = TimerChoice::kAuto;
  EXPECT_TRUE(ResolveRunRequest(r, *backend_, ServerLimits()).ok());
}

TEST(TimerOnCpu, AutoAndEventsAreTheSteadyClockAndCuptiIsRefused) {
  auto backend = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  RunRequest req;
  req.kernel = "add_f32";
  req.elements = 4096;
  req.measurement.min_samples = 3;
  req.measurement.min_time_seconds = 1e-6;
  req.measurement.max_noise = 1.0;
  ParallelPool pool(1);
  for (TimerChoice timer : {TimerChoice::kAuto, TimerChoice::kEvents}) {
    for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
      req.measurement.timer = timer;
      req.cache_mode = mode;
      absl::StatusOr<RunSpec> spec = ResolveRunRequest(req, *backend, ServerLimits());
      ASSERT_TRUE(spec.ok()) << spec.status();
      EXPECT_EQ(spec->measurement.timer, timer);
      absl::StatusOr<RunResult> r = MeasureRun(*backend, *spec, [] { return false; }, &pool);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->timer, SampleTimer::kCpuClock);
      EXPECT_STREQ(SampleTimerName(r->timer), "cpu_clock");
      EXPECT_FALSE(r->event_median_seconds.has_value());
      EXPECT_TRUE(r->notes.empty());
    }
  }
  for (TimerChoice timer : {TimerChoice::kCupti, TimerChoice::kGpuTime}) {
    req.measurement.timer = timer;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(req, *backend, ServerLimits());
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(spec.status().message(), HasSubstr("CPU backend has no CUPTI"));
  }
}

TEST(TimerNames, ChoicesAndTimers) {
  EXPECT_STREQ(TimerChoiceName(TimerChoice::kAuto), "auto");
  EXPECT_STREQ(TimerChoiceName(TimerChoice::kCupti), "cupti");
  EXPECT_STREQ(TimerChoiceName(TimerChoice::kEvents), "events");
  EXPECT_STREQ(TimerChoiceName(TimerChoice::kGpuTime), "gpu_time");
  EXPECT_STREQ(SampleTimerName(SampleTimer::kGpuTimeDuration), "gpu_time_duration");
  EXPECT_STREQ(SampleTimerName(SampleTimer::kCudaEvent), "cuda_event");
}

}  // namespace
}  // namespace gpubench
