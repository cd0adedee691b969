// The integrity checks of user kernels that judge measured figures (server/engine/
// user_kernel_checks.h), without a GPU: the physical floor's DRAM, L2 and FLOP bounds, the launch
// count per timed window and the timer cross-check on recorded windows, and the engine's
// recording of the windows through a scripted session (engine/fake_backend.h).
#include "server/engine/user_kernel_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/fake_backend.h"
#include "kernels/catalog.h"
#include "kernels/user_kernel.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

// An H200 as DescribeDevice reports it: the figures the floors use.
DeviceInfo H200() {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.compute_capability_major = 9;
  d.compute_capability_minor = 0;
  d.multiprocessor_count = 132;
  d.sm_clock_hz = 1.98e9;
  d.l2_cache_bytes = 50 << 20;
  d.peak_bandwidth_bytes_per_second = 4.8e12;
  return d;
}

// A run of `kernel` at `n` elements with the catalog's byte count, as MeasureRun leaves it.
RunResult ResultOf(const KernelVariant* kernel, int64_t n, CacheMode mode, double median) {
  RunResult r;
  r.spec.kernel = kernel;
  r.spec.shape.elements = r.spec.elements = n;
  r.spec.cache_mode = mode;
  r.device = H200();
  r.bytes_moved = BytesMoved(*kernel, r.spec.shape);
  r.stats.median_seconds = median;
  r.timer = SampleTimer::kCudaEvent;
  return r;
}

const KernelVariant* AddF32() { return *FindKernel("add_f32"); }

// ---- physical floor ----------------------------------------------------------------------------

TEST(PhysicalFloor, ColdRunsAreBoundByDramAndTheMessageNamesTheBound) {
  RunResult r = ResultOf(AddF32(), int64_t{16} << 20, CacheMode::kCold, 0);
  const PhysicalFloor f = PhysicalFloorOf(r);
  EXPECT_EQ(f.dram_bytes, 2 * (int64_t{64} << 20));  // the inputs: the write may sit in L2
  EXPECT_EQ(f.l2_bytes, 3 * (int64_t{64} << 20));    // reads and the write cross the SMs' path
  EXPECT_DOUBLE_EQ(f.l2_bytes_per_second, 132 * 1.98e9 * kL2FloorBytesPerSmClock);
  EXPECT_EQ(f.bound, FloorBound::kDram);
  EXPECT_DOUBLE_EQ(f.seconds, f.dram_seconds);
  EXPECT_GT(f.dram_seconds, f.l2_seconds);
  EXPECT_EQ(f.flops, 0);  // elementwise_add counts no FLOP
  r.stats.median_seconds = 0.5 * f.seconds;
  std::string what;
  UserKernelIntegrity figures;
  absl::Status s = CheckPhysicalFloor(r, &what, &figures);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("implausible"));
  EXPECT_THAT(s.message(), HasSubstr("(the dram bound)"));
  EXPECT_THAT(s.message(), HasSubstr("theoretical DRAM peak"));
  EXPECT_THAT(s.message(), HasSubstr("132 SMs"));
  EXPECT_EQ(figures.floor_bound, "dram");
  EXPECT_DOUBLE_EQ(figures.floor_seconds, f.seconds);
  EXPECT_DOUBLE_EQ(figures.l2_floor_seconds, f.l2_seconds);
  r.stats.median_seconds = 1.1 * f.seconds;
  ASSERT_TRUE(CheckPhysicalFloor(r, &what).ok());
  EXPECT_THAT(what, HasSubstr("physical_floor: median"));
}

// A hot working set that fits in L2 needs nothing from DRAM: the L2 floor is the floor.
TEST(PhysicalFloor, HotRunsThatFitInL2AreBoundByTheSmDataPath) {
  RunResult r = ResultOf(AddF32(), int64_t{1} << 20, CacheMode::kHot, 0);  // 12 MiB < 50 MiB
  const PhysicalFloor f = PhysicalFloorOf(r);
  EXPECT_EQ(f.dram_bytes, 0);
  EXPECT_EQ(f.dram_seconds, 0);
  EXPECT_EQ(f.bound, FloorBound::kL2);
  EXPECT_DOUBLE_EQ(f.seconds, (12.0 * (1 << 20)) / (132 * 1.98e9 * 256));
  r.stats.median_seconds = 0.9 * f.seconds;
  std::string what;
  absl::Status s = CheckPhysicalFloor(r, &what);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("(the l2 bound)"));
  EXPECT_THAT(s.message(), HasSubstr("bytes per SM clock"));
  EXPECT_THAT(s.message(), HasSubstr("move its data"));
  // 3 us, about 16x the floor, passes.
  r.stats.median_seconds = 3e-6;
  EXPECT_TRUE(CheckPhysicalFloor(r, &what).ok());
  EXPECT_THAT(what, HasSubstr("(the l2 bound)"));
}

TEST(PhysicalFloor, UnknownDeviceFiguresGiveNoFloor) {
  RunResult r = ResultOf(AddF32(), int64_t{1} << 20, CacheMode::kHot, 1e-9);
  r.device = DeviceInfo();
  std::string what;
  UserKernelIntegrity figures;
  EXPECT_TRUE(CheckPhysicalFloor(r, &what, &figures).ok());
  EXPECT_THAT(what, HasSubstr("physical_floor: not applicable"));
  EXPECT_EQ(figures.floor_bound, "");
}

// A family that counts FLOP, known only here (the user-kernel families count none).
constexpr BufferSpec kFlopBuffers[] = {
    {.name = "x", .role = BufferRole::kInput},
    {.name = "y", .role = BufferRole::kOutput},
};
constexpr KernelFamily kFlopFamily{
    .name = "test_flop_heavy",
    .buffers = kFlopBuffers,
    .metric = Metric::kOperationsPerSecond,
    .operation_unit = "FLOP",
    .operations = [](const RunShape& s) { return 100000 * s.elements; },
};
constexpr KernelVariant kFlopVariant{
    .name = "test_flop_heavy_f32", .family = &kFlopFamily, .dtype = DType::kF32};

TEST(PhysicalFloor, AFamilyThatCountsFlopIsBoundByTheDevicesHighestDensePeak) {
  RunResult r = ResultOf(&kFlopVariant, int64_t{1} << 20, CacheMode::kHot, 0);
  const PhysicalFloor f = PhysicalFloorOf(r);
  EXPECT_EQ(f.flops, int64_t{100000} << 20);
  // The H200 SXM's highest dense figure is FP8's 1979 TFLOP/s (kernels/gemm_peak.cc), whatever
  // the run's dtype, times the slack.
  EXPECT_DOUBLE_EQ(f.flops_per_second, 1979e12 * kFlopFloorPeakSlack);
  EXPECT_THAT(f.flop_basis, HasSubstr("FP8"));
  EXPECT_EQ(f.bound, FloorBound::kFlop);
  EXPECT_DOUBLE_EQ(f.seconds, f.flop_seconds);
  r.stats.median_seconds = 0.5 * f.seconds;
  std::string what;
  UserKernelIntegrity figures;
  absl::Status s = CheckPhysicalFloor(r, &what, &figures);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("(the flop bound)"));
  EXPECT_THAT(s.message(), HasSubstr("compute its operations"));
  EXPECT_EQ(figures.floor_bound, "flop");
  EXPECT_DOUBLE_EQ(figures.flop_floor_seconds, f.flop_seconds);
  // A device the datasheet table does not know: no FLOP floor, and the reason in the text.
  r.device.name = "NVIDIA Unknown";
  const PhysicalFloor unknown = PhysicalFloorOf(r);
  EXPECT_EQ(unknown.flop_seconds, 0);
  EXPECT_THAT(unknown.flop_basis, HasSubstr("no datasheet peak"));
  EXPECT_EQ(unknown.bound, FloorBound::kL2);
  r.stats.median_seconds = unknown.seconds * 2;
  ASSERT_TRUE(CheckPhysicalFloor(r, &what).ok());
  EXPECT_THAT(what, HasSubstr("FLOP unknown: no datasheet peak"));
}

// docs/user-kernels.md says the FLOP floor applies to no family with a user-kernel contract: they
// are judged by bytes. A family that starts counting FLOP gets it and must be named there.
TEST(PhysicalFloor, NoFamilyWithAContractCountsFlop) {
  int contracts = 0;
  for (const KernelVariant& v : AllKernels()) {
    if (!ContractFor(*v.family, v.dtype).ok()) continue;
    ++contracts;
    EXPECT_TRUE(v.family->operations == nullptr || v.family->operation_unit != "FLOP")
        << v.family->name << " counts FLOP: name it in docs/user-kernels.md's physical_floor";
  }
  EXPECT_GT(contracts, 0);
}

// ---- launch count ------------------------------------------------------------------------------

WindowActivity Window(int operations, int kernels, int foreign = 0, double seconds = 10e-6) {
  return {
      .operations = operations, .kernels = kernels, .foreign_kernels = foreign, .seconds = seconds};
}

TEST(WindowTally, GroupsWindowsByTheirFiguresInOrderOfFirstAppearance) {
  WindowAudit audit;
  TallyWindow(1, Window(1, 1), &audit);
  TallyWindow(2, Window(1, 1, 0, 20e-6), &audit);  // the span is not a figure of the tally
  TallyWindow(3, std::nullopt, &audit);
  TallyWindow(4, Window(2, 2), &audit);
  TallyWindow(5, Window(1, 1), &audit);
  ASSERT_EQ(audit.tallies.size(), 2u);
  EXPECT_EQ(audit.tallies[0].windows, 3);
  EXPECT_EQ(audit.tallies[0].first_sample, 1);
  EXPECT_EQ(audit.tallies[1].operations, 2);
  EXPECT_EQ(audit.tallies[1].first_sample, 4);
  EXPECT_EQ(audit.unrecorded_windows, 1);
  // Bounded: distinct figures beyond kMaxWindowTallies are counted together.
  for (int i = 0; i < kMaxWindowTallies + 3; ++i) TallyWindow(10 + i, Window(10 + i, 0), &audit);
  EXPECT_EQ(audit.tallies.size(), static_cast<size_t>(kMaxWindowTallies));
  EXPECT_EQ(audit.other_windows, 5);
  EXPECT_EQ(audit.other_first_sample, 24);
}

RunResult WithWindows(const std::vector<std::optional<WindowActivity>>& windows,
                      WindowSource source = WindowSource::kActivityRecords) {
  RunResult r = ResultOf(AddF32(), int64_t{1} << 20, CacheMode::kCold, 10e-6);
  WindowAudit& audit = r.window_audit.emplace();
  audit.source = source;
  for (size_t i = 0; i < windows.size(); ++i) TallyWindow(i + 1, windows[i], &audit);
  return r;
}

TEST(LaunchCount, OneKernelInEveryWindowPasses) {
  RunResult r = WithWindows({Window(1, 1), Window(1, 1), std::nullopt, Window(1, 1)});
  std::string what;
  UserKernelIntegrity figures;
  ASSERT_TRUE(CheckLaunchCount(r, 1, &what, &figures).ok());
  EXPECT_THAT(what, HasSubstr("launch_count: each of the 3 recorded timed windows ran exactly 1 "
                              "kernel (1 launch of the user kernel) and no other kernel"));
  EXPECT_THAT(what, HasSubstr("1 window without a complete record"));
  EXPECT_TRUE(figures.launch_count_applied);
  EXPECT_EQ(figures.launch_count_source, "cupti_activity");
  EXPECT_EQ(figures.windows_checked, 3);
  EXPECT_EQ(figures.windows_unrecorded, 1);
  EXPECT_EQ(figures.expected_operations, 1);
  EXPECT_EQ(figures.foreign_kernels, 0);
}

TEST(LaunchCount, ASecondOperationFailsNamingTheSampleAndCounts) {
  RunResult r = WithWindows({Window(1, 1), Window(1, 1), Window(2, 2), Window(1, 1), Window(2, 1)});
  std::string what;
  UserKernelIntegrity figures;
  absl::Status s = CheckLaunchCount(r, 1, &what, &figures);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("launch_count failed: timed sample 3 ran 2 GPU operations "
                                     "(2 kernels) and 0 foreign kernels"));
  EXPECT_THAT(s.message(), HasSubstr("each timed window must hold exactly 1 kernel"));
  EXPECT_THAT(s.message(), HasSubstr("2 of 5 recorded windows differed"));
  EXPECT_EQ(figures.windows_checked, 5);
}

TEST(LaunchCount, AForeignKernelFails) {
  RunResult r = WithWindows({Window(1, 1), Window(1, 1, 1)});
  std::string what;
  UserKernelIntegrity figures;
  absl::Status s = CheckLaunchCount(r, 1, &what, &figures);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("timed sample 2 ran 1 GPU operation (1 kernel) and 1 "
                                     "foreign kernel (launched from the device"));
  EXPECT_EQ(figures.foreign_kernels, 1);
}

TEST(LaunchCount, ACopyInsteadOfAKernelFails) {
  RunResult r = WithWindows({Window(1, 0)});
  std::string what;
  EXPECT_EQ(CheckLaunchCount(r, 1, &what).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(LaunchCount, NotAppliedSaysWhy) {
  RunResult r = ResultOf(AddF32(), 1 << 20, CacheMode::kCold, 10e-6);
  std::string what;
  UserKernelIntegrity figures;
  ASSERT_TRUE(CheckLaunchCount(r, 1, &what, &figures).ok());
  EXPECT_THAT(what, HasSubstr("launch_count: not applied: the run recorded no timed window"));
  r.window_audit.emplace().unavailable_reason = "CUPTI activity: libcupti.so not found";
  ASSERT_TRUE(CheckLaunchCount(r, 1, &what, &figures).ok());
  EXPECT_EQ(what, "launch_count: not applied: CUPTI activity: libcupti.so not found");
  EXPECT_FALSE(figures.launch_count_applied);
  EXPECT_EQ(figures.launch_count_unavailable, "CUPTI activity: libcupti.so not found");
  r = WithWindows({std::nullopt, std::nullopt});
  ASSERT_TRUE(CheckLaunchCount(r, 1, &what, &figures).ok());
  EXPECT_THAT(what, HasSubstr("not applied: no complete activity record came back for any of the "
                              "2 timed windows"));
}

TEST(LaunchCount, TheRangeProfilerSaysWhatItCannotSee) {
  RunResult r = WithWindows({Window(1, 1)}, WindowSource::kRangeProfiler);
  std::string what;
  UserKernelIntegrity figures;
  ASSERT_TRUE(CheckLaunchCount(r, 1, &what, &figures).ok());
  EXPECT_THAT(what, HasSubstr("range profiler"));
  EXPECT_THAT(what, ::testing::Not(HasSubstr("and no other kernel")));
  EXPECT_EQ(figures.launch_count_source, "gpu_time_profiler");
}

TEST(LaunchCount, CountsBeyondTheTalliesFailToo) {
  std::vector<std::optional<WindowActivity>> windows;
  for (int i = 0; i < kMaxWindowTallies + 2; ++i) windows.push_back(Window(i + 2, i + 2));
  RunResult r = WithWindows(windows);
  std::string what;
  absl::Status s = CheckLaunchCount(r, 1, &what);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("timed sample 1 ran 2 GPU operations"));
  EXPECT_THAT(s.message(), HasSubstr("18 of 18 recorded windows differed"));
}

// ---- timer cross-check -------------------------------------------------------------------------

RunResult WithMedians(double timer, double kernel, SampleTimer clock = SampleTimer::kCudaEvent) {
  RunResult r = WithWindows({Window(1, 1, 0, kernel)});
  r.timer = clock;
  r.window_audit->compared_samples = 40;
  r.window_audit->timer_median_seconds = timer;
  r.window_audit->kernel_median_seconds = kernel;
  return r;
}

TEST(TimerCrossCheck, EventsAroundTheKernelPassWithBothMediansAndTheRatio) {
  std::string what;
  UserKernelIntegrity figures;
  ASSERT_TRUE(CheckTimerCrossCheck(WithMedians(31e-6, 30e-6), &what, &figures).ok());
  EXPECT_THAT(what, HasSubstr("timer_cross_check: the cuda_event timer's median 3.1e-05 s over 40 "
                              "recorded samples, the kernel's own duration median 3e-05 s (ratio "
                              "1.0333)"));
  EXPECT_TRUE(figures.timer_cross_check_applied);
  EXPECT_EQ(figures.timer_cross_check, "cuda_event against cupti_activity");
  EXPECT_DOUBLE_EQ(figures.timer_median_seconds, 31e-6);
  EXPECT_DOUBLE_EQ(figures.kernel_median_seconds, 30e-6);
  EXPECT_NEAR(figures.timer_ratio, 31.0 / 30.0, 1e-12);
  EXPECT_DOUBLE_EQ(figures.timer_tolerance, kTimerCrossCheckRelative);
  EXPECT_DOUBLE_EQ(figures.timer_tolerance_seconds, kTimerCrossCheckAbsoluteSeconds);
}

TEST(TimerCrossCheck, WithinTheToleranceBelowPasses) {
  std::string what;
  // 1% and 0.5 us below 30 us is 29.2 us.
  EXPECT_TRUE(CheckTimerCrossCheck(WithMedians(29.25e-6, 30e-6), &what).ok());
  // A short kernel: the event resolution dominates.
  EXPECT_TRUE(CheckTimerCrossCheck(WithMedians(1.6e-6, 2e-6), &what).ok());
}

TEST(TimerCrossCheck, ATimerFasterThanTheKernelIsRefusedWithTheFigures) {
  std::string what;
  UserKernelIntegrity figures;
  absl::Status s = CheckTimerCrossCheck(WithMedians(25e-6, 30e-6), &what, &figures);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("timer_cross_check failed: the timer read faster than the "
                                     "kernel ran"));
  EXPECT_THAT(s.message(), HasSubstr("median 2.5e-05 s"));
  EXPECT_THAT(s.message(), HasSubstr("ratio 0.8333"));
  EXPECT_NEAR(figures.timer_ratio, 25.0 / 30.0, 1e-12);
}

TEST(TimerCrossCheck, DurationTimersAreTheirOwnComparison) {
  std::string what;
  UserKernelIntegrity figures;
  RunResult cupti = WithMedians(30e-6, 30e-6, SampleTimer::kCuptiActivity);
  cupti.event_median_seconds = 31e-6;
  ASSERT_TRUE(CheckTimerCrossCheck(cupti, &what, &figures).ok());
  EXPECT_THAT(what, HasSubstr("the timer is CUPTI's activity records"));
  EXPECT_THAT(what, HasSubstr("the CUDA events of the same samples read median 3.1e-05 s"));
  EXPECT_FALSE(figures.timer_cross_check_applied);
  EXPECT_DOUBLE_EQ(figures.timer_ratio, 1);
  ASSERT_TRUE(CheckTimerCrossCheck(WithMedians(30e-6, 30e-6, SampleTimer::kGpuTimeDuration), &what,
                                   &figures)
                  .ok());
  EXPECT_THAT(what, HasSubstr("the timer is the kernel's gpu__time_duration counter"));
  EXPECT_EQ(figures.timer_cross_check, "the timer is gpu__time_duration itself");
}

TEST(TimerCrossCheck, NotAppliedSaysWhy) {
  std::string what;
  RunResult r = ResultOf(AddF32(), 1 << 20, CacheMode::kCold, 10e-6);
  ASSERT_TRUE(CheckTimerCrossCheck(r, &what).ok());
  EXPECT_EQ(what, "timer_cross_check: not applied: the run recorded no timed window");
  r.window_audit.emplace().unavailable_reason = "profile launches";
  ASSERT_TRUE(CheckTimerCrossCheck(r, &what).ok());
  EXPECT_EQ(what, "timer_cross_check: not applied: profile launches");
  r = WithWindows({std::nullopt});
  ASSERT_TRUE(CheckTimerCrossCheck(r, &what).ok());
  EXPECT_THAT(what, HasSubstr("no kept sample has a complete activity record"));
}

// ---- the engine records the windows ------------------------------------------------------------

class WindowAuditTest : public ::testing::Test {
 protected:
  WindowAuditTest() {
    backend_->script().seconds = [](int) { return 10e-6; };
    backend_->script().windows = [](int) { return std::optional(Window(1, 1, 0, 9e-6)); };
  }
  RunSpec Spec(bool verify_timed_samples = true) {
    RunRequest r;
    r.kernel = "add_f32";
    r.elements = 4096;
    r.seed = 7;
    r.measurement.min_samples = 20;
    r.measurement.max_samples = 20;
    r.measurement.min_time_seconds = 1e-6;
    RunSpec spec = *ResolveRunRequest(r, *backend_, ServerLimits());
    spec.verify_timed_samples = verify_timed_samples;
    return spec;
  }
  absl::StatusOr<RunResult> Measure(const RunSpec& spec) {
    return MeasureRun(
        *backend_, spec, [] { return false; }, &pool_);
  }
  std::unique_ptr<testing::FakeBackend> backend_ =
      std::make_unique<testing::FakeBackend>(testing::FakeScript{});
  ParallelPool pool_{2};
};

TEST_F(WindowAuditTest, EveryTimedWindowIsTalliedAndTheMediansCompared) {
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->window_audit.has_value());
  const WindowAudit& a = *r->window_audit;
  EXPECT_EQ(a.unavailable_reason, "");
  EXPECT_EQ(a.source, WindowSource::kActivityRecords);
  EXPECT_EQ(a.launches_per_window, 1);
  ASSERT_EQ(a.tallies.size(), 1u);
  EXPECT_EQ(a.tallies[0].windows, 20);
  EXPECT_EQ(a.compared_samples, 20);
  EXPECT_DOUBLE_EQ(*a.kernel_median_seconds, 9e-6);
  EXPECT_DOUBLE_EQ(*a.timer_median_seconds, 10e-6);
  std::string what;
  EXPECT_TRUE(CheckLaunchCount(*r, 1, &what).ok()) << what;
  EXPECT_TRUE(CheckTimerCrossCheck(*r, &what).ok()) << what;
  EXPECT_THAT(what, HasSubstr("ratio 1.1111"));
}

TEST_F(WindowAuditTest, CatalogRunsRecordNothing) {
  absl::StatusOr<RunResult> r = Measure(Spec(/*verify_timed_samples=*/false));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->window_audit.has_value());
}

// Throttled samples are discarded from the timer's samples: from the kernels' durations too, so
// that both medians are over the same launches; every window is still counted.
TEST_F(WindowAuditTest, ThrottledAndUnrecordedSamplesStayOutOfTheMedians) {
  backend_->script().default_clock_hz = 1e9;
  backend_->script().clock_hz = [](int i) { return std::optional<double>(i < 3 ? 0.5e9 : 1e9); };
  backend_->script().seconds = [](int i) { return i < 3 ? 1.0 : 10e-6; };
  backend_->script().windows = [](int i) -> std::optional<WindowActivity> {
    if (i == 5) return std::nullopt;
    return Window(i == 7 ? 2 : 1, i == 7 ? 2 : 1, 0, i < 3 ? 0.9 : 9e-6);
  };
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok()) << r.status();
  const WindowAudit& a = *r->window_audit;
  EXPECT_EQ(r->samples_taken, 23);
  EXPECT_EQ(a.unrecorded_windows, 1);
  ASSERT_EQ(a.tallies.size(), 2u);
  EXPECT_EQ(a.tallies[0].windows, 21);
  EXPECT_EQ(a.tallies[1].first_sample, 8);  // 1-based
  EXPECT_EQ(a.compared_samples, 19);        // 20 kept, one without a record
  EXPECT_DOUBLE_EQ(*a.kernel_median_seconds, 9e-6);
  EXPECT_DOUBLE_EQ(*a.timer_median_seconds, 10e-6);
  std::string what;
  absl::Status s = CheckLaunchCount(*r, 1, &what);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("timed sample 8 ran 2 GPU operations"));
}

// Under CUDA events only chosen samples are traced, and tracing slows them: they are counted
// and compared with their own kernels' durations, never part of the run's statistics.
TEST_F(WindowAuditTest, AuditOnlySamplesAreCheckedButStayOutOfTheStatistics) {
  backend_->script().audit_only = [](int i) { return i % 4 == 0; };
  backend_->script().seconds = [](int i) { return i % 4 == 0 ? 20e-6 : 10e-6; };
  backend_->script().windows = [](int i) -> std::optional<WindowActivity> {
    return Window(1, 1, 0, i % 4 == 0 ? 19e-6 : 9e-6);
  };
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok()) << r.status();
  const WindowAudit& a = *r->window_audit;
  EXPECT_EQ(r->samples_taken, 27);  // 20 kept + 7 audit-only (samples 0, 4, ..., 24)
  EXPECT_EQ(r->stats.count, 20);
  EXPECT_DOUBLE_EQ(r->stats.median_seconds, 10e-6);
  EXPECT_EQ(a.audit_only_samples, 7);
  EXPECT_EQ(a.compared_samples, 7);
  EXPECT_DOUBLE_EQ(*a.kernel_median_seconds, 19e-6);
  EXPECT_DOUBLE_EQ(*a.timer_median_seconds, 20e-6);
  std::string what;
  UserKernelIntegrity figures;
  EXPECT_TRUE(CheckLaunchCount(*r, 1, &what, &figures).ok()) << what;
  EXPECT_EQ(figures.windows_outside_statistics, 7);
  EXPECT_THAT(what, HasSubstr("kept out of the statistics: 7 such samples"));
}

TEST_F(WindowAuditTest, ABackendThatCannotRecordSaysWhy) {
  backend_->script().windows = nullptr;
  absl::StatusOr<RunResult> r = Measure(Spec());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->window_audit.has_value());
  EXPECT_EQ(r->window_audit->unavailable_reason, "this backend records no device activity");
  std::string what;
  ASSERT_TRUE(CheckLaunchCount(*r, 1, &what).ok());
  EXPECT_EQ(what, "launch_count: not applied: this backend records no device activity");
}

TEST_F(WindowAuditTest, ProfileLaunchesRecordNoWindow) {
  RunSpec spec = Spec();
  spec.measurement.profile_runs = 3;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->window_audit.has_value());
  EXPECT_THAT(r->window_audit->unavailable_reason, HasSubstr("profile launches"));
}

TEST_F(WindowAuditTest, TheGpuTimeTimerCountsThroughItsProfiler) {
  backend_->script().kernel_seconds = [](int) { return std::optional<double>(9e-6); };
  RunSpec spec = Spec();
  spec.measurement.timer = TimerChoice::kGpuTime;
  absl::StatusOr<RunResult> r = Measure(spec);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->window_audit->source, WindowSource::kRangeProfiler);
  std::string what;
  ASSERT_TRUE(CheckTimerCrossCheck(*r, &what).ok());
  EXPECT_THAT(what, HasSubstr("gpu__time_duration counter"));
}

}  // namespace
}  // namespace gpubench
