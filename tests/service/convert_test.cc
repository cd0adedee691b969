// Conversion at the gRPC edge: proto requests to engine requests (defaults and optional fields
// kept apart), resolved results and reports back to proto, and bad values reaching the client
// with the right status.
#include "server/service/convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/fake_backend.h"
#include "server/service/status_adapter.h"

namespace gpubench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ConvertTest : public ::testing::Test {
 protected:
  ConvertTest()
      : engine_(std::make_unique<testing::FakeBackend>(testing::FakeScript{.devices = 2}),
                ServerLimits{}) {}

  // The status a client sees for `request`: conversion, validation and the one adapter.
  grpc::Status StatusOf(const v1::RunBenchmarkRequest& request) {
    return ToGrpcStatus(engine_.Resolve(FromProto(request)).status());
  }

  Engine engine_;
};

TEST_F(ConvertTest, RunRequestFieldsAndUnsetOptionals) {
  v1::RunBenchmarkRequest p;
  p.set_kernel("add_f32_tuned");
  p.set_elements(4096);
  p.set_device_index(1);
  p.set_device_uuid("GPU-x");
  p.set_block_size(128);
  p.set_items_per_thread(4);
  p.set_profile(true);
  p.set_force(true);
  v1::MeasurementOptions* m = p.mutable_measurement();
  m->set_warmup_launches(5);
  m->set_min_samples(7);
  m->set_max_samples(70);
  m->set_min_time_seconds(0.25);
  m->set_max_noise(0.01);
  m->set_timeout_seconds(3);
  m->set_profile_runs(9);
  m->set_keep_samples(true);
  RunRequest r = FromProto(p);
  EXPECT_EQ(r.kernel, "add_f32_tuned");
  EXPECT_EQ(r.elements, 4096);
  EXPECT_EQ(r.device_index, 1);
  EXPECT_EQ(r.device_uuid, "GPU-x");
  EXPECT_EQ(r.block_size, 128);
  EXPECT_EQ(r.items_per_thread, 4);
  EXPECT_TRUE(r.profile);
  EXPECT_TRUE(r.force);
  EXPECT_EQ(r.measurement.warmup_launches, 5);
  EXPECT_EQ(r.measurement.min_samples, 7);
  EXPECT_EQ(r.measurement.max_samples, 70);
  EXPECT_DOUBLE_EQ(r.measurement.min_time_seconds, 0.25);
  EXPECT_DOUBLE_EQ(r.measurement.max_noise, 0.01);
  EXPECT_DOUBLE_EQ(r.measurement.timeout_seconds, 3);
  EXPECT_EQ(r.measurement.profile_runs, 9);
  EXPECT_TRUE(r.measurement.keep_samples);
  // Unset: the server's default threshold; 0 is a request (keep every sample), not "unset".
  EXPECT_FALSE(r.measurement.throttle_threshold.has_value());
  m->set_throttle_threshold(0);
  EXPECT_EQ(FromProto(p).measurement.throttle_threshold, std::optional<double>(0));
  m->clear_throttle_threshold();
  EXPECT_DOUBLE_EQ(r.measurement.max_duty, 0);  // unset: no pacing
  m->set_max_duty(0.8);
  EXPECT_DOUBLE_EQ(FromProto(p).measurement.max_duty, 0.8);
  m->clear_max_duty();
  EXPECT_EQ(r.measurement.placement_pad_bytes, 0);  // unset: the server's default
  m->set_placement_pad_bytes(int64_t{34} << 20);
  EXPECT_EQ(FromProto(p).measurement.placement_pad_bytes, int64_t{34} << 20);
  m->set_placement_pad_bytes(-1);  // carried as is: the resolver refuses it
  EXPECT_EQ(FromProto(p).measurement.placement_pad_bytes, -1);
  m->clear_placement_pad_bytes();
  EXPECT_EQ(r.measurement.placements, 0);  // unset: one copy
  m->set_placements(4);
  EXPECT_EQ(FromProto(p).measurement.placements, 4);
  m->set_placements(-2);  // carried as is: the resolver refuses it
  EXPECT_EQ(FromProto(p).measurement.placements, -2);
  m->clear_placements();
  // Unset optional fields stay unset, so the engine's defaults apply; set ones are kept, false
  // and zero included.
  EXPECT_FALSE(r.verify.has_value());
  EXPECT_FALSE(r.seed.has_value());
  EXPECT_FALSE(r.cache_mode.has_value());
  p.set_verify(false);
  p.set_seed(0);
  m->set_cache_mode(v1::HOT);
  r = FromProto(p);
  EXPECT_EQ(r.verify, std::optional<bool>(false));
  EXPECT_EQ(r.seed, std::optional<uint64_t>(0));
  EXPECT_EQ(r.cache_mode, std::optional<CacheMode>(CacheMode::kHot));
  m->set_cache_mode(v1::COLD);
  EXPECT_EQ(FromProto(p).cache_mode, std::optional<CacheMode>(CacheMode::kCold));
  m->set_cache_mode(static_cast<v1::CacheMode>(77));  // unknown enum value: the default
  EXPECT_FALSE(FromProto(p).cache_mode.has_value());
}

TEST_F(ConvertTest, AnEmptyMeasurementGetsTheServerDefaults) {
  v1::RunBenchmarkRequest p;
  p.set_kernel("add_f32");
  p.set_elements(1000);
  absl::StatusOr<RunSpec> spec = engine_.Resolve(FromProto(p));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const MeasurementOptions& d = engine_.limits().defaults;
  EXPECT_EQ(spec->measurement.warmup_launches, d.warmup_launches);
  EXPECT_EQ(spec->measurement.min_samples, d.min_samples);
  EXPECT_DOUBLE_EQ(spec->measurement.max_noise, d.max_noise);
  EXPECT_DOUBLE_EQ(spec->measurement.timeout_seconds, d.timeout_seconds);
  EXPECT_TRUE(spec->verify);
  EXPECT_EQ(spec->cache_mode, CacheMode::kCold);
  EXPECT_EQ(spec->device_index, 0);
  EXPECT_EQ(spec->block_size_source, "catalog");
}

TEST_F(ConvertTest, BadValuesReachTheClientWithTheRightCode) {
  v1::RunBenchmarkRequest good;
  good.set_kernel("add_f32");
  good.set_elements(1000);
  EXPECT_TRUE(StatusOf(good).ok());

  v1::RunBenchmarkRequest p = good;
  p.set_kernel("");
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  p.set_kernel("add_f64");
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::NOT_FOUND);
  p = good;
  p.set_elements(-5);
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(StatusOf(p).error_message(), HasSubstr("elements must be at least 1"));
  p = good;
  p.set_block_size(33);
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  p = good;
  p.set_device_index(2);  // two devices: 0 and 1
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  p = good;
  p.set_device_uuid("GPU-nowhere");
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::NOT_FOUND);
  p = good;
  p.mutable_measurement()->set_max_noise(5);
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(StatusOf(p).error_message(), HasSubstr("looks like a percent"));
  p = good;
  p.mutable_measurement()->set_min_samples(-1);
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  p = good;
  p.set_elements(int64_t{1} << 40);
  EXPECT_EQ(StatusOf(p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(StatusOf(p).error_message(), HasSubstr("--max_elements"));
}

RunResult AResult(const Engine& engine, bool keep_samples) {
  RunRequest request;
  request.kernel = "add_f32";
  request.elements = 1000;
  request.seed = 7;
  request.measurement.keep_samples = keep_samples;
  RunResult r;
  r.spec = *engine.Resolve(request);
  r.run_id = "abc";
  r.backend = "cpu";
  r.method = "cold: the words of the backend";
  r.queued_at = absl::FromUnixMillis(1500);
  r.started_at = absl::FromUnixSeconds(2);
  r.finished_at = absl::FromUnixSeconds(3);
  r.stats.count = 3;
  r.stats.median_seconds = 2e-6;
  r.stats.relative_noise = 0.01;
  r.sample_seconds = {1e-6, 2e-6};
  r.sample_count = 3;
  r.noise_known = true;
  r.bytes_moved = 12000;
  r.bandwidth_bytes_per_second = 6e9;
  r.notes = {"a note"};
  r.device = *engine.backend().Describe(0);
  return r;
}

TEST_F(ConvertTest, ResultToProto) {
  v1::RunResult p;
  ToProto(AResult(engine_, /*keep_samples=*/true), &p);
  EXPECT_EQ(p.run_id(), "abc");
  EXPECT_EQ(p.backend(), "cpu");
  EXPECT_EQ(p.request().kernel(), "add_f32");
  EXPECT_EQ(p.request().dtype(), "f32");
  EXPECT_EQ(p.request().elements(), 1000);
  EXPECT_EQ(p.request().seed(), 7u);
  EXPECT_EQ(p.request().block_size(), 256);
  EXPECT_EQ(p.request().grid_size(), 4);
  EXPECT_EQ(p.request().cache_mode(), v1::COLD);
  EXPECT_EQ(p.request().block_size_source(), "catalog");
  EXPECT_TRUE(p.request().verify());
  EXPECT_EQ(p.queued_at().seconds(), 1);
  EXPECT_EQ(p.queued_at().nanos(), 500000000);
  EXPECT_EQ(p.finished_at().seconds(), 3);
  EXPECT_EQ(p.measurement().method(), "cold: the words of the backend");
  EXPECT_THAT(p.measurement().notes(), ElementsAre("a note"));
  EXPECT_EQ(p.timing().samples(), 3);
  EXPECT_DOUBLE_EQ(p.timing().median_seconds(), 2e-6);
  EXPECT_TRUE(p.timing().noise_known());
  EXPECT_THAT(p.samples().seconds(), ElementsAre(1e-6, 2e-6));
  EXPECT_EQ(p.samples().count(), 3);
  EXPECT_TRUE(p.samples().strided());
  EXPECT_EQ(p.throughput().bytes_moved(), 12000);
  EXPECT_FALSE(p.throughput().has_percent_of_peak_bandwidth());
  EXPECT_FALSE(p.throughput().has_percent_of_copy_ceiling());
  EXPECT_FALSE(p.verification().requested());
  EXPECT_EQ(p.verification().first_mismatch_index(), -1);
  EXPECT_FALSE(p.occupancy().available());
  EXPECT_EQ(p.device().backend(), "fake");
  EXPECT_FALSE(p.device().has_nvml_index());

  v1::RunResult without;
  ToProto(AResult(engine_, /*keep_samples=*/false), &without);
  EXPECT_FALSE(without.has_samples());

  RunResult library = AResult(engine_, false);
  RunRequest cub;
  cub.kernel = "cub_add_f32";
  cub.elements = 1000;
  library.spec = *engine_.Resolve(cub);
  library.verification = Verification{.passed = true, .checked = 1000};
  library.percent_of_copy_ceiling = 80;
  library.copy_ceiling_bytes_per_second = 7e9;
  ToProto(library, &p);
  EXPECT_EQ(p.request().grid_size(), 0);  // the library picks its own grid
  EXPECT_TRUE(p.verification().requested());
  EXPECT_TRUE(p.verification().passed());
  EXPECT_EQ(p.verification().checked_elements(), 1000);
  EXPECT_DOUBLE_EQ(p.throughput().percent_of_copy_ceiling(), 80);
  EXPECT_DOUBLE_EQ(p.throughput().copy_ceiling_bytes_per_second(), 7e9);
}

TEST_F(ConvertTest, TimerChoiceAndTheTimerThatTimedTheSamples) {
  v1::RunBenchmarkRequest request;
  EXPECT_EQ(FromProto(request).measurement.timer, TimerChoice::kAuto);  // unset: auto
  request.mutable_measurement()->set_timer(v1::TIMER_CUPTI);
  EXPECT_EQ(FromProto(request).measurement.timer, TimerChoice::kCupti);
  request.mutable_measurement()->set_timer(v1::TIMER_EVENTS);
  EXPECT_EQ(FromProto(request).measurement.timer, TimerChoice::kEvents);
  request.mutable_measurement()->set_timer(v1::TIMER_GPU_TIME);
  EXPECT_EQ(FromProto(request).measurement.timer, TimerChoice::kGpuTime);

  RunResult r = AResult(engine_, /*keep_samples=*/false);
  r.spec.measurement.timer = TimerChoice::kEvents;
  v1::RunResult p;
  ToProto(r, &p);
  EXPECT_EQ(p.request().timer(), v1::TIMER_EVENTS);
  EXPECT_EQ(p.measurement().timer(), "cuda_event");  // RunResult's default
  EXPECT_FALSE(p.measurement().has_event_median_seconds());

  r.spec.measurement.timer = TimerChoice::kAuto;
  r.timer = SampleTimer::kCuptiActivity;
  r.event_median_seconds = 3e-6;
  ToProto(r, &p);
  EXPECT_EQ(p.request().timer(), v1::TIMER_AUTO);
  EXPECT_EQ(p.measurement().timer(), "cupti_activity");
  EXPECT_DOUBLE_EQ(p.measurement().event_median_seconds(), 3e-6);

  r.spec.measurement.timer = TimerChoice::kGpuTime;
  r.timer = SampleTimer::kGpuTimeDuration;
  r.event_median_seconds.reset();
  p.Clear();
  ToProto(r, &p);
  EXPECT_EQ(p.request().timer(), v1::TIMER_GPU_TIME);
  EXPECT_EQ(p.measurement().timer(), "gpu_time_duration");
  EXPECT_FALSE(p.measurement().has_event_median_seconds());
}

TEST_F(ConvertTest, ThrottleThresholdResolvedAndLowClockSamples) {
  RunResult r = AResult(engine_, /*keep_samples=*/false);
  r.spec.measurement.throttle_threshold = 0;
  r.throttled_samples = 0;
  r.low_clock_samples = 4;
  v1::RunResult p;
  ToProto(r, &p);
  ASSERT_TRUE(p.request().has_throttle_threshold());
  EXPECT_DOUBLE_EQ(p.request().throttle_threshold(), 0);
  EXPECT_EQ(p.measurement().throttled_samples(), 0);
  EXPECT_EQ(p.measurement().low_clock_samples(), 4);
  r.spec.measurement.throttle_threshold.reset();  // never left so by the resolver: the default
  ToProto(r, &p);
  EXPECT_DOUBLE_EQ(p.request().throttle_threshold(), 0.75);
}

TEST_F(ConvertTest, MaxDutyEchoedAndDutyCycle) {
  RunResult r = AResult(engine_, /*keep_samples=*/false);
  r.spec.measurement.max_duty = 0.8;
  r.duty_cycle = 0.79;
  v1::RunResult p;
  ToProto(r, &p);
  EXPECT_DOUBLE_EQ(p.request().max_duty(), 0.8);
  EXPECT_DOUBLE_EQ(p.measurement().duty_cycle(), 0.79);
}

TEST_F(ConvertTest, PlacementPadEchoed) {
  RunResult r = AResult(engine_, /*keep_samples=*/false);
  v1::RunResult p;
  ToProto(r, &p);
  EXPECT_EQ(p.request().placement_pad_bytes(), 0);
  r.spec.measurement.placement_pad_bytes = int64_t{34} << 20;
  ToProto(r, &p);
  EXPECT_EQ(p.request().placement_pad_bytes(), int64_t{34} << 20);
  r.spec.measurement.placements = 8;
  ToProto(r, &p);
  EXPECT_EQ(p.request().placements(), 8);
}

TEST_F(ConvertTest, SweepRequestToPlan) {
  v1::RunSweepRequest p;
  p.add_kernels("add_f32");
  p.add_kernels("copy_d2d");
  p.add_sizes(10);
  p.add_sizes(int64_t{1} << 33);
  p.add_block_sizes(64);
  p.add_items_per_thread(2);
  p.set_device_index(1);
  p.set_device_uuid("GPU-y");
  p.set_all_devices(true);
  p.set_seed(5);
  p.set_profile(true);
  p.set_force(true);
  p.mutable_measurement()->set_cache_mode(v1::HOT);
  p.mutable_measurement()->set_min_samples(4);
  p.mutable_measurement()->set_throttle_threshold(0);
  p.mutable_measurement()->set_max_duty(0.75);
  p.mutable_measurement()->set_placement_pad_bytes(2 << 20);
  SweepPlan plan = FromProto(p);
  EXPECT_THAT(plan.kernels, ElementsAre("add_f32", "copy_d2d"));
  EXPECT_THAT(plan.sizes, ElementsAre(10, int64_t{1} << 33));
  EXPECT_THAT(plan.block_sizes, ElementsAre(64));
  EXPECT_THAT(plan.items_per_thread, ElementsAre(2));
  EXPECT_TRUE(plan.all_devices);
  EXPECT_EQ(plan.base.device_index, 1);
  EXPECT_EQ(plan.base.device_uuid, "GPU-y");
  EXPECT_EQ(plan.base.seed, std::optional<uint64_t>(5));
  EXPECT_FALSE(plan.base.verify.has_value());
  EXPECT_TRUE(plan.base.profile);
  EXPECT_TRUE(plan.base.force);
  EXPECT_EQ(plan.base.cache_mode, std::optional<CacheMode>(CacheMode::kHot));
  EXPECT_EQ(plan.base.measurement.min_samples, 4);
  EXPECT_EQ(plan.base.measurement.throttle_threshold, std::optional<double>(0));
  EXPECT_DOUBLE_EQ(plan.base.measurement.max_duty, 0.75);
  EXPECT_EQ(plan.base.measurement.placement_pad_bytes, 2 << 20);
  EXPECT_FALSE(plan.base.user_kernel.has_value());
  // A user kernel's sweep carries it in what every item shares.
  p.clear_kernels();
  p.mutable_user_kernel()->set_ptx(".version 8.0");
  p.mutable_user_kernel()->set_entry("my_add");
  p.mutable_user_kernel()->mutable_launch()->set_block_size(128);
  plan = FromProto(p);
  EXPECT_TRUE(plan.kernels.empty());
  ASSERT_TRUE(plan.base.user_kernel.has_value());
  EXPECT_EQ(plan.base.user_kernel->kind, UserCodeKind::kPtx);
  EXPECT_EQ(plan.base.user_kernel->entry, "my_add");
  EXPECT_EQ(plan.base.user_kernel->launch.block_size, 128);
}

TEST_F(ConvertTest, AutotuneRequestAndReport) {
  v1::AutotuneRequest p;
  p.set_kernel("add_f32_tuned");
  p.set_elements(99);
  p.set_device_index(1);
  p.add_block_sizes(128);
  p.add_items_per_thread(8);
  p.set_apply(true);
  p.mutable_measurement()->set_cache_mode(v1::HOT);
  p.mutable_measurement()->set_max_noise(0.02);
  p.mutable_measurement()->set_placement_pad_bytes(4096);
  AutotuneRequest r = FromProto(p);
  EXPECT_EQ(r.kernel, "add_f32_tuned");
  EXPECT_EQ(r.elements, 99);
  EXPECT_EQ(r.device_index, 1);
  EXPECT_THAT(r.block_sizes, ElementsAre(128));
  EXPECT_THAT(r.items_per_thread, ElementsAre(8));
  EXPECT_TRUE(r.apply);
  EXPECT_EQ(r.cache_mode, std::optional<CacheMode>(CacheMode::kHot));
  EXPECT_DOUBLE_EQ(r.measurement.max_noise, 0.02);
  EXPECT_EQ(r.measurement.placement_pad_bytes, 4096);

  AutotuneReport report;
  report.kernel = "add_f32_tuned";
  report.device_index = 1;
  report.skipped = {"too big"};
  AutotuneRow row;
  row.block_size = 128;
  row.items_per_thread = 8;
  row.median_seconds = 1e-3;
  row.theoretical_occupancy = 0.5;
  report.rows = {row};
  report.best = row;
  report.applied = true;
  v1::AutotuneResponse out;
  ToProto(report, &out);
  EXPECT_EQ(out.kernel(), "add_f32_tuned");
  EXPECT_EQ(out.device_index(), 1);
  EXPECT_THAT(out.skipped(), ElementsAre("too big"));
  ASSERT_EQ(out.rows_size(), 1);
  EXPECT_EQ(out.rows(0).items_per_thread(), 8);
  EXPECT_DOUBLE_EQ(out.rows(0).theoretical_occupancy(), 0.5);
  EXPECT_EQ(out.best_block_size(), 128);
  EXPECT_EQ(out.best_items_per_thread(), 8);
  EXPECT_EQ(out.speedup_over_catalog_default(), 0);  // not measured: absent
  EXPECT_TRUE(out.applied());
  EXPECT_FALSE(out.persisted());
}

// A user kernel's integrity figures reach the proto field by field.
TEST_F(ConvertTest, UserKernelIntegrityFigures) {
  RunResult r = AResult(engine_, /*keep_samples=*/false);
  r.user_kernel.emplace();
  r.user_kernel->integrity_checks = {"launch_count: each of the 40 recorded timed windows ..."};
  r.user_kernel->integrity = {.launch_count_applied = true,
                              .launch_count_source = "cupti_activity",
                              .windows_checked = 40,
                              .windows_unrecorded = 2,
                              .expected_operations = 1,
                              .foreign_kernels = 0,
                              .timer_cross_check_applied = true,
                              .timer_cross_check = "cuda_event against cupti_activity",
                              .timer_median_seconds = 31e-6,
                              .kernel_median_seconds = 30e-6,
                              .timer_ratio = 31.0 / 30.0,
                              .timer_tolerance = 0.01,
                              .timer_tolerance_seconds = 0.5e-6,
                              .floor_seconds = 28e-6,
                              .floor_bound = "dram",
                              .dram_floor_seconds = 28e-6,
                              .l2_floor_seconds = 3e-6,
                              .flop_floor_seconds = 0};
  v1::RunResult p;
  ToProto(r, &p);
  ASSERT_TRUE(p.has_user_kernel());
  EXPECT_THAT(p.user_kernel().integrity_checks(),
              ElementsAre(HasSubstr("launch_count: each of the 40")));
  const v1::UserKernelIntegrity& g = p.user_kernel().integrity();
  EXPECT_TRUE(g.launch_count_applied());
  EXPECT_EQ(g.launch_count_source(), "cupti_activity");
  EXPECT_EQ(g.launch_count_unavailable(), "");
  EXPECT_EQ(g.windows_checked(), 40);
  EXPECT_EQ(g.windows_unrecorded(), 2);
  EXPECT_EQ(g.expected_operations(), 1);
  EXPECT_EQ(g.foreign_kernels(), 0);
  EXPECT_TRUE(g.timer_cross_check_applied());
  EXPECT_EQ(g.timer_cross_check(), "cuda_event against cupti_activity");
  EXPECT_DOUBLE_EQ(g.timer_median_seconds(), 31e-6);
  EXPECT_DOUBLE_EQ(g.kernel_median_seconds(), 30e-6);
  EXPECT_DOUBLE_EQ(g.timer_ratio(), 31.0 / 30.0);
  EXPECT_DOUBLE_EQ(g.timer_tolerance(), 0.01);
  EXPECT_DOUBLE_EQ(g.timer_tolerance_seconds(), 0.5e-6);
  EXPECT_DOUBLE_EQ(g.floor_seconds(), 28e-6);
  EXPECT_EQ(g.floor_bound(), "dram");
  EXPECT_DOUBLE_EQ(g.dram_floor_seconds(), 28e-6);
  EXPECT_DOUBLE_EQ(g.l2_floor_seconds(), 3e-6);
  EXPECT_DOUBLE_EQ(g.flop_floor_seconds(), 0);
}

TEST_F(ConvertTest, KernelAndDeviceInfo) {
  v1::KernelInfo k;
  ToProto(**FindKernel("add_f32_bulk"), /*available=*/true, &k);
  EXPECT_EQ(k.name(), "add_f32_bulk");
  EXPECT_EQ(k.family(), (*FindKernel("add_f32_bulk"))->family->name);
  EXPECT_EQ(k.bytes_per_element(), 12);
  EXPECT_TRUE(k.default_policy().block_size_tunable());
  EXPECT_TRUE(k.available());

  DeviceInfo d = *engine_.backend().Describe(1);
  d.nvml_index = 3;
  v1::DeviceInfo out;
  ToProto(d, &out);
  EXPECT_EQ(out.index(), 1);
  EXPECT_EQ(out.nvml_index(), 3);
  EXPECT_EQ(out.free_memory_bytes(), d.free_memory_bytes);
}

}  // namespace
}  // namespace gpubench
