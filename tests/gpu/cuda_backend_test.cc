// The CUDA backend on a real GPU (ctest label "gpu"). Where no GPU is usable every test skips
// and prints why.
#include "kernels/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/status_macros.h"
#include "gpu/cuda_test.h"
#include "kernels/catalog.h"
#include "kernels/cuda/timing.h"
#include "kernels/reference.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"

namespace gpubench {
namespace {

TEST_F(CudaTest, DescribeFillsTheSpecs) {
  absl::StatusOr<DeviceInfo> d = backend_->Describe(0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->backend, "cuda");
  EXPECT_FALSE(d->name.empty());
  EXPECT_EQ(d->uuid.rfind("GPU-", 0), 0u) << d->uuid;
  EXPECT_GE(d->compute_capability_major, 7);
  EXPECT_GT(d->multiprocessor_count, 0);
  EXPECT_GT(d->max_threads_per_multiprocessor, 0);
  EXPECT_GT(d->max_blocks_per_multiprocessor, 0);
  EXPECT_GT(d->registers_per_multiprocessor, 0);
  EXPECT_GT(d->shared_memory_per_multiprocessor_bytes, 0);
  EXPECT_EQ(d->warp_size, 32);
  EXPECT_GT(d->l2_cache_bytes, 0);
  EXPECT_GT(d->memory_bus_width_bits, 0);
  EXPECT_GT(d->memory_clock_hz, 0);
  EXPECT_GT(d->sm_clock_hz, 0);
  EXPECT_GT(d->peak_bandwidth_bytes_per_second, 1e11);
  EXPECT_GT(d->total_memory_bytes, d->free_memory_bytes / 2);
  EXPECT_FALSE(d->driver_version.empty());
}

// Measurement v2 on the GPU: the blocking kernel reads the SM clock (no extra launch), profile
// mode runs exactly N plain launches, and both agree with each other within launch overhead.
TEST_F(CudaTest, ClockFromTheBlockingKernelAndProfileMode) {
  RunRequest r = Quick("add_f32", int64_t{16} << 20);
  r.measurement.min_samples = 20;
  absl::StatusOr<RunResult> sampled = Run(r);
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  ASSERT_TRUE(sampled->min_clock_hz.has_value()) << "no clock read by the blocking kernel";
  EXPECT_GT(*sampled->max_clock_hz, 0.3 * sampled->device.sm_clock_hz);
  EXPECT_LT(*sampled->max_clock_hz, 1.5 * sampled->device.sm_clock_hz);
  EXPECT_FALSE(sampled->profile_mode);
  r.measurement.profile_runs = 4;
  absl::StatusOr<RunResult> profiled = Run(r);
  ASSERT_TRUE(profiled.ok()) << profiled.status();
  EXPECT_TRUE(profiled->profile_mode);
  EXPECT_EQ(profiled->stats.count, 4);
  EXPECT_EQ(profiled->stop_rule, StopRule::kProfileRuns);
  EXPECT_TRUE(profiled->verification->passed);
  // One 16Mi launch is ~60 us; an unblocked launch adds only microseconds of launch latency.
  EXPECT_NEAR(profiled->stats.median_seconds, sampled->stats.median_seconds,
              0.25 * sampled->stats.median_seconds);
}

class EveryCudaVariant : public CudaTest, public ::testing::WithParamInterface<const KernelVariant*> {
 protected:
  // Runs k at each size cold and hot; every run must pass verification with sane statistics.
  void ExpectVerifiedColdAndHot(const KernelVariant& k, const std::vector<int64_t>& sizes) {
    for (int64_t n : sizes) {
      for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
        RunRequest r = Quick(std::string(k.name), n);
        r.cache_mode = mode;
        absl::StatusOr<RunResult> result = Run(r);
        ASSERT_TRUE(result.ok()) << k.name << " n=" << n << ": " << result.status();
        ASSERT_TRUE(result->verification.has_value());
        EXPECT_TRUE(result->verification->passed)
            << k.name << " n=" << n << " mode=" << CacheModeName(mode) << ": "
            << result->verification->mismatches << " mismatches, first at "
            << result->verification->first_mismatch_index << " expected "
            << result->verification->first_mismatch_expected << " got "
            << result->verification->first_mismatch_actual;
        EXPECT_GE(result->stats.count, 3);
        EXPECT_GT(result->stats.median_seconds, 0);
        EXPECT_LE(result->stats.min_seconds, result->stats.median_seconds);
        // A peak is known for HBM (the default) and GEMM (tensor table); host copies need NVML's
        // PCIe link (this binary has no NVML amendment) and peer copies have none.
        if (k.family->peak == nullptr ? k.family->metric == Metric::kBytesPerSecond
                                      : k.family->metric == Metric::kOperationsPerSecond) {
          EXPECT_TRUE(result->percent_of_peak.has_value()) << k.name;
        }
        // The SM clock is read by the blocking kernel; families timed without it (pageable copies,
        // which wait for their stream) have no reading, and their method text says so.
        if (k.family->blocking_kernel) {
          EXPECT_TRUE(result->min_clock_hz.has_value()) << k.name;
          EXPECT_THAT(result->method, ::testing::HasSubstr("blocking kernel")) << k.name;
          EXPECT_THAT(result->method, ::testing::Not(::testing::HasSubstr("idle stream")));
        } else {
          EXPECT_THAT(result->method, ::testing::HasSubstr("on an idle stream (no blocking kernel"))
              << k.name;
        }
      }
    }
  }

  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    // Peer copies need a second GPU (one GPU: FAILED_PRECONDITION, tested on the CPU backend).
    if (NeedsPeerDevice(*GetParam()->family) && backend_->device_count() < 2) {
      GTEST_SKIP() << GetParam()->name << " copies between two GPUs; this machine has "
                   << backend_->device_count();
    }
  }
};

TEST_P(EveryCudaVariant, VerifiedAtOddSizesColdAndHot) {
  const KernelVariant& k = *GetParam();
  std::vector<int64_t> sizes = {1, 7, 9, 1023, (1 << 20) + 3, (16 << 20) + 5};
  if (k.family->name == "gemm") {  // M = N = K = n; fp8 needs multiples of 16
    sizes = k.dtype == DType::kF8E4M3 ? std::vector<int64_t>{16, 1040, 4096}
                                      : std::vector<int64_t>{1, 7, 9, 1023, 4096};
  } else if (k.family->resolve_shape != nullptr) {
    GTEST_SKIP() << k.name << ": its family has its own sizes (resolve_shape), tested in its test";
  }
  ExpectVerifiedColdAndHot(k, sizes);
}

// Sizes that are a multiple of every 16-byte packet: the one-pass kernels (add_*_tuned, _stream,
// _l2keep) run their tail-free form there, which the odd sizes above never reach; 1000000 leaves
// a partial last block. (16Mi, the benchmarks' size, is verified by every run of
// bench/run_suite.sh add.)
TEST_P(EveryCudaVariant, VerifiedAtPacketMultiplesColdAndHot) {
  const KernelVariant& k = *GetParam();
  if (k.family->name == "gemm" || k.family->resolve_shape != nullptr) {
    GTEST_SKIP() << k.name << ": its family's sizes are tested above and in its own test";
  }
  ExpectVerifiedColdAndHot(k, {8, 1000000});
}

TEST_P(EveryCudaVariant, NonDefaultBlockSizes) {
  const KernelVariant& k = *GetParam();
  if (!k.default_policy.block_size_tunable) GTEST_SKIP() << k.name << ": library launch";
  for (int block : {32, 128, 512, 1024}) {
    RunRequest r = Quick(std::string(k.name), 1000003);
    r.block_size = block;
    absl::StatusOr<RunResult> result = Run(r);
    ASSERT_TRUE(result.ok()) << k.name << " block=" << block << ": " << result.status();
    EXPECT_TRUE(result->verification->passed) << k.name << " block=" << block;
    EXPECT_TRUE(result->resources.available);
    EXPECT_GT(result->resources.registers_per_thread, 0);
    EXPECT_GT(result->resources.active_blocks_per_multiprocessor, 0);
    // Our calculator must agree with the CUDA occupancy API on every launch.
    ASSERT_TRUE(result->occupancy.has_value());
    EXPECT_EQ(result->occupancy->active_blocks_per_multiprocessor,
              result->resources.active_blocks_per_multiprocessor)
        << k.name << " block=" << block << " limiter=" << result->occupancy->limiter;
  }
}

TEST_P(EveryCudaVariant, EveryAllowedItemsPerThread) {
  const KernelVariant& k = *GetParam();
  if (!ItemsPerThreadTunable(k)) GTEST_SKIP() << k.name << " fixes its items per thread";
  std::vector<int> values = ItemsPerThreadCandidates(k);
  if (k.default_policy.items_any_count) values.insert(values.end(), {3, 5, 12});  // odd tiles
  for (int items : values) {
    ASSERT_TRUE(ItemsPerThreadAllowed(k, items)) << k.name << " items=" << items;
    // 1024 threads x the largest tiles take the bulk kernels past 48 KiB of dynamic shared
    // memory (the opt-in path); sizes leave a partial last tile and a sub-packet tail, or (1000000,
    // a multiple of every packet) none: the one-pass kernels' tail-free form.
    for (int block : {64, 1024}) {
      for (int64_t n : {int64_t{5}, int64_t{1000000}, int64_t{1000003}}) {
        RunRequest r = Quick(std::string(k.name), n);
        r.block_size = block;
        r.items_per_thread = items;
        absl::StatusOr<RunResult> result = Run(r);
        if (!result.ok() && result.status().code() == absl::StatusCode::kInvalidArgument &&
            DynamicSharedBytes(k, block, items) > 48 * 1024) {
          continue;  // over the device's shared memory per block: refused before launch
        }
        ASSERT_TRUE(result.ok()) << k.name << " block=" << block << " items=" << items << ": "
                                 << result.status();
        EXPECT_TRUE(result->verification->passed)
            << k.name << " n=" << n << " block=" << block << " items=" << items;
        EXPECT_EQ(result->occupancy->active_blocks_per_multiprocessor,
                  result->resources.active_blocks_per_multiprocessor)
            << k.name << " block=" << block << " items=" << items;
      }
    }
  }
}

std::vector<const KernelVariant*> Variants() {
  std::vector<const KernelVariant*> out;
  for (const KernelVariant& k : AllKernels()) out.push_back(&k);
  return out;
}
INSTANTIATE_TEST_SUITE_P(Catalog, EveryCudaVariant, ::testing::ValuesIn(Variants()),
                         [](const auto& info) { return std::string(info.param->name); });

TEST_F(CudaTest, SeedSaxpyResources) {
  RunRequest r = Quick("saxpy_sophisticated", 1 << 20);
  absl::StatusOr<RunResult> s = Run(r);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->resources.static_shared_bytes, 48 * 1024);
  r.kernel = "saxpy_balanced";
  absl::StatusOr<RunResult> b = Run(r);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->resources.static_shared_bytes, 16 * 1024);
  r.kernel = "saxpy_minimal";
  absl::StatusOr<RunResult> m = Run(r);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->resources.static_shared_bytes, 0);
  EXPECT_GT(s->resources.registers_per_thread, m->resources.registers_per_thread);
  EXPECT_EQ(s->resources.local_bytes_per_thread, 0);
}

TEST_F(CudaTest, ProfilingPassReadsAchievedOccupancy) {
  RunRequest r = Quick("saxpy_minimal", 32 << 20);
  r.profile = true;
  absl::StatusOr<RunResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->counters.achieved_occupancy.has_value())
      << "counters unavailable: " << result->counters.unavailable_reason;
  EXPECT_GT(*result->counters.achieved_occupancy, 0.3);
  EXPECT_LE(*result->counters.achieved_occupancy, 1.0);
  ASSERT_TRUE(result->occupancy.has_value());
  EXPECT_LE(*result->counters.achieved_occupancy, result->occupancy->theoretical_occupancy + 0.02);
  ASSERT_TRUE(result->counters.dram_throughput_percent.has_value());
  EXPECT_GT(*result->counters.dram_throughput_percent, 20);
  EXPECT_TRUE(result->verification->passed);  // the profiling pass came after verification
  EXPECT_FALSE(result->explanation.empty());
}

TEST_F(CudaTest, TunedGridIsResident) {
  absl::StatusOr<RunResult> r = Run(Quick("add_f32_gridstride", 256 << 20));
  ASSERT_TRUE(r.ok()) << r.status();
  const DeviceInfo& d = r->device;
  ASSERT_TRUE(r->occupancy.has_value());
  EXPECT_EQ(r->spec.geometry.grid_size,
            int64_t{d.multiprocessor_count} * r->occupancy->active_blocks_per_multiprocessor);
  EXPECT_TRUE(r->verification->passed);
}

TEST_F(CudaTest, CappedGridStrideGridIsFourBlocksPerSm) {
  // add_{f16,bf16}_gridstride cap the resident grid at 4 blocks of 256 per SM (catalog).
  for (const char* kernel : {"add_f16_gridstride", "add_bf16_gridstride"}) {
    absl::StatusOr<RunResult> r = Run(Quick(kernel, (64 << 20) + 3));
    ASSERT_TRUE(r.ok()) << kernel << ": " << r.status();
    EXPECT_EQ(r->spec.geometry.grid_size, int64_t{r->device.multiprocessor_count} * 4) << kernel;
    EXPECT_TRUE(r->verification->passed) << kernel;
  }
}

TEST_F(CudaTest, L2KeepVariantsStayCorrectAcrossRepeatedLaunchesAndModes) {
  // Working set just under 2 x L2 (the hinted path: each input far larger than its kept eighth of
  // L2) and well over it (the read-only fallback), odd tails: hot repeats the launch on the same
  // buffers (the persisting lines are reused), cold resets them and flushes; every element must
  // verify. (No cold-vs-hot timing check: since the clean flush, a cold launch of a working set
  // above L2 starts without the previous launch's dirty lines and can beat hot, which writes them
  // back: H200 2026-11-30, 31.1 vs 31.9 us; bench/results/2026-11-30-h200-measure-round3.md.)
  absl::StatusOr<DeviceInfo> d = backend_->Describe(0);
  ASSERT_TRUE(d.ok());
  for (const char* kernel : {"add_f32_l2keep", "add_f16_l2keep", "add_bf16_l2keep"}) {
    const int64_t size = DTypeSize((*FindKernel(kernel))->dtype);
    for (int64_t n : {2 * d->l2_cache_bytes / (3 * size) - 5, 4 * d->l2_cache_bytes / size + 7}) {
      RunRequest r = Quick(kernel, n);
      r.cache_mode = CacheMode::kHot;
      absl::StatusOr<RunResult> hot = Run(r);
      ASSERT_TRUE(hot.ok()) << kernel << " n=" << n << ": " << hot.status();
      EXPECT_TRUE(hot->verification->passed) << kernel << " n=" << n;
      r.cache_mode = CacheMode::kCold;
      absl::StatusOr<RunResult> cold = Run(r);
      ASSERT_TRUE(cold.ok()) << kernel << " n=" << n << ": " << cold.status();
      EXPECT_TRUE(cold->verification->passed) << kernel << " n=" << n;
    }
  }
}

TEST_F(CudaTest, LibraryLaunchesSayWhyResourcesAreUnavailable) {
  absl::StatusOr<RunResult> r = Run(Quick("cub_add_f32", 1 << 20));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->resources.available);
  EXPECT_NE(r->resources.unavailable_reason.find("library"), std::string::npos);
}

TEST_F(CudaTest, TooLargeForMemoryFailsBeforeAllocating) {
  absl::StatusOr<DeviceInfo> d = backend_->Describe(0);
  ASSERT_TRUE(d.ok());
  RunRequest r = Quick("add_f32", d->free_memory_bytes / 4);  // 3 buffers of 4 bytes > free
  ServerLimits limits;
  limits.max_elements = int64_t{1} << 40;
  absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *backend_, limits);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kResourceExhausted);
}

// The placement pad (measurement.placement_pad_bytes): the session's buffer addresses are its
// own, so what is observed is the device memory an open session holds: each buffer of >= 1 MiB
// takes its bytes plus the pad, smaller ones no pad. And a padded run verifies.
TEST_F(CudaTest, PlacementPadTakesMemoryAfterEachLargeDeviceBuffer) {
  // The device's free memory while a session of add_f16_l2keep at `n` elements is open.
  auto free_while_open = [&](int64_t n, int64_t pad) -> absl::StatusOr<int64_t> {
    ASSIGN_OR_RETURN(const RunSpec spec,
                     ResolveRunRequest(Quick("add_f16_l2keep", n), *backend_, ServerLimits()));
    HostData data = GenerateHostData(*spec.kernel, spec.shape, 1, &pool_);
    data.placement_pad_bytes = pad;
    ASSIGN_OR_RETURN(const std::unique_ptr<Session> session,
                     backend_->Open(spec.device_index, *spec.kernel, spec.geometry, data));
    ASSIGN_OR_RETURN(const DeviceInfo d, backend_->Describe(spec.device_index));
    return d.free_memory_bytes;
  };
  const int64_t pad = int64_t{256} << 20;
  const int64_t slack = int64_t{16} << 20;  // allocation granularity (2 MiB pages) and the like
  // 16Mi elements: three 32 MiB buffers, each followed by the pad.
  absl::StatusOr<int64_t> unpadded = free_while_open(int64_t{16} << 20, 0);
  absl::StatusOr<int64_t> padded = free_while_open(int64_t{16} << 20, pad);
  ASSERT_TRUE(unpadded.ok()) << unpadded.status();
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_NEAR(static_cast<double>(*unpadded - *padded), 3.0 * pad, slack);
  // 1000 elements: 2000-byte buffers, never padded.
  unpadded = free_while_open(1000, 0);
  padded = free_while_open(1000, pad);
  ASSERT_TRUE(unpadded.ok()) << unpadded.status();
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_NEAR(static_cast<double>(*unpadded - *padded), 0.0, slack);

  // The README's example: 16Mi hot with a 34 MiB pad measures and verifies, and says its pad.
  RunRequest r = Quick("add_f16_l2keep", int64_t{16} << 20);
  r.cache_mode = CacheMode::kHot;
  r.measurement.placement_pad_bytes = int64_t{34} << 20;
  absl::StatusOr<RunResult> run = Run(r);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->verification->passed);
  EXPECT_EQ(run->spec.measurement.placement_pad_bytes, int64_t{34} << 20);
  for (const std::string& note : run->notes) {
    EXPECT_EQ(note.find("placement_pad"), std::string::npos) << note;  // the cpu backend's note
  }
}

// Placements (measurement.placements): an open session holds every copy of the device buffers,
// cold and hot runs over 4 copies verify (RunOnceAndRead compares every copy's output with copy
// 0's), and saxpy's in-out buffer starts from its generated contents on every copy.
TEST_F(CudaTest, PlacementsHoldEveryCopyAndVerify) {
  auto free_while_open = [&](int placements) -> absl::StatusOr<int64_t> {
    ASSIGN_OR_RETURN(const RunSpec spec, ResolveRunRequest(Quick("add_f32", int64_t{16} << 20),
                                                           *backend_, ServerLimits()));
    HostData data = GenerateHostData(*spec.kernel, spec.shape, 1, &pool_);
    data.placements = placements;
    ASSIGN_OR_RETURN(const std::unique_ptr<Session> session,
                     backend_->Open(spec.device_index, *spec.kernel, spec.geometry, data));
    ASSIGN_OR_RETURN(const DeviceInfo d, backend_->Describe(spec.device_index));
    return d.free_memory_bytes;
  };
  absl::StatusOr<int64_t> one = free_while_open(1);
  absl::StatusOr<int64_t> four = free_while_open(4);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(four.ok()) << four.status();
  // Three more copies of three 64 MiB buffers.
  EXPECT_NEAR(static_cast<double>(*one - *four), 9.0 * (int64_t{64} << 20), int64_t{16} << 20);
  for (const char* kernel : {"add_f16_tuned", "saxpy_balanced", "copy_d2d"}) {
    for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
      RunRequest r = Quick(kernel, (int64_t{1} << 20) + 7);
      r.cache_mode = mode;
      r.measurement.placements = 4;
      absl::StatusOr<RunResult> run = Run(r);
      ASSERT_TRUE(run.ok()) << kernel << ": " << run.status();
      EXPECT_TRUE(run->verification->passed) << kernel;
      EXPECT_EQ(run->spec.measurement.placements, 4);
      EXPECT_GT(run->stats.median_seconds, 0);
    }
  }
}

TEST_F(CudaTest, ColdIsNotFasterThanHotInL2) {
  // 1Mi floats x 3 buffers = 12 MiB: fits a modern L2, so hot (cache-warm) must beat cold.
  // Both timed by CUDA events: under the default timer a cold sample is the kernel's own
  // duration (CUPTI) while a hot batch includes the gaps between launches (H200: cold 4.06 us
  // by CUPTI vs hot 4.69 us by events), which compares two clocks, not two cache states.
  RunRequest r = Quick("add_f32x4", 1 << 20);
  r.measurement.timer = TimerChoice::kEvents;
  r.cache_mode = CacheMode::kCold;
  absl::StatusOr<RunResult> cold = Run(r);
  r.cache_mode = CacheMode::kHot;
  absl::StatusOr<RunResult> hot = Run(r);
  ASSERT_TRUE(cold.ok() && hot.ok());
  EXPECT_GT(hot->hot_batch_size, 1);
  EXPECT_LT(hot->stats.median_seconds, cold->stats.median_seconds);
}

// The clean cold flush reads the first and the last packet it is given (a non-zero word there
// reaches the sink: the thread that read it stores its XOR) and, over zeros, stores nothing (the
// sink keeps its value): a read-only pass, so it leaves no dirty L2 line behind.
TEST_F(CudaTest, L2ReadFlushReadsEveryByteAndStoresNothingOverZeros) {
  constexpr uint64_t kBytes = uint64_t{3} << 20;  // 3 MiB + a 16-byte sink after it
  void* raw = nullptr;
  ASSERT_EQ(cudaMalloc(&raw, kBytes + 16), cudaSuccess);
  auto* bytes = static_cast<unsigned char*>(raw);
  auto* sink = reinterpret_cast<uint32_t*>(bytes + kBytes);
  const uint32_t sentinel = 0xdeadbeef;
  auto read_sink = [&] {
    uint32_t v = 0;
    EXPECT_EQ(cudaMemcpy(&v, sink, 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  };
  ASSERT_EQ(cudaMemset(bytes, 0, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(sink, &sentinel, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cuda::LaunchL2ReadFlush(bytes, kBytes, sink, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(read_sink(), sentinel) << "the flush stored over an all-zero buffer";
  // One non-zero word at a time, in the first packet, then only in the last: each must be read.
  const uint32_t first = 0x00f0000f, last = 0x12340000, zero = 0;
  ASSERT_EQ(cudaMemcpy(bytes + 4, &first, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cuda::LaunchL2ReadFlush(bytes, kBytes, sink, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(read_sink(), first);
  ASSERT_EQ(cudaMemcpy(bytes + 4, &zero, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(bytes + kBytes - 4, &last, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cuda::LaunchL2ReadFlush(bytes, kBytes, sink, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(read_sink(), last);
  cudaFree(raw);
}

// measurement.l2_flush picks the cold flush: both disciplines run, verify and are named in the
// method text; the environment variable of earlier builds changes nothing.
TEST_F(CudaTest, ColdFlushIsAMeasurementOption) {
  ASSERT_EQ(setenv("GPUBENCH_L2_FLUSH", "clear", 1), 0);  // ignored: no longer read
  for (L2Flush flush : {L2Flush::kClean, L2Flush::kMemset}) {
    RunRequest r = Quick("add_f32", (int64_t{1} << 20) + 3);
    r.cache_mode = CacheMode::kCold;
    r.measurement.l2_flush = flush;
    absl::StatusOr<RunResult> result = Run(r);
    ASSERT_TRUE(result.ok()) << L2FlushName(flush) << ": " << result.status();
    EXPECT_TRUE(result->verification->passed) << L2FlushName(flush);
    EXPECT_EQ(result->spec.measurement.l2_flush, flush);
    EXPECT_NE(result->method.find(absl::StrCat("L2 flush: ", L2FlushName(flush))),
              std::string::npos)
        << result->method;
  }
  unsetenv("GPUBENCH_L2_FLUSH");
}

// measurement.stream picks the stream a session times on: every kind runs cold and hot, verifies
// and is named in the method text.
TEST_F(CudaTest, StreamKindIsAMeasurementOption) {
  for (StreamKind stream : {StreamKind::kNonBlocking, StreamKind::kLegacy, StreamKind::kPerThread}) {
    for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
      RunRequest r = Quick("add_f16_tuned", (int64_t{1} << 20) + 5);
      r.cache_mode = mode;
      r.measurement.stream = stream;
      absl::StatusOr<RunResult> result = Run(r);
      ASSERT_TRUE(result.ok()) << StreamKindName(stream) << ": " << result.status();
      EXPECT_TRUE(result->verification->passed) << StreamKindName(stream);
      EXPECT_GT(result->stats.median_seconds, 0) << StreamKindName(stream);
      EXPECT_NE(result->method.find(absl::StrCat("stream: ", StreamKindName(stream))),
                std::string::npos)
          << result->method;
    }
  }
}

}  // namespace
}  // namespace gpubench
