#include "server/engine/run_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/fake_backend.h"
#include "server/engine/resolve.h"
#include "server/engine/run_memory.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

class ResolveTest : public ::testing::Test {
 protected:
  ResolveTest() : backend_(MakeScript()) {}
  static testing::FakeScript MakeScript() {
    testing::FakeScript script;
    script.devices = 2;
    return script;
  }
  absl::StatusOr<RunSpec> Resolve(const RunRequest& r) {
    return ResolveRunRequest(r, backend_, limits_);
  }
  RunRequest Valid() {
    RunRequest r;
    r.kernel = "add_f32x4";
    r.elements = 1000;
    return r;
  }
  testing::FakeBackend backend_;
  ServerLimits limits_;
};

TEST_F(ResolveTest, DefaultsResolved) {
  absl::StatusOr<RunSpec> s = Resolve(Valid());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kernel->name, "add_f32x4");
  EXPECT_EQ(s->geometry.block_size, 64);
  EXPECT_EQ(s->geometry.items_per_thread, 4);
  EXPECT_EQ(s->geometry.grid_size, 4);  // ceil(1000 / 256), the seed's grid
  EXPECT_EQ(s->cache_mode, CacheMode::kCold);
  EXPECT_TRUE(s->verify);
  EXPECT_EQ(s->measurement.min_samples, 10);
  EXPECT_DOUBLE_EQ(s->measurement.max_noise, 0.005);
  EXPECT_DOUBLE_EQ(s->measurement.timeout_seconds, 15);
  EXPECT_EQ(s->measurement.throttle_threshold, std::optional<double>(0.75));  // nvbench's 75%
  EXPECT_DOUBLE_EQ(s->measurement.max_duty, 0);  // no pacing
  EXPECT_EQ(s->measurement.placement_pad_bytes, 0);  // buffers back to back
}

TEST_F(ResolveTest, MaxDutyIsKeptFromZeroToOne) {
  RunRequest r = Valid();
  for (double max_duty : {0.0, 0.05, 0.8, 1.0}) {
    r.measurement.max_duty = max_duty;
    absl::StatusOr<RunSpec> s = Resolve(r);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_DOUBLE_EQ(s->measurement.max_duty, max_duty);
  }
}

TEST_F(ResolveTest, PlacementPadFromTheRequestElseTheServerDefault) {
  RunRequest r = Valid();
  for (int64_t pad : {int64_t{1}, int64_t{34} << 20, kMaxPlacementPadBytes}) {
    r.measurement.placement_pad_bytes = pad;
    absl::StatusOr<RunSpec> s = Resolve(r);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->measurement.placement_pad_bytes, pad);
  }
  limits_.defaults.placement_pad_bytes = 2 << 20;  // --default_placement_pad_bytes
  r.measurement.placement_pad_bytes = 0;
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->measurement.placement_pad_bytes, 2 << 20);
  r.measurement.placement_pad_bytes = 4096;  // a request's own pad wins
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->measurement.placement_pad_bytes, 4096);
}

// Admission counts the pad after each device buffer of >= 1 MiB (the fake device has 1 GiB
// free): 16Mi add_f32 is three 64 MiB buffers, 192 MiB.
TEST_F(ResolveTest, MemoryAdmissionCountsThePlacementPad) {
  RunRequest r = Valid();
  r.kernel = "add_f32";
  r.elements = 16 << 20;
  r.measurement.placement_pad_bytes = 256 << 20;  // 3 x (64 + 256) MiB = 960 MiB: fits
  EXPECT_TRUE(Resolve(r).ok());
  r.measurement.placement_pad_bytes = 300 << 20;  // 3 x (64 + 300) MiB = 1092 MiB: does not
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(
      std::string(s.status().message()),
      HasSubstr(absl::StrCat("needs ", 3 * (int64_t{364} << 20) + (2 << 20) + 16,  // + the flush
                             " bytes of device memory")));
  r.elements = 1000;  // 4000-byte buffers get no pad: a 1 GiB pad still fits
  r.measurement.placement_pad_bytes = kMaxPlacementPadBytes;
  EXPECT_TRUE(Resolve(r).ok());
}

TEST(RunMemory, PlacementPadOnDeviceBuffersOfOneMibOrMore) {
  const KernelVariant& add = **FindKernel("add_f32");
  const int64_t pad = 5000;
  // 256Ki elements: three 1 MiB buffers, each padded; the host side is never padded.
  RunMemory with = RunMemoryOf(add, {.elements = 256 << 10}, true, pad);
  RunMemory without = RunMemoryOf(add, {.elements = 256 << 10}, true, 0);
  EXPECT_EQ(with.device_bytes, 3 * ((int64_t{1} << 20) + pad));
  EXPECT_EQ(without.device_bytes, 3 * (int64_t{1} << 20));
  EXPECT_EQ(with.host_bytes, without.host_bytes);
  // One element fewer: buffers under 1 MiB, no pad.
  EXPECT_EQ(RunMemoryOf(add, {.elements = (256 << 10) - 1}, true, pad).device_bytes,
            3 * ((int64_t{1} << 20) - 4));
  // The CPU backend ignores the pad, so admission counts none there.
  EXPECT_EQ(PlacementPadOn(MakeCpuBackend({})->capabilities(), pad), 0);
  BackendCapabilities pads;
  pads.placement_pads = true;
  EXPECT_EQ(PlacementPadOn(pads, pad), pad);
}

TEST_F(ResolveTest, PlacementsFromOneToSixteen) {
  RunRequest r = Valid();
  for (const auto& [asked, resolved] : {std::pair{0, 1}, {1, 1}, {4, 4}, {kMaxPlacements, 16}}) {
    r.measurement.placements = asked;
    absl::StatusOr<RunSpec> s = Resolve(r);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->measurement.placements, resolved) << asked;
  }
  for (int bad : {-1, kMaxPlacements + 1}) {
    r.measurement.placements = bad;
    absl::StatusOr<RunSpec> s = Resolve(r);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr(absl::StrCat("measurement.placements = ", bad, " is outside [1, 16]")));
  }
}

// Copies are allocated again at will only where every buffer is on the run's device and no launch
// state was made for the first copy: GEMM (cuBLASLt plan, workspace) and host copies refuse.
TEST_F(ResolveTest, PlacementsNeedDeviceBuffersAndNoLaunchState) {
  RunRequest r;
  r.measurement.placements = 2;
  for (const auto& [kernel, why] :
       {std::pair<std::string, std::string>{"gemm_f16", "keeps launch state"},
        {"copy_h2d_pinned", "has buffers in host or peer memory"}}) {
    r.kernel = kernel;
    r.elements = 64;
    absl::StatusOr<RunSpec> s = Resolve(r);
    ASSERT_FALSE(s.ok()) << kernel;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(why));
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("measurement.placements = 2"));
  }
  r.kernel = "saxpy_balanced";  // device buffers, an in-out among them: rotates
  r.elements = 1000;
  EXPECT_TRUE(Resolve(r).ok());
}

// Admission counts every copy's device buffers (the fake device has 1 GiB free): 16Mi add_f32 is
// three 64 MiB buffers, 192 MiB a copy.
TEST_F(ResolveTest, MemoryAdmissionCountsEveryPlacement) {
  RunRequest r = Valid();
  r.kernel = "add_f32";
  r.elements = 16 << 20;
  r.measurement.placements = 5;  // 960 MiB: fits
  EXPECT_TRUE(Resolve(r).ok());
  r.measurement.placements = 6;  // 1152 MiB: does not
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(
      std::string(s.status().message()),
      HasSubstr(absl::StrCat("needs ", 6 * 3 * (int64_t{64} << 20) + (2 << 20) + 16,
                             " bytes of device memory (the cache flush buffer ", (2 << 20) + 16)));
}

// The flush buffer: 2x L2 (clean) or 1x (memset) on CUDA, hot or cold (allocated at Open); 2x
// the last-level cache on the CPU backend for cold runs only (a hot run never touches it).
TEST(RunMemory, FlushBufferCounted) {
  const BackendCapabilities on_cpu = MakeCpuBackend({})->capabilities();
  const BackendCapabilities on_gpu = testing::FakeBackend(testing::FakeScript{}).capabilities();
  DeviceInfo gpu;
  gpu.l2_cache_bytes = int64_t{60} << 20;
  EXPECT_EQ(FlushBytesOn(on_gpu, gpu, CacheMode::kCold, L2Flush::kClean),
            (int64_t{120} << 20) + 16);
  EXPECT_EQ(FlushBytesOn(on_gpu, gpu, CacheMode::kHot, L2Flush::kMemset),
            (int64_t{60} << 20) + 16);
  DeviceInfo cpu;
  cpu.l2_cache_bytes = int64_t{1} << 20;
  cpu.l3_cache_bytes = int64_t{32} << 20;
  EXPECT_EQ(FlushBytesOn(on_cpu, cpu, CacheMode::kCold, L2Flush::kClean),
            int64_t{64} << 20);
  EXPECT_EQ(FlushBytesOn(on_cpu, cpu, CacheMode::kHot, L2Flush::kClean), 0);
  cpu.l3_cache_bytes = 0;  // unknown: at least 4 MiB, as the backend allocates
  EXPECT_EQ(FlushBytesOn(on_cpu, cpu, CacheMode::kCold, L2Flush::kClean),
            int64_t{8} << 20);

  RunSpec spec;
  spec.kernel = *FindKernel("add_f32");
  spec.shape = {.elements = 1 << 20};
  spec.verify = true;
  spec.cache_mode = CacheMode::kCold;
  DeviceInfo host;
  host.l3_cache_bytes = int64_t{32} << 20;
  const RunMemory need = RunMemoryOf(spec, on_cpu, host);
  EXPECT_EQ(need.flush_bytes, int64_t{64} << 20);
  EXPECT_EQ(need.device_bytes, 3 * (int64_t{4} << 20) + (int64_t{64} << 20));
  EXPECT_EQ(need.host_bytes, 3 * (int64_t{4} << 20));  // two inputs and the read-back
}

// A backend that generates inputs and verifies on the device (the CUDA backend) needs no host
// copy of the inputs and no whole read-back: admission counted 3 GiB of host memory for a
// verified 256Mi add that allocates none of it.
TEST(RunMemory, InputsAndChecksOnTheDeviceCountNoHostCopies) {
  const KernelVariant& add = **FindKernel("add_f32");
  const RunShape shape{.elements = 1 << 20};
  const int64_t bytes = BufferBytes(add, shape, 0);
  EXPECT_EQ(RunMemoryOf(add, shape, /*verify=*/true, 0, 1, /*on_device=*/false).host_bytes,
            3 * bytes);
  EXPECT_EQ(RunMemoryOf(add, shape, /*verify=*/false, 0, 1, /*on_device=*/true).host_bytes, 0);
  // Verified: on the device where the build has the kernel's CUDA launcher and device check,
  // else on the host, which needs both copies.
  EXPECT_EQ(RunMemoryOf(add, shape, /*verify=*/true, 0, 1, /*on_device=*/true).host_bytes,
            VerifiableOnDevice(add) ? 0 : 3 * bytes);
  // Device buffers are counted either way.
  EXPECT_EQ(RunMemoryOf(add, shape, true, 0, 1, true).device_bytes, 3 * bytes);
}

// Host-placed buffers are allocated again for every placement copy.
TEST(RunMemory, HostPlacedBuffersCountEveryCopy) {
  const KernelVariant& h2d = **FindKernel("copy_h2d_pinned");
  const RunMemory one = RunMemoryOf(h2d, {.elements = 1 << 20}, false, 0, 1);
  const RunMemory two = RunMemoryOf(h2d, {.elements = 1 << 20}, false, 0, 2);
  EXPECT_EQ(two.host_bytes - one.host_bytes, BufferBytes(h2d, {.elements = 1 << 20}, 0));  // src
  EXPECT_EQ(two.device_bytes, 2 * one.device_bytes);
}

// The case scaled down: a run counted to fit just under the limit is refused because of
// its flush buffer and the headroom; the message names every figure.
TEST(RunMemory, HeadroomAndFlushRefuseARunJustUnderTheLimit) {
  const RunMemory need{.host_bytes = int64_t{900} << 20,
                       .device_bytes = (int64_t{900} << 20) + (int64_t{64} << 20),
                       .flush_bytes = int64_t{64} << 20};
  DeviceInfo cpu;
  const int64_t buffers_only = need.host_bytes + need.device_bytes - need.flush_bytes;
  const int64_t limit = buffers_only + (int64_t{1} << 20);  // fitted before: buffers only
  const absl::Status s = CheckRunMemoryFits(need, cpu, /*device_is_host=*/true, limit, "test");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr(absl::StrCat("needs ", buffers_only + need.flush_bytes, " bytes of host memory")));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("the cache flush buffer ", need.flush_bytes)));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("plus ", HostHeadroomBytes(buffers_only + need.flush_bytes),
                                     " headroom; the host can give ", limit)));
  // With the flush and the headroom available it fits.
  const int64_t enough =
      buffers_only + need.flush_bytes + HostHeadroomBytes(buffers_only + need.flush_bytes);
  EXPECT_TRUE(CheckRunMemoryFits(need, cpu, true, enough, "test").ok());
  EXPECT_FALSE(CheckRunMemoryFits(need, cpu, true, enough - 1, "test").ok());
  EXPECT_EQ(HostHeadroomBytes(int64_t{32} << 30), (int64_t{64} << 20) + (int64_t{1} << 30));
}

TEST(RunMemory, PlacementsCountEveryDeviceCopy) {
  const KernelVariant& add = **FindKernel("add_f32");
  const RunMemory one = RunMemoryOf(add, {.elements = 256 << 10}, true, 5000);
  const RunMemory four = RunMemoryOf(add, {.elements = 256 << 10}, true, 5000, 4);
  EXPECT_EQ(four.device_bytes, 4 * one.device_bytes);  // the pad too, after every copy's buffer
  EXPECT_EQ(four.host_bytes, one.host_bytes);          // one set of inputs, one read-back
  // The CPU backend ignores the option.
  EXPECT_EQ(PlacementsOn(MakeCpuBackend({})->capabilities(), 4), 1);
  BackendCapabilities copies;
  copies.placement_copies = true;
  EXPECT_EQ(PlacementsOn(copies, 4), 4);
  EXPECT_EQ(PlacementsOn(copies, 0), 1);
}

TEST_F(ResolveTest, ThrottleThresholdZeroKeepsEverySampleAndIsKept) {
  RunRequest r = Valid();
  r.measurement.throttle_threshold = 0;  // not "the default": 0 turns discarding off
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->measurement.throttle_threshold, std::optional<double>(0));
  r.measurement.throttle_threshold = 0.9;
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->measurement.throttle_threshold, std::optional<double>(0.9));
}

TEST_F(ResolveTest, RequestOverridesAndSeedEcho) {
  RunRequest r = Valid();
  r.block_size = 256;
  r.cache_mode = CacheMode::kHot;
  r.seed = 1234;
  r.verify = false;
  r.measurement.min_samples = 3;
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 256);
  EXPECT_EQ(s->geometry.grid_size, 1);
  EXPECT_EQ(s->seed, 1234u);
  EXPECT_FALSE(s->verify);
  EXPECT_EQ(s->measurement.min_samples, 3);
}

struct BadCase {
  const char* what;
  std::function<void(RunRequest&)> mutate;
  absl::StatusCode code;
  const char* message_part;
};

TEST_F(ResolveTest, EveryInvalidInputClass) {
  const std::vector<BadCase> cases = {
      {"unknown kernel", [](RunRequest& r) { r.kernel = "add_f64"; }, absl::StatusCode::kNotFound,
       "valid kernels"},
      {"empty kernel", [](RunRequest& r) { r.kernel = ""; }, absl::StatusCode::kInvalidArgument,
       "kernel is required"},
      {"zero size", [](RunRequest& r) { r.elements = 0; }, absl::StatusCode::kInvalidArgument,
       "at least 1"},
      {"negative size", [](RunRequest& r) { r.elements = -5; },
       absl::StatusCode::kInvalidArgument, "at least 1"},
      {"size over limit", [](RunRequest& r) { r.elements = (int64_t{1} << 31) + 1; },
       absl::StatusCode::kInvalidArgument, "--max_elements"},
      {"device out of range", [](RunRequest& r) { r.device_index = 2; },
       absl::StatusCode::kInvalidArgument, "out of range"},
      {"negative device", [](RunRequest& r) { r.device_index = -1; },
       absl::StatusCode::kInvalidArgument, "out of range"},
      {"block not multiple of 32", [](RunRequest& r) { r.block_size = 100; },
       absl::StatusCode::kInvalidArgument, "multiple of the warp size"},
      {"negative block", [](RunRequest& r) { r.block_size = -32; },
       absl::StatusCode::kInvalidArgument, "multiple of the warp size"},
      {"block over device max", [](RunRequest& r) { r.block_size = 2048; },
       absl::StatusCode::kInvalidArgument, "device maximum"},
      {"block on library kernel", [](RunRequest& r) { r.kernel = "cub_add_f32"; r.block_size = 128; },
       absl::StatusCode::kInvalidArgument, "omit block_size"},
      {"negative samples", [](RunRequest& r) { r.measurement.min_samples = -1; },
       absl::StatusCode::kInvalidArgument, "min_samples"},
      {"max below min samples",
       [](RunRequest& r) { r.measurement.min_samples = 10; r.measurement.max_samples = 5; },
       absl::StatusCode::kInvalidArgument, "max_samples"},
      {"noise over 1", [](RunRequest& r) { r.measurement.max_noise = 2; },
       absl::StatusCode::kInvalidArgument, "max_noise"},
      {"noise given in percent", [](RunRequest& r) { r.measurement.max_noise = 5; },
       absl::StatusCode::kInvalidArgument, "looks like a percent"},
      {"negative profile runs", [](RunRequest& r) { r.measurement.profile_runs = -1; },
       absl::StatusCode::kInvalidArgument, "profile_runs"},
      {"too many profile runs", [](RunRequest& r) { r.measurement.profile_runs = 1 << 20; },
       absl::StatusCode::kInvalidArgument, "profile_runs"},
      {"timeout over limit", [](RunRequest& r) { r.measurement.timeout_seconds = 1e6; },
       absl::StatusCode::kInvalidArgument, "timeout_seconds"},
      {"negative min time", [](RunRequest& r) { r.measurement.min_time_seconds = -1; },
       absl::StatusCode::kInvalidArgument, "min_time_seconds"},
      {"NaN timeout", [](RunRequest& r) { r.measurement.timeout_seconds = std::nan(""); },
       absl::StatusCode::kInvalidArgument, "timeout_seconds"},
      {"infinite noise", [](RunRequest& r) { r.measurement.max_noise = INFINITY; },
       absl::StatusCode::kInvalidArgument, "max_noise"},
      {"throttle threshold 1", [](RunRequest& r) { r.measurement.throttle_threshold = 1.0; },
       absl::StatusCode::kInvalidArgument, "throttle_threshold = 1 is outside [0, 1)"},
      {"throttle threshold in percent", [](RunRequest& r) { r.measurement.throttle_threshold = 75; },
       absl::StatusCode::kInvalidArgument, "throttle_threshold"},
      {"negative throttle threshold",
       [](RunRequest& r) { r.measurement.throttle_threshold = -0.1; },
       absl::StatusCode::kInvalidArgument, "throttle_threshold"},
      {"NaN throttle threshold",
       [](RunRequest& r) { r.measurement.throttle_threshold = std::nan(""); },
       absl::StatusCode::kInvalidArgument, "throttle_threshold"},
      {"max duty over 1", [](RunRequest& r) { r.measurement.max_duty = 1.5; },
       absl::StatusCode::kInvalidArgument, "max_duty = 1.5 is outside [0, 1]"},
      {"max duty in percent", [](RunRequest& r) { r.measurement.max_duty = 80; },
       absl::StatusCode::kInvalidArgument, "max_duty"},
      {"negative max duty", [](RunRequest& r) { r.measurement.max_duty = -0.5; },
       absl::StatusCode::kInvalidArgument, "max_duty"},
      {"NaN max duty", [](RunRequest& r) { r.measurement.max_duty = std::nan(""); },
       absl::StatusCode::kInvalidArgument, "max_duty"},
      {"infinite max duty", [](RunRequest& r) { r.measurement.max_duty = INFINITY; },
       absl::StatusCode::kInvalidArgument, "max_duty"},
      {"negative placement pad", [](RunRequest& r) { r.measurement.placement_pad_bytes = -1; },
       absl::StatusCode::kInvalidArgument,
       "placement_pad_bytes = -1 is outside [0, 1073741824] (1 GiB)"},
      {"placement pad over 1 GiB",
       [](RunRequest& r) { r.measurement.placement_pad_bytes = kMaxPlacementPadBytes + 1; },
       absl::StatusCode::kInvalidArgument, "placement_pad_bytes = 1073741825 is outside"},
      {"too many warmups", [](RunRequest& r) { r.measurement.warmup_launches = 1 << 20; },
       absl::StatusCode::kInvalidArgument, "warmup_launches"},
      {"over free memory", [](RunRequest& r) { r.elements = int64_t{1} << 30; },
       absl::StatusCode::kResourceExhausted, "bytes free"},
  };
  for (const BadCase& c : cases) {
    RunRequest r = Valid();
    c.mutate(r);
    absl::StatusOr<RunSpec> s = Resolve(r);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.status().code(), c.code) << c.what << ": " << s.status();
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.message_part)) << c.what;
  }
}

TEST_F(ResolveTest, GridLimit) {
  RunRequest r = Valid();
  r.kernel = "add_f32";
  r.block_size = 32;
  r.elements = int64_t{1} << 37;
  limits_.max_elements = int64_t{1} << 40;
  backend_.script().free_memory_bytes = int64_t{1} << 50;
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("grid limit"));
}

TEST_F(ResolveTest, ItemsPerThreadFromRequestWithSharedMemoryAndGrid) {
  RunRequest r = Valid();
  r.kernel = "add_f32_bulk";
  r.elements = 100000;
  r.items_per_thread = 32;
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 256);
  EXPECT_EQ(s->geometry.items_per_thread, 32);
  EXPECT_EQ(s->geometry.dynamic_shared_bytes, 256 * 32 * 8);  // two f32 tiles
  EXPECT_EQ(s->geometry.grid_size, (100000 + 8191) / 8192);
  EXPECT_EQ(s->block_size_source, "request");
  r.items_per_thread = 0;
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.items_per_thread, 3);  // the catalog's (CUB's f32 tile on an H200)
  EXPECT_EQ(s->geometry.dynamic_shared_bytes, 256 * 3 * 8);
  EXPECT_EQ(s->block_size_source, "catalog");
}

TEST_F(ResolveTest, ItemsPerThreadRejections) {
  RunRequest r = Valid();  // add_f32x4: items fixed by its code
  r.items_per_thread = 8;
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("omit items_per_thread"));
  r.kernel = "add_f32_tuned";
  for (int bad : {-4, 3, 12, 64}) {
    r.items_per_thread = bad;
    s = Resolve(r);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("times a power of two, at most 32"));
  }
}

TEST_F(ResolveTest, SharedMemoryOverTheDeviceLimitIsRejected) {
  backend_.script().shared_memory_per_block_optin_bytes = 227 * 1024;
  RunRequest r = Valid();
  r.kernel = "add_f32_bulk";
  r.block_size = 1024;
  r.items_per_thread = 32;  // 1024 x 32 x 8 = 256 KiB
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("allows at most 232448"));
  r.items_per_thread = 16;  // 128 KiB: opt-in territory, allowed
  EXPECT_TRUE(Resolve(r).ok());
}

TEST_F(ResolveTest, BulkCopyNeedsHopperOnCudaDevices) {
  RunRequest r = Valid();
  r.kernel = "add_f16_bulk";
  backend_.script().compute_capability = 80;
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("needs compute capability 9.0"));
  backend_.script().compute_capability = 90;
  EXPECT_TRUE(Resolve(r).ok());
  backend_.script().compute_capability = 0;  // CPU-like device: emulated
  EXPECT_TRUE(Resolve(r).ok());
}

TEST_F(ResolveTest, TunedDefaultsSupplyWhatTheRequestLeavesOut) {
  TunedDefaults tuned;
  tuned.Set(0, "add_f16_tuned", TunedLaunch{512, 32});
  RunRequest r = Valid();
  r.kernel = "add_f16_tuned";
  absl::StatusOr<RunSpec> s = ResolveRunRequest(r, backend_, limits_, &tuned);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 512);
  EXPECT_EQ(s->geometry.items_per_thread, 32);
  EXPECT_EQ(s->block_size_source, "tuned");
  r.block_size = 128;
  s = ResolveRunRequest(r, backend_, limits_, &tuned);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 128);
  EXPECT_EQ(s->geometry.items_per_thread, 32);
  EXPECT_EQ(s->block_size_source, "request+tuned");
  r.device_index = 1;  // tuned on device 0 only
  s = ResolveRunRequest(r, backend_, limits_, &tuned);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.items_per_thread, 8);  // the catalog's
  EXPECT_EQ(s->block_size_source, "request");
}

TEST_F(ResolveTest, SmallGridsUseTheSmallerCatalogBlock) {
  // An H200's shape: 132 SMs x 2048 threads; 768-thread blocks -> 2 resident per SM, 264 a wave.
  backend_.script().multiprocessor_count = 132;
  backend_.script().max_threads_per_multiprocessor = 2048;
  RunRequest r = Valid();
  r.kernel = "add_f32_tuned";  // 768 threads x 4 floats
  r.elements = 1 << 20;        // 342 blocks: 1.3 waves < 8
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 256);
  EXPECT_EQ(s->geometry.grid_size, (1 << 20) / 1024);
  EXPECT_EQ(s->block_size_source, "catalog (small grid)");
  r.elements = 16 << 20;  // 5462 blocks: 20.7 waves
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 768);
  EXPECT_EQ(s->block_size_source, "catalog");
  r.elements = 1 << 20;  // a requested block is never replaced
  r.block_size = 768;
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 768);
  EXPECT_EQ(s->block_size_source, "request");
  r.block_size = 0;
  r.kernel = "add_f32x4";  // no small-grid block in its policy
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 64);
}

TEST_F(ResolveTest, GridStrideGridHonoursTheCatalogCapPerSm) {
  // H200 shape: 132 SMs x 2048 threads -> 8 resident 256-thread blocks per SM by the thread
  // limit; add_f16_gridstride caps its grid at 4 per SM, add_f32_gridstride takes them all.
  backend_.script().multiprocessor_count = 132;
  backend_.script().max_threads_per_multiprocessor = 2048;
  RunRequest r = Valid();
  r.elements = 16 << 20;
  r.kernel = "add_f16_gridstride";
  absl::StatusOr<RunSpec> s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.block_size, 256);
  EXPECT_EQ(s->geometry.grid_size, 132 * 4);
  r.kernel = "add_f32_gridstride";
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.grid_size, 132 * 8);
  r.kernel = "add_f16_gridstride";
  r.elements = 1000;  // fewer blocks than the cap: one per 256 x 32 elements
  s = Resolve(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->geometry.grid_size, 1);
}

}  // namespace
}  // namespace gpubench
