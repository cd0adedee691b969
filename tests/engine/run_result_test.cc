// Finishing a result: the outcome decided once, the method text from the backend, the queue time,
// the copy ceiling and the clock events; a failed verification as an error.
#include "server/engine/run_result.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/cpu_backend.h"
#include "engine/fake_backend.h"

namespace gpubench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RunResult Measured(const char* kernel, CacheMode mode) {
  RunResult r;
  r.run_id = "r1";
  r.backend = "cpu";
  r.spec.kernel = *FindKernel(kernel);
  r.spec.elements = 1000;
  r.spec.cache_mode = mode;
  r.hot_batch_size = 7;
  r.bytes_moved = 8000;
  r.bandwidth_bytes_per_second = 4e9;
  r.device.l2_cache_bytes = 1000;
  return r;
}

TEST(RunOutcomeTest, DecidedByTheVerification) {
  RunResult r = Measured("add_f32", CacheMode::kCold);
  EXPECT_EQ(OutcomeOf(r), RunOutcome::kUnverified);
  EXPECT_TRUE(VerificationStatus(r).ok());
  r.verification = Verification{.passed = true};
  EXPECT_EQ(OutcomeOf(r), RunOutcome::kVerified);
  EXPECT_TRUE(VerificationStatus(r).ok());
  r.verification->passed = false;
  r.verification->mismatches = 3;
  r.verification->checked = 1000;
  r.verification->first_mismatch_index = 17;
  EXPECT_EQ(OutcomeOf(r), RunOutcome::kVerificationFailed);
  EXPECT_STREQ(RunOutcomeName(OutcomeOf(r)), "VERIFY-FAILED");
  absl::Status s = VerificationStatus(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("verification failed for add_f32 at 1000 elements"));
  EXPECT_THAT(s.message(), HasSubstr("3 of 1000 elements"));
  EXPECT_THAT(s.message(), HasSubstr("first at index 17"));
  EXPECT_EQ(RunStatus(r).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(RunStatus(absl::StatusOr<RunResult>(absl::CancelledError("gone"))).code(),
            absl::StatusCode::kCancelled);
}

TEST(SampleMethodOfTest, MethodTextComesFromTheBackend) {
  auto cpu = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  RunResult cold = Measured("add_f32", CacheMode::kCold);
  cold.method = SampleMethodOf(*cpu, cold);
  EXPECT_EQ(cold.method, cpu->SampleMethod(/*cold=*/true, 1, TimerStrategy::kBackendClock,
                                           /*blocking=*/true));
  EXPECT_THAT(cold.method, HasSubstr("steady clock"));

  RunResult hot = Measured("add_f32", CacheMode::kHot);
  hot.method = SampleMethodOf(*cpu, hot);
  EXPECT_EQ(hot.method, "hot: 7 back-to-back launches timed with a steady clock per sample");

  testing::FakeBackend fake({});
  RunResult other = Measured("add_f32", CacheMode::kCold);
  other.method = SampleMethodOf(fake, other);
  // A device backend's text names the flush and the stream, which change what a sample measures.
  EXPECT_EQ(other.method, "fake cold sample; L2 flush: clean; stream: nonblocking");
  other.spec.measurement.l2_flush = L2Flush::kMemset;
  other.spec.measurement.stream = StreamKind::kLegacy;
  EXPECT_EQ(SampleMethodOf(fake, other), "fake cold sample; L2 flush: memset; stream: legacy");
  // A family that synchronizes with the host is timed without the blocking kernel, and says so.
  RunResult pageable = Measured("copy_h2d_pageable", CacheMode::kHot);
  EXPECT_EQ(SampleMethodOf(fake, pageable),
            "fake hot sample (no blocking kernel); stream: nonblocking");

  RunResult profiled = Measured("add_f32", CacheMode::kCold);
  profiled.profile_mode = true;
  profiled.method = SampleMethodOf(*cpu, profiled);
  EXPECT_EQ(profiled.method,
            "profile mode (cold): each launch timed alone after a cache flush, no blocking "
            "kernel, no stopping rule");
}

TEST(FinishRunResultTest, QueueTimeClockEventsAndTheCopyCeiling) {
  auto cpu = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  CopyCeiling ceiling;
  const absl::Time queued = absl::FromUnixSeconds(1000);

  RunResult add = Measured("add_f32", CacheMode::kCold);
  FinishRunResult({.queued_at = queued, .copy_ceiling = &ceiling}, &add);
  EXPECT_EQ(add.queued_at, queued);
  EXPECT_FALSE(add.percent_of_copy_ceiling.has_value());  // no copy yet
  EXPECT_EQ(add.clock_events_unavailable_reason, "NVML not loaded");

  RunResult small_copy = Measured("copy_d2d", CacheMode::kCold);
  small_copy.bytes_moved = 3999;  // under 4x the L2: not DRAM-bound, not a ceiling
  FinishRunResult({.copy_ceiling = &ceiling}, &small_copy);
  EXPECT_EQ(ceiling.bytes_per_second(), 0);

  RunResult copy = Measured("copy_d2d", CacheMode::kCold);
  copy.bandwidth_bytes_per_second = 8e9;
  FinishRunResult({.copy_ceiling = &ceiling,
                   .clock_event_reasons = std::vector<std::string>{"sw_thermal_slowdown"}},
                  &copy);
  EXPECT_DOUBLE_EQ(*copy.percent_of_copy_ceiling, 100.0);
  EXPECT_THAT(copy.clock_event_reasons, ElementsAre("sw_thermal_slowdown"));
  EXPECT_TRUE(copy.clock_events_unavailable_reason.empty());

  RunResult later = Measured("add_f32", CacheMode::kCold);
  FinishRunResult({.copy_ceiling = &ceiling}, &later);
  EXPECT_DOUBLE_EQ(*later.percent_of_copy_ceiling, 50.0);
  EXPECT_DOUBLE_EQ(later.copy_ceiling_bytes_per_second, 8e9);
}

TEST(BackendKindTest, NamesAndBindings) {
  EXPECT_EQ(BackendKindName(BackendKind::kCpu), "cpu");
  EXPECT_EQ(BackendKindName(BackendKind::kCuda), "cuda");
  auto cpu = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  EXPECT_EQ(cpu->kind(), BackendKind::kCpu);
  // Host memory and the host's clock; none of the CUDA-only choices.
  const BackendCapabilities can = cpu->capabilities();
  EXPECT_TRUE(can.device_is_host);
  EXPECT_TRUE(can.host_clock);
  EXPECT_FALSE(can.kernel_durations || can.placement_pads || can.placement_copies ||
               can.flush_and_stream_choices || can.hardware_counters);
  EXPECT_EQ(cpu->name(), "cpu");
  EXPECT_EQ(cpu->Describe(0)->backend, "cpu");
  for (const KernelVariant& k : AllKernels()) EXPECT_TRUE(HasBinding(k, BackendKind::kCpu));
}

}  // namespace
}  // namespace gpubench
