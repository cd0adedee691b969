// The worker protocol's encoding: the engine's structs survive the trip field by field, statuses
// keep their markers, frames survive a socket and bad frames are refused.
#include "server/worker/wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "absl/time/clock.h"
#include "kernels/catalog.h"

namespace gpubench {
namespace {

TEST(WorkerWire, RunSpecRoundTrips) {
  RunSpec spec;
  spec.kernel = *FindKernel("add_f16x8_pack");
  spec.elements = 12345;
  spec.shape = {.elements = 12345, .m = 1, .n = 2, .k = 3};
  spec.device_index = 1;
  spec.peer_device_index = 0;
  spec.geometry = {.block_size = 512, .items_per_thread = 8, .grid_size = 77,
                   .dynamic_shared_bytes = 4096};
  spec.block_size_source = "tuned";
  spec.cache_mode = CacheMode::kHot;
  spec.measurement.max_noise = 0.0123;
  spec.measurement.timer = TimerChoice::kGpuTime;
  spec.measurement.throttle_threshold = 0.6;
  spec.measurement.placements = 4;
  spec.verify = false;
  spec.seed = 0xfedcba9876543210ull;
  spec.profile = true;
  spec.scheduled = true;
  spec.keep_buffers = true;
  spec.buffer_chain = 0x0123456789abcdefull;
  spec.max_warmup_seconds = 2.5;
  absl::StatusOr<RunSpec> back = DecodeRunSpec(EncodeRunSpec(spec));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kernel, spec.kernel);
  EXPECT_EQ(back->shape.k, 3);
  EXPECT_EQ(back->peer_device_index, 0);
  EXPECT_EQ(back->geometry.grid_size, 77);
  EXPECT_EQ(back->geometry.dynamic_shared_bytes, 4096);
  EXPECT_EQ(back->block_size_source, "tuned");
  EXPECT_EQ(back->cache_mode, CacheMode::kHot);
  EXPECT_DOUBLE_EQ(back->measurement.max_noise, 0.0123);
  EXPECT_EQ(back->measurement.timer, TimerChoice::kGpuTime);
  EXPECT_EQ(back->measurement.throttle_threshold, 0.6);
  EXPECT_EQ(back->measurement.placements, 4);
  EXPECT_FALSE(back->verify);
  EXPECT_EQ(back->seed, spec.seed);
  EXPECT_TRUE(back->profile);
  EXPECT_TRUE(back->scheduled);
  EXPECT_TRUE(back->keep_buffers);
  EXPECT_EQ(back->buffer_chain, spec.buffer_chain);
  EXPECT_EQ(back->max_warmup_seconds, 2.5);
}

TEST(WorkerWire, AKernelThisProcessDoesNotKnowIsRefused) {
  RunSpec spec;
  spec.kernel = *FindKernel("add_f32");
  std::string cbor = EncodeRunSpec(spec);
  const size_t at = cbor.find("add_f32");
  ASSERT_NE(at, std::string::npos);
  cbor[at + 4] = 'X';  // "add_X32"
  absl::StatusOr<RunSpec> back = DecodeRunSpec(cbor);
  EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(back.status().message(), testing::HasSubstr("not in this worker's catalog"));
}

TEST(WorkerWire, RunResultRoundTripsWithOptionalsNaNAndTimes) {
  RunResult r;
  r.run_id = "abc";
  r.spec.kernel = *FindKernel("copy_d2d");
  r.queued_at = absl::FromUnixNanos(1700000000123456789);
  r.stats.median_seconds = 1.25e-6;
  r.stats.p95_seconds = std::numeric_limits<double>::quiet_NaN();
  r.sample_seconds = {1e-6, 2e-6, 3e-6};
  r.notes = {"a", "b"};
  r.event_median_seconds = 1.5e-6;
  r.max_clock_hz = std::nullopt;
  r.percent_of_peak = 91.5;
  r.verification = Verification{.passed = true,
                                 .checked = 99,
                                 .where = VerifiedWhere::kDevice,
                                 .device_checked = 99,
                                 .host_checked = 64,
                                 .method = "all 99 elements on the device + 64 sampled on the host",
                                 .first_mismatch_buffer = "c",
                                 .first_mismatches = {{.buffer = "c", .index = 5, .actual = 2}}};
  r.occupancy = OccupancyReport{.limiter = "registers"};
  r.counters.achieved_occupancy = 0.5;
  r.device.uuid = "GPU-x";
  r.device.pcie_link_rate_source = "max";
  r.stop_rule = StopRule::kNoiseConverged;
  r.clock_event_reasons = {"sw_power_cap"};
  WindowAudit& audit = r.window_audit.emplace();
  audit.source = WindowSource::kRangeProfiler;
  TallyWindow(1, WindowActivity{.operations = 1, .kernels = 1}, &audit);
  TallyWindow(2, WindowActivity{.operations = 2, .kernels = 1, .foreign_kernels = 3}, &audit);
  TallyWindow(3, std::nullopt, &audit);
  audit.kernel_median_seconds = 9e-6;
  r.phases.open_seconds = 0.25;
  r.phases.buffers_reused = true;
  r.phases.buffers_kept = true;
  absl::StatusOr<RunResult> back = DecodeRunResult(EncodeRunResult(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_id, "abc");
  EXPECT_EQ(back->spec.kernel, r.spec.kernel);
  EXPECT_EQ(back->queued_at, r.queued_at);
  EXPECT_EQ(back->stats.median_seconds, 1.25e-6);
  EXPECT_TRUE(std::isnan(back->stats.p95_seconds));
  EXPECT_EQ(back->sample_seconds, r.sample_seconds);
  EXPECT_EQ(back->notes, r.notes);
  EXPECT_EQ(back->event_median_seconds, 1.5e-6);
  EXPECT_FALSE(back->max_clock_hz.has_value());
  EXPECT_EQ(back->percent_of_peak, 91.5);
  ASSERT_TRUE(back->verification.has_value());
  EXPECT_EQ(back->verification->checked, 99);
  EXPECT_EQ(back->verification->first_mismatch_buffer, "c");
  EXPECT_EQ(back->verification->where, VerifiedWhere::kDevice);
  EXPECT_EQ(back->verification->device_checked, 99);
  EXPECT_EQ(back->verification->host_checked, 64);
  EXPECT_EQ(back->verification->method, r.verification->method);
  ASSERT_EQ(back->verification->first_mismatches.size(), 1u);
  EXPECT_EQ(back->verification->first_mismatches[0].index, 5);
  EXPECT_EQ(back->verification->first_mismatches[0].actual, 2);
  EXPECT_EQ(back->occupancy->limiter, "registers");
  EXPECT_EQ(back->counters.achieved_occupancy, 0.5);
  EXPECT_EQ(back->device.uuid, "GPU-x");
  EXPECT_EQ(back->device.pcie_link_rate_source, "max");
  EXPECT_EQ(back->stop_rule, StopRule::kNoiseConverged);
  EXPECT_EQ(back->clock_event_reasons, r.clock_event_reasons);
  ASSERT_TRUE(back->window_audit.has_value());
  EXPECT_EQ(back->window_audit->source, WindowSource::kRangeProfiler);
  ASSERT_EQ(back->window_audit->tallies.size(), 2u);
  EXPECT_EQ(back->window_audit->tallies[1].foreign_kernels, 3);
  EXPECT_EQ(back->window_audit->tallies[1].first_sample, 2);
  EXPECT_EQ(back->window_audit->unrecorded_windows, 1);
  EXPECT_EQ(back->window_audit->kernel_median_seconds, 9e-6);
  EXPECT_FALSE(back->window_audit->timer_median_seconds.has_value());
  EXPECT_EQ(back->phases.open_seconds, 0.25);
  EXPECT_TRUE(back->phases.buffers_reused);
  EXPECT_TRUE(back->phases.buffers_kept);
}

TEST(WorkerWire, StatusesKeepCodeMessageAndMarkers) {
  absl::Status lost = absl::InternalError("cudaErrorIllegalAddress");
  lost.SetPayload(kDeviceLostPayload, absl::Cord("x"));
  worker::v1::Status wire;
  StatusToWire(lost, &wire);
  const absl::Status back = StatusFromWire(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(back.message(), "cudaErrorIllegalAddress");
  EXPECT_TRUE(IsDeviceLost(back));
  worker::v1::Status ok;
  StatusToWire(absl::OkStatus(), &ok);
  EXPECT_TRUE(StatusFromWire(ok).ok());
}

TEST(WorkerWire, FramesCrossASocketAndBadOnesAreRefused) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  worker::v1::Request request;
  request.set_id(42);
  request.mutable_describe()->set_device(3);
  ASSERT_TRUE(WriteFrame(sv[0], request).ok());
  worker::v1::Request got;
  ASSERT_TRUE(ReadFrame(sv[1], &got).ok());
  EXPECT_EQ(got.id(), 42u);
  EXPECT_EQ(got.describe().device(), 3);

  const unsigned char huge[4] = {0xff, 0xff, 0xff, 0x7f};  // 2 GiB announced
  ASSERT_EQ(write(sv[0], huge, 4), 4);
  EXPECT_EQ(ReadFrame(sv[1], &got).code(), absl::StatusCode::kDataLoss);

  const unsigned char partial[6] = {10, 0, 0, 0, 1, 2};  // 10 bytes announced, 2 sent, then EOF
  ASSERT_EQ(write(sv[0], partial, 6), 6);
  close(sv[0]);
  const absl::Status cut = ReadFrame(sv[1], &got);
  EXPECT_EQ(cut.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(cut.message(), testing::HasSubstr("middle of a frame"));
  EXPECT_EQ(ReadFrame(sv[1], &got).message(), "closed");
  close(sv[1]);
}

}  // namespace
}  // namespace gpubench
