// Kernel durations from CUPTI activity records on a real GPU (ctest label gpu): each cold sample's
// span is positive, never longer than the CUDA events around the same launch, and within a few
// microseconds of them (the events add only the launch behind the blocking kernel); runs report
// which timer produced their samples, and the counter pass still works after a recording run.
#include <gmock/gmock.h>
#include <iostream>
#include <gtest/gtest.h>

#include "kernels/reference.h"
#include "common/status_macros.h"
#include "gpu/cuda_test.h"
#include "server/engine/run_result.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

class TimerGpuTest : public CudaTest {
 protected:
  // A session of `kernel` at `n` elements, as the engine opens one.
  absl::StatusOr<std::unique_ptr<Session>> Open(const std::string& kernel, int64_t n) {
    ASSIGN_OR_RETURN(spec_, ResolveRunRequest(Quick(kernel, n), *backend_, ServerLimits()));
    data_ = GenerateHostData(*spec_.kernel, spec_.shape, 1, &pool_);
    return backend_->Open(spec_.device_index, *spec_.kernel, spec_.geometry, data_);
  }
  RunSpec spec_;
  HostData data_;
};

TEST_F(TimerGpuTest, ColdSpanIsPositiveAndWithinAFewMicrosecondsUnderTheEvents) {
  absl::StatusOr<std::unique_ptr<Session>> session = Open("add_f32", int64_t{16} << 20);
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Warmup(3).ok());
  absl::Status started = s.SetTimer(TimerStrategy::kActivityRecords);
  ASSERT_TRUE(started.ok()) << "CUPTI activity did not start: " << started;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<SampleRecord> sample = s.ColdSample();
    ASSERT_TRUE(sample.ok()) << "sample " << i << ": " << sample.status();
    ASSERT_TRUE(sample->event_seconds.has_value()) << "no events kept for sample " << i;
    const double span = sample->seconds;
    const double events = *sample->event_seconds;
    EXPECT_GT(span, 1e-6) << i;  // a 16Mi f32 add reads and writes 192 MiB: tens of us
    // cudaEventElapsedTime resolves about 0.5 us: allow that much above the events.
    EXPECT_LE(span, events + 0.5e-6) << i;
    EXPECT_LT(events - span, 5e-6) << "events " << events << " s, span " << span << " s";
    EXPECT_TRUE(sample->clock_hz.has_value()) << "the blocking kernel still reads the clock";
  }
  ASSERT_TRUE(s.SetTimer(TimerStrategy::kBackendClock).ok());
  absl::StatusOr<SampleRecord> after = s.ColdSample();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE(after->event_seconds.has_value());  // events are the samples again
}

TEST_F(TimerGpuTest, RunsSayWhichTimerTimedThem) {
  RunRequest r = Quick("add_f32", int64_t{16} << 20);
  r.measurement.timer = TimerChoice::kCupti;
  absl::StatusOr<RunResult> cupti = Run(r);
  ASSERT_TRUE(cupti.ok()) << cupti.status();
  EXPECT_EQ(cupti->timer, SampleTimer::kCuptiActivity)
      << (cupti->notes.empty() ? "" : cupti->notes[0]);
  ASSERT_TRUE(cupti->event_median_seconds.has_value());
  EXPECT_GT(cupti->stats.median_seconds, 0);
  EXPECT_LE(cupti->stats.median_seconds, *cupti->event_median_seconds + 0.5e-6);
  EXPECT_LT(*cupti->event_median_seconds - cupti->stats.median_seconds, 5e-6);

  r.measurement.timer = TimerChoice::kEvents;
  absl::StatusOr<RunResult> events = Run(r);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->timer, SampleTimer::kCudaEvent);
  EXPECT_FALSE(events->event_median_seconds.has_value());

  r.cache_mode = CacheMode::kHot;  // auto: hot batches stay on events
  r.measurement.timer = TimerChoice::kAuto;
  absl::StatusOr<RunResult> hot = Run(r);
  ASSERT_TRUE(hot.ok()) << hot.status();
  EXPECT_EQ(hot->timer, SampleTimer::kCudaEvent);
  r.measurement.timer = TimerChoice::kCupti;  // cupti: the batch's span
  absl::StatusOr<RunResult> hot_cupti = Run(r);
  ASSERT_TRUE(hot_cupti.ok()) << hot_cupti.status();
  EXPECT_EQ(hot_cupti->timer, SampleTimer::kCuptiActivity);
  EXPECT_LE(hot_cupti->stats.median_seconds, *hot_cupti->event_median_seconds + 0.5e-6);
}

// The gpu__time_duration counter (timer gpu_time): each sample is the kernel's own duration, inside
// the events around the same launch (which, under the profiler, also hold its overhead), cold and
// hot; nothing once stopped.
TEST_F(TimerGpuTest, TimeCounterIsPositiveAndInsideTheEvents) {
  absl::StatusOr<std::unique_ptr<Session>> session = Open("add_f32", int64_t{16} << 20);
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Warmup(3).ok());
  absl::Status started = s.SetTimer(TimerStrategy::kTimeCounter);
  ASSERT_TRUE(started.ok()) << "the range profiler did not start: " << started;
  for (int i = 0; i < 20; ++i) {
    const bool cold = i % 2 == 0;
    absl::StatusOr<SampleRecord> sample = cold ? s.ColdSample() : s.HotSample(1);
    ASSERT_TRUE(sample.ok()) << "sample " << i << ": " << sample.status();
    ASSERT_TRUE(sample->event_seconds.has_value()) << "no events kept for sample " << i;
    const double duration = sample->seconds;
    EXPECT_GT(duration, 10e-6) << i;  // a 16Mi f32 add moves 192 MiB: tens of us
    EXPECT_LT(duration, 1e-3) << i;
    EXPECT_LE(duration, *sample->event_seconds + 0.5e-6)
        << "events " << *sample->event_seconds << " s, counter " << duration;
    EXPECT_FALSE(sample->clock_hz.has_value());  // no blocking kernel, no clock
  }
  ASSERT_TRUE(s.SetTimer(TimerStrategy::kBackendClock).ok());
  absl::StatusOr<SampleRecord> after = s.ColdSample();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE(after->event_seconds.has_value());
}

// Runs under gpu_time: the counter's median sits under the event-timed one of the same kernel (the
// events add the launch behind the blocking kernel) by a few microseconds at most; hot samples are
// one launch; a library launch (CUB) is measured; the counter pass works afterwards.
TEST_F(TimerGpuTest, GpuTimeRunsAgreeWithTheEventsLessTheLaunch) {
  RunRequest r = Quick("add_f32x4", int64_t{16} << 20);
  r.measurement.min_samples = 50;  // medians steady to well under the ~1.4 us compared
  r.measurement.timer = TimerChoice::kEvents;
  absl::StatusOr<RunResult> events = Run(r);
  ASSERT_TRUE(events.ok()) << events.status();
  r.measurement.timer = TimerChoice::kGpuTime;
  absl::StatusOr<RunResult> counter = Run(r);
  ASSERT_TRUE(counter.ok()) << counter.status();
  EXPECT_EQ(counter->timer, SampleTimer::kGpuTimeDuration);
  EXPECT_THAT(counter->method, HasSubstr("gpu__time_duration"));
  EXPECT_LT(counter->stats.median_seconds, events->stats.median_seconds);
  EXPECT_LT(events->stats.median_seconds - counter->stats.median_seconds, 5e-6)
      << "events " << events->stats.median_seconds << " s, counter "
      << counter->stats.median_seconds << " s";

  r.cache_mode = CacheMode::kHot;
  absl::StatusOr<RunResult> hot = Run(r);
  ASSERT_TRUE(hot.ok()) << hot.status();
  EXPECT_EQ(hot->timer, SampleTimer::kGpuTimeDuration);
  EXPECT_EQ(hot->hot_batch_size, 1);
  EXPECT_GT(hot->stats.median_seconds, 1e-6);

  RunRequest cub = Quick("cub_add_f32", int64_t{16} << 20);
  cub.measurement.timer = TimerChoice::kGpuTime;
  cub.profile = true;  // and the counter pass after it
  absl::StatusOr<RunResult> library = Run(cub);
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_EQ(library->timer, SampleTimer::kGpuTimeDuration);
  EXPECT_GT(library->stats.median_seconds, 1e-6);
  if (!library->counters.achieved_occupancy.has_value()) {
    EXPECT_THAT(library->counters.unavailable_reason,
                ::testing::Not(HasSubstr("profiling conflict")));
  }
}

// A launch that runs no kernel (cudaMemcpyAsync device to device) has no counter value: the run
// says so (UNAVAILABLE) rather than mixing clocks; where the driver copies with a kernel, it is
// measured like one.
TEST_F(TimerGpuTest, GpuTimeOfACopyIsMeasuredOrRefusedWithTheReason) {
  RunRequest r = Quick("copy_d2d", int64_t{16} << 20);
  r.measurement.timer = TimerChoice::kGpuTime;
  absl::StatusOr<RunResult> result = Run(r);
  if (result.ok()) {
    EXPECT_EQ(result->timer, SampleTimer::kGpuTimeDuration);
    EXPECT_GT(result->stats.median_seconds, 1e-6);
    std::cout << "copy_d2d under gpu_time: measured, median " << result->stats.median_seconds
              << " s\n";
  } else {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
    EXPECT_THAT(result.status().message(), HasSubstr("measured no kernel"));
    std::cout << "copy_d2d under gpu_time: " << result.status() << "\n";
  }
}

// Library launches (CUB), copies (a memcpy record, not a kernel) and several kernels per launch
// are spans too.
TEST_F(TimerGpuTest, LibraryAndCopyLaunchesHaveSpans) {
  for (const char* kernel : {"cub_add_f32", "copy_d2d", "add_f16x8_pack"}) {
    RunRequest r = Quick(kernel, int64_t{16} << 20);
    r.measurement.timer = TimerChoice::kCupti;
    absl::StatusOr<RunResult> result = Run(r);
    ASSERT_TRUE(result.ok()) << kernel << ": " << result.status();
    EXPECT_EQ(result->timer, SampleTimer::kCuptiActivity) << kernel;
    EXPECT_GT(result->stats.median_seconds, 1e-6) << kernel;
    EXPECT_LE(result->stats.median_seconds, *result->event_median_seconds + 0.5e-6) << kernel;
  }
}

// The counter profiler and activity recording share CUPTI one at a time: a recording run followed
// by a counter pass in the same process gets counters (or a reason that is not a conflict).
TEST_F(TimerGpuTest, CounterPassAfterRecording) {
  RunRequest r = Quick("add_f32", int64_t{16} << 20);
  r.profile = true;
  r.measurement.timer = TimerChoice::kCupti;
  absl::StatusOr<RunResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->timer, SampleTimer::kCuptiActivity);
  if (!result->counters.achieved_occupancy.has_value()) {
    EXPECT_THAT(result->counters.unavailable_reason,
                ::testing::Not(HasSubstr("profiling conflict")));
    EXPECT_THAT(result->counters.unavailable_reason,
                ::testing::Not(HasSubstr("another profiler")));
  }
  RunRequest next = Quick("add_f32", int64_t{1} << 20);
  next.measurement.timer = TimerChoice::kCupti;
  absl::StatusOr<RunResult> again = Run(next);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->timer, SampleTimer::kCuptiActivity);  // recording restarts after the pass
}

}  // namespace
}  // namespace gpubench
