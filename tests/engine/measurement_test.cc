#include "server/engine/measurement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <thread>

#include "engine/fake_backend.h"
#include "server/engine/resolve.h"

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
  // What the fake backend counts and records, pointed to by its script: members declared before
  // backend_, so they outlive it (a test's local would dangle in the script once the test ends).
  std::atomic<int> unblocked_{0};
  std::vector<std::string> ranges_;
  std::vector<int64_t> opened_pads_;
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

// The phases are measured and disjoint: sampling holds the sampling loop, and together they fit
// in the run's wall time (the fake backend's run takes under a millisecond, so no lower bound).
TEST_F(MeasureTest, PhasesAccountForTheRunsWallTime) {
  const absl::Time start = absl::Now();
  absl::StatusOr<RunResult> r = Measure(Spec());
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  ASSERT_TRUE(r.ok()) << r.status();
  const RunPhases& p = r->phases;
  for (double s : {p.host_inputs_seconds, p.open_seconds, p.sampling_seconds,
                   p.verification_seconds, p.counters_seconds, p.release_seconds}) {
    EXPECT_GE(s, 0);
  }
  EXPECT_GE(p.sampling_seconds, r->sampling_wall_seconds);
  EXPECT_GT(p.verification_seconds, 0);  // verified: the launch and its check ran
  const double sum = p.host_inputs_seconds + p.open_seconds + p.sampling_seconds +
                     p.verification_seconds + p.counters_seconds + p.release_seconds;
  EXPECT_LE(sum, wall);
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
  // Ever slower samples: the noise estimate never settles, so only the timeout ends the run.
  backend_->script().seconds = [](int i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return 1e-3 * std::exp(0.05 * i);
  };
  RunSpec spec = Spec();
  spec.measurement.timeout_seconds = 0.2;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->noise_reached);
  EXPECT_EQ(r->stop_rule, StopRule::kTimeout);
  EXPECT_NE(r->stop_reason.find("timeout"), std::string::npos);
}

TEST_F(MeasureTest, StableNoiseAboveTheTargetStopsByConvergence) {
  // 1 ms / 2 ms alternating: 33% noise, never under 0.5%, but stable: no 30 s timeout.
  backend_->script().seconds = [](int i) { return i % 2 ? 2e-3 : 1e-3; };
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stop_rule, StopRule::kNoiseConverged) << r->stop_reason;
  EXPECT_FALSE(r->noise_reached);
  EXPECT_LT(r->stats.count, 2000);
  EXPECT_TRUE(r->noise_known);
}

TEST_F(MeasureTest, ThrottledSamplesPauseForRecovery) {
  backend_->script().default_clock_hz = 2e9;
  backend_->script().clock_hz = [](int i) { return std::optional<double>(i < 4 ? 1e9 : 2e9); };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<RunResult> r = Measure(Spec());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->throttled_samples, 4);
  EXPECT_EQ(r->samples_taken, 14);
  EXPECT_EQ(r->stats.count, 10);
  // 0.05 + 0.05 + 0.05 s, then the pause grows (third throttle in a row): + 0.125 s.
  EXPECT_GE(wall, 0.05 * 3 + 0.125);
}

TEST_F(MeasureTest, ProfileModeRunsExactlyNPlainLaunches) {
  backend_->script().unblocked_samples = &unblocked_;
  backend_->script().seconds = [](int i) { return (i + 1) * 1e-3; };
  RunSpec spec = Spec();
  spec.measurement.profile_runs = 7;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(unblocked_.load(), 7);
  EXPECT_TRUE(r->profile_mode);
  EXPECT_EQ(r->stop_rule, StopRule::kProfileRuns);
  EXPECT_EQ(r->stats.count, 7);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 4e-3);
  EXPECT_TRUE(r->notes.empty());
  ASSERT_TRUE(r->verification.has_value());
  EXPECT_TRUE(r->verification->passed);
}

TEST_F(MeasureTest, BlockingKernelTimeoutFallsBackToProfileModeWithANote) {
  backend_->script().blocking_timeout = true;
  backend_->script().unblocked_samples = &unblocked_;
  for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
    unblocked_ = 0;
    RunSpec spec = Spec();
    spec.cache_mode = mode;
    spec.measurement.timer = TimerChoice::kEvents;  // no "CUPTI unavailable" note from the fake
    absl::StatusOr<RunResult> r = Measure(spec);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->profile_mode);
    EXPECT_EQ(r->stop_rule, StopRule::kProfileRuns);
    EXPECT_EQ(unblocked_.load(), spec.measurement.min_samples);
    EXPECT_EQ(r->stats.count, spec.measurement.min_samples);
    EXPECT_EQ(r->hot_batch_size, 1);
    ASSERT_EQ(r->notes.size(), 1u);
    EXPECT_NE(r->notes[0].find("blocking kernel timed out"), std::string::npos) << r->notes[0];
    EXPECT_NE(r->notes[0].find("profile_runs"), std::string::npos) << r->notes[0];
  }
}

TEST_F(MeasureTest, OtherSampleErrorsStillFail) {
  backend_->script().sample_error = absl::InternalError("launch failed");
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
}

TEST_F(MeasureTest, OneSampleIsLabelledNoiseUnknownNeverZero) {
  backend_->script().seconds = [](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 1e-3;
  };
  RunSpec spec = Spec();
  spec.measurement.timeout_seconds = 0.001;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.count, 1);
  EXPECT_FALSE(r->noise_known);
  EXPECT_TRUE(r->below_min_samples);
  EXPECT_FALSE(r->noise_reached);
  EXPECT_EQ(r->stop_rule, StopRule::kTimeout);
  EXPECT_NE(r->stop_reason.find("min_samples 10 not reached"), std::string::npos) << r->stop_reason;
}

TEST_F(MeasureTest, SamplesOnRequestAndPercentiles) {
  backend_->script().seconds = [](int i) { return (1 + i % 5) * 1e-3; };
  RunSpec spec = Spec();
  spec.measurement.max_samples = 50;
  spec.measurement.keep_samples = true;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sample_count, r->stats.count);
  ASSERT_EQ(r->sample_seconds.size(), static_cast<size_t>(r->stats.count));
  EXPECT_DOUBLE_EQ(r->sample_seconds[0], 1e-3);
  EXPECT_DOUBLE_EQ(r->sample_seconds[1], 2e-3);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 3e-3);
  EXPECT_DOUBLE_EQ(r->stats.p5_seconds, 1e-3);
  EXPECT_DOUBLE_EQ(r->stats.p95_seconds, 5e-3);
  spec.measurement.keep_samples = false;
  r = Measure(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->sample_seconds.empty());
}

TEST(StrideSamples, BoundedEvenlyAndInOrder) {
  std::vector<double> v(25000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  const std::vector<double> s = StrideSamples(v, kMaxReturnedSamples);
  ASSERT_EQ(s.size(), 10000u);
  EXPECT_EQ(s.front(), 0);
  EXPECT_EQ(s[1], 2);  // stride 2.5: 0, 2, 5, 7, ...
  EXPECT_EQ(s[2], 5);
  EXPECT_GE(s.back(), 24997);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(StrideSamples({1, 2, 3}, 10).size(), 3u);
}

TEST_F(MeasureTest, EveryRunIsANamedRange) {
  backend_->script().ranges = &ranges_;
  absl::StatusOr<RunResult> r = Measure(Spec("add_f32", 4096));
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(ranges_.empty());
  EXPECT_EQ(ranges_[0], "gpubench add_f32 n=4096 cold run " + r->run_id);
  EXPECT_EQ(ranges_[0], RunRangeName(r->spec, r->run_id));
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

TEST_F(MeasureTest, ThrottleThresholdZeroKeepsEverySampleAndCountsTheSlowClocks) {
  backend_->script().default_clock_hz = 1.98e9;
  backend_->script().clock_hz = [](int i) { return std::optional<double>(i % 3 == 0 ? 0.9e9 : 1.9e9); };
  backend_->script().seconds = [](int i) { return i % 3 == 0 ? 5e-3 : 1e-3; };
  RunSpec spec = Spec();
  spec.measurement.throttle_threshold = 0;
  spec.measurement.max_samples = 12;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->throttled_samples, 0);
  EXPECT_EQ(r->samples_taken, r->stats.count);
  EXPECT_EQ(r->low_clock_samples, (r->samples_taken + 2) / 3);  // samples 0, 3, 6, ...
  EXPECT_GT(r->low_clock_samples, 0);
  EXPECT_DOUBLE_EQ(r->stats.max_seconds, 5e-3);  // the slow-clock samples are in the statistics
  EXPECT_DOUBLE_EQ(*r->min_clock_hz, 0.9e9);
  EXPECT_DOUBLE_EQ(*r->max_clock_hz, 1.9e9);
}

TEST_F(MeasureTest, ThrottleThresholdSetsWhereSamplesAreDiscarded) {
  backend_->script().default_clock_hz = 2e9;
  // 1.2 GHz (60%) every third sample, 0.8 GHz (40%) every fifth, else 2 GHz.
  backend_->script().clock_hz = [](int i) {
    return std::optional<double>(i % 5 == 0 ? 0.8e9 : i % 3 == 0 ? 1.2e9 : 2e9);
  };
  RunSpec spec = Spec();
  spec.measurement.throttle_threshold = 0.5;  // discards the 40% samples only
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  int below_half = 0, below_75 = 0;
  for (int i = 0; i < r->samples_taken; ++i) {
    below_half += i % 5 == 0 ? 1 : 0;
    below_75 += i % 5 == 0 || i % 3 == 0 ? 1 : 0;
  }
  EXPECT_EQ(r->throttled_samples, below_half);
  EXPECT_EQ(r->low_clock_samples, below_75);
  EXPECT_EQ(r->stats.count, r->samples_taken - below_half);
  EXPECT_DOUBLE_EQ(*r->min_clock_hz, 0.8e9);
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

// Every phase of a run sees cancellation. Cancelling at the k-th poll, for
// every k until the run completes, ends the run in each phase in turn.
TEST_F(MeasureTest, EveryPhaseHonoursCancellation) {
  RunSpec spec = Spec();
  spec.measurement.warmup_launches = 3;
  spec.profile = true;
  std::set<std::string> phases;
  for (int k = 1; k < 1000; ++k) {
    int polls = 0;
    absl::StatusOr<RunResult> r = Measure(spec, [&] { return ++polls >= k; });
    if (r.ok()) break;
    ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    phases.insert(std::string(r.status().message()));
  }
  for (const char* phase : {"run cancelled during warm-up", "run cancelled while sampling",
                            "run cancelled before verification", "run cancelled before profiling"}) {
    EXPECT_TRUE(phases.count(phase)) << phase;
  }
}

// max_duty: the fake's samples report 4 ms of timed work and take no wall time, so unpaced the
// loop's duty is far above 1; paced, the loop sleeps until timed <= max_duty x wall after every
// sample (a late wake-up only lowers the duty, and the next sleep makes up for it).
TEST_F(MeasureTest, MaxDutyPacesTheSamplingLoop) {
  backend_->script().seconds = [](int) { return 4e-3; };
  RunSpec spec = Spec();
  spec.measurement.max_samples = 25;
  spec.measurement.min_samples = 25;
  absl::StatusOr<RunResult> unpaced = Measure(spec);
  ASSERT_TRUE(unpaced.ok()) << unpaced.status();
  EXPECT_GT(unpaced->duty_cycle, 1.5);  // today's behaviour: no sleeps
  EXPECT_LT(unpaced->sampling_wall_seconds, 0.05);

  for (double max_duty : {0.8, 0.4}) {
    spec.measurement.max_duty = max_duty;
    absl::StatusOr<RunResult> r = Measure(spec);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->samples_taken, 25);
    EXPECT_NEAR(r->measured_seconds, 25 * 4e-3, 1e-9);
    EXPECT_DOUBLE_EQ(r->duty_cycle, r->measured_seconds / r->sampling_wall_seconds);
    EXPECT_LE(r->duty_cycle, max_duty + 1e-9) << max_duty;
    EXPECT_GE(r->duty_cycle, max_duty * 0.75) << "paced far below max_duty " << max_duty;
  }
}

TEST_F(MeasureTest, MaxDutyCountsDiscardedSamples) {
  // Throttled samples kept the GPU busy too: the duty counts every sample's timed seconds.
  backend_->script().default_clock_hz = 2e9;
  backend_->script().clock_hz = [](int i) { return std::optional<double>(i < 2 ? 1e9 : 2e9); };
  backend_->script().seconds = [](int) { return 0.01; };
  RunSpec spec = Spec();
  spec.measurement.max_duty = 0.5;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->throttled_samples, 2);
  EXPECT_EQ(r->samples_taken, 12);
  EXPECT_NEAR(r->measured_seconds, 0.1, 1e-9);  // the kept ones
  EXPECT_NEAR(r->duty_cycle, 0.12 / r->sampling_wall_seconds, 1e-9);
  EXPECT_LE(r->duty_cycle, 0.5 + 1e-9);
}

TEST_F(MeasureTest, MaxDutyNeverPacesPastTheTimeout) {
  backend_->script().seconds = [](int) { return 0.05; };
  RunSpec spec = Spec();
  spec.measurement.max_duty = 0.01;  // 5 s of pacing after the first sample
  spec.measurement.timeout_seconds = 0.3;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<RunResult> r = Measure(spec);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop_rule, StopRule::kTimeout) << r->stop_reason;
  EXPECT_EQ(r->samples_taken, 1);
  EXPECT_GE(r->sampling_wall_seconds, 0.3);
  EXPECT_LT(wall, 2.0);
  EXPECT_GT(r->duty_cycle, 0.01);  // the pause the timeout cut short: over max_duty, and said so
  EXPECT_NEAR(r->duty_cycle, 0.05 / r->sampling_wall_seconds, 1e-9);
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& note) {
    return note.find("above max_duty 0.01: the timeout (0.3 s) cut the last pacing") !=
           std::string::npos;
  }));
}

TEST_F(MeasureTest, MaxDutyPacingSeesCancellation) {
  backend_->script().seconds = [](int) { return 1.0; };  // 1 s timed: 9 s of pacing at 0.1
  RunSpec spec = Spec();
  spec.measurement.max_duty = 0.1;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Cancelled after 0.2 s: the phases before sampling take far less, the first pacing 9 s.
  absl::StatusOr<RunResult> r = Measure(spec, [&] { return elapsed() > 0.2; });
  const double wall = elapsed();
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_EQ(r.status().message(), "run cancelled while pacing to max_duty");
  EXPECT_LT(wall, 2.0);
}

// The run's placement pad reaches the backend's Open (HostData), where the CUDA backend places
// the buffers; a backend that pads (the fake is a CUDA device) adds no note.
TEST_F(MeasureTest, PlacementPadReachesTheBackend) {
  backend_->script().opened_placement_pads = &opened_pads_;
  RunSpec spec = Spec();
  ASSERT_EQ(spec.measurement.placement_pad_bytes, 0);
  spec.measurement.placement_pad_bytes = int64_t{34} << 20;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->verification->passed);
  EXPECT_EQ(r->notes.size(), 0u);
  EXPECT_EQ(r->spec.measurement.placement_pad_bytes, int64_t{34} << 20);  // for the echo
  ASSERT_TRUE(Measure(Spec()).ok());
  EXPECT_EQ(opened_pads_, (std::vector<int64_t>{int64_t{34} << 20, 0}));
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

namespace gpubench {
namespace {

// The CPU backend's buffers are host memory it never pads: a run that asks for a pad measures as
// without one and says so in a note; without a pad there is no note.
TEST(MeasureOnCpu, PlacementPadIsIgnoredWithANote) {
  auto backend = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
  RunRequest req;
  req.kernel = "add_f32";
  req.elements = 300000;  // 1.2 MB buffers: padded on a CUDA device
  req.measurement.min_samples = 3;
  req.measurement.min_time_seconds = 0.001;
  req.measurement.max_noise = 1.0;
  ParallelPool pool(2);
  for (int64_t pad : {int64_t{0}, int64_t{34} << 20}) {
    req.measurement.placement_pad_bytes = pad;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(req, *backend, ServerLimits());
    ASSERT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<RunResult> r = MeasureRun(*backend, *spec, [] { return false; }, &pool);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->verification->passed);
    EXPECT_EQ(r->spec.measurement.placement_pad_bytes, pad);  // echoed as asked
    const bool noted = std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
      return n ==
             "placement_pad_bytes = 35651584 has no effect on the cpu backend: it pads only "
             "CUDA device buffers";
    });
    EXPECT_EQ(noted, pad > 0) << pad;
  }
}

// Placements rotate CUDA device buffers only: the CPU backend measures one copy, echoes the
// request and says so in a note.
TEST(MeasureOnCpu, PlacementsAreIgnoredWithANote) {
  auto backend = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
  RunRequest req;
  req.kernel = "add_f32";
  req.elements = 3000;
  req.measurement.min_samples = 3;
  req.measurement.min_time_seconds = 0.001;
  req.measurement.max_noise = 1.0;
  ParallelPool pool(2);
  for (int placements : {0, 4}) {
    req.measurement.placements = placements;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(req, *backend, ServerLimits());
    ASSERT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<RunResult> r = MeasureRun(*backend, *spec, [] { return false; }, &pool);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->verification->passed);
    EXPECT_EQ(r->spec.measurement.placements, placements == 0 ? 1 : placements);
    const bool noted = std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
      return n ==
             "placements = 4 has no effect on the cpu backend: it rotates only CUDA device "
             "buffers";
    });
    EXPECT_EQ(noted, placements > 1) << placements;
  }
}

TEST(MeasureOnCpu, ProfileModeOnTheCpuBackend) {
  auto backend = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
  RunRequest req;
  req.kernel = "add_f32";
  req.elements = 50000;
  req.measurement.profile_runs = 6;
  for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
    req.cache_mode = mode;
    RunSpec spec = *ResolveRunRequest(req, *backend, ServerLimits());
    ParallelPool pool(2);
    absl::StatusOr<RunResult> r = MeasureRun(*backend, spec, [] { return false; }, &pool);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->profile_mode);
    EXPECT_EQ(r->stop_rule, StopRule::kProfileRuns);
    EXPECT_EQ(r->stats.count, 6);
    EXPECT_EQ(r->samples_taken, 6);
    EXPECT_EQ(r->hot_batch_size, 1);
    EXPECT_TRUE(r->noise_known);
    EXPECT_FALSE(r->below_min_samples);  // min_samples does not apply to a fixed run count
    EXPECT_GT(r->stats.min_seconds, 0);
    ASSERT_TRUE(r->verification.has_value());
    EXPECT_TRUE(r->verification->passed);
  }
}

}  // namespace
}  // namespace gpubench
