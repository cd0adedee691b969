// Buffer reuse within a sweep on the CUDA backend (docs/measurement.md, "buffer reuse"):
//   BufferReuseGpu.ReusedBuffersVerify: a chain of add variants (cold, hot, 3 placement copies)
//     and pinned host copies each take the previous run's buffers, say so, and verify;
//   BufferReuseGpu.WrongResultsCaughtOnReusedBuffers: test_write_nothing_add_f32 and
//     test_corrupt_one_add_f32 on the buffers a correct add_f32 of the same seed left (stale
//     outputs that would be right) still fail, at 1Mi and 256Mi, with every mismatch counted;
//   BufferReuseGpu.KeptMemoryIsFreedByReleaseAndByAnotherRun: the device's free memory comes
//     back when the engine releases the kept buffers, and when a run of another chain opens;
//   BufferReuseGpu.TimingOfReuse256Mi: prints the open and release phases of a fresh and a
//     reused 256Mi add and 1 GiB pinned host copy (no assertion; for the results file).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "absl/strings/match.h"
#include "cuda_test.h"
#include "kernels/test_faults.h"
#include "server/engine/run_memory.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

class BufferReuseGpu : public CudaTest {
 protected:
  static void SetUpTestSuite() {
    CudaTest::SetUpTestSuite();
    // Once per process: device_verify_gpu_test.cc registers them too.
    if (FindKernel("test_write_nothing_add_f32").ok()) return;
    const absl::Status registered = RegisterVariants(TestWrongResultVariants());
    ASSERT_TRUE(registered.ok()) << registered;
  }
  void TearDown() override {
    if (backend_ != nullptr) backend_->ReleaseCachedBuffers(0);  // no test leaves memory held
  }
  // `r` as the `chain`'s next run, keeping its buffers for the one after where `keep`.
  absl::StatusOr<RunResult> RunChained(RunRequest r, uint64_t chain, bool keep) {
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *backend_, ServerLimits());
    if (!spec.ok()) return spec.status();
    spec->buffer_chain = chain;
    spec->keep_buffers = keep;
    return MeasureRun(
        *backend_, *spec, [] { return false; }, &pool_);
  }
  int64_t FreeBytes() { return backend_->Describe(0)->free_memory_bytes; }
};

TEST_F(BufferReuseGpu, ReusedBuffersVerify) {
  struct Chain {
    std::vector<std::string> kernels;
    int64_t n;
    CacheMode mode;
    int placements;
  };
  const Chain chains[] = {
      {{"add_f32", "add_f32x4", "add_f32_tuned", "cub_add_f32"}, 16 << 20, CacheMode::kCold, 1},
      {{"add_f32", "add_f32x4"}, 16 << 20, CacheMode::kHot, 1},
      {{"add_f32_tuned", "add_f32x4"}, 1 << 20, CacheMode::kCold, 3},
      {{"add_bf16", "add_bf16x8_pack"}, 1 << 20, CacheMode::kCold, 1},
      {{"copy_h2d_pinned", "copy_h2d_pinned"}, 16 << 20, CacheMode::kCold, 1},
      {{"copy_d2h_pinned", "copy_d2h_pinned"}, 16 << 20, CacheMode::kCold, 1},
  };
  uint64_t chain_id = 1000;
  for (const Chain& c : chains) {
    ++chain_id;
    for (size_t i = 0; i < c.kernels.size(); ++i) {
      RunRequest r = Quick(c.kernels[i], c.n);
      r.cache_mode = c.mode;
      r.measurement.placements = c.placements;
      absl::StatusOr<RunResult> result = RunChained(r, chain_id, i + 1 < c.kernels.size());
      ASSERT_TRUE(result.ok()) << c.kernels[i] << ": " << result.status();
      EXPECT_EQ(result->phases.buffers_reused, i > 0) << c.kernels[i];
      EXPECT_EQ(result->phases.buffers_kept, i + 1 < c.kernels.size()) << c.kernels[i];
      ASSERT_TRUE(result->verification.has_value());
      EXPECT_TRUE(result->verification->passed) << c.kernels[i] << " " << result->method;
      EXPECT_EQ(absl::StrContains(result->method, kBuffersReusedMethod), i > 0) << result->method;
    }
  }
}

TEST_F(BufferReuseGpu, WrongResultsCaughtOnReusedBuffers) {
  uint64_t chain = 2000;
  for (const int64_t n : {int64_t{1} << 20, int64_t{256} << 20}) {
    for (const uint64_t seed : {uint64_t{1}, uint64_t{77}}) {
      RunRequest r = Quick("add_f32", n);
      r.seed = seed;  // the same inputs in every run: the previous outputs would be right
      ++chain;
      absl::StatusOr<RunResult> good = RunChained(r, chain, true);
      ASSERT_TRUE(good.ok()) << good.status();
      ASSERT_TRUE(good->verification->passed);
      ASSERT_TRUE(good->phases.buffers_kept);

      r.kernel = "test_write_nothing_add_f32";
      absl::StatusOr<RunResult> nothing = RunChained(r, chain, false);
      ASSERT_TRUE(nothing.ok()) << nothing.status();
      EXPECT_TRUE(nothing->phases.buffers_reused);
      EXPECT_FALSE(nothing->verification->passed) << "n " << n << " seed " << seed;
      EXPECT_EQ(nothing->verification->where, VerifiedWhere::kDevice);
      EXPECT_EQ(nothing->verification->mismatches, n);  // every element still the poison
      EXPECT_TRUE(std::isnan(nothing->verification->first_mismatch_actual));

      ++chain;
      r.kernel = "add_f32";
      ASSERT_TRUE(RunChained(r, chain, true).ok());
      r.kernel = "test_corrupt_one_add_f32";
      absl::StatusOr<RunResult> corrupt = RunChained(r, chain, false);
      ASSERT_TRUE(corrupt.ok()) << corrupt.status();
      EXPECT_TRUE(corrupt->phases.buffers_reused);
      EXPECT_FALSE(corrupt->verification->passed);
      EXPECT_EQ(corrupt->verification->mismatches, 1);
    }
  }
}

TEST_F(BufferReuseGpu, KeptMemoryIsFreedByReleaseAndByAnotherRun) {
  constexpr int64_t kN = int64_t{64} << 20;  // 768 MiB of buffers: far above free-memory noise
  const RunRequest r = Quick("add_f32", kN);
  const int64_t buffers = 3 * 4 * kN;
  const int64_t before = FreeBytes();
  ASSERT_TRUE(RunChained(r, 3001, true).ok());
  EXPECT_LT(FreeBytes(), before - buffers / 2) << "the buffers are held";
  backend_->ReleaseCachedBuffers(0);
  EXPECT_GT(FreeBytes(), before - buffers / 2) << "released";

  ASSERT_TRUE(RunChained(r, 3002, true).ok());
  EXPECT_LT(FreeBytes(), before - buffers / 2);
  absl::StatusOr<RunResult> other = RunChained(Quick("add_f32", 1 << 20), 3003, false);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->phases.buffers_reused);
  EXPECT_GT(FreeBytes(), before - buffers / 2) << "freed by the other chain's run";
}

TEST_F(BufferReuseGpu, TimingOfReuse256Mi) {
  for (const char* kernel : {"add_f32", "copy_h2d_pinned"}) {
    for (int round = 0; round < 2; ++round) {
      const uint64_t chain = 4000 + 10 * round + (kernel[0] == 'a' ? 0 : 1);
      RunRequest r = Quick(kernel, int64_t{256} << 20);
      absl::StatusOr<RunResult> fresh = RunChained(r, chain, true);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      absl::StatusOr<RunResult> reused = RunChained(r, chain, false);
      ASSERT_TRUE(reused.ok()) << reused.status();
      ASSERT_TRUE(reused->phases.buffers_reused);
      for (const RunResult* x : {&*fresh, &*reused}) {
        std::printf(
            "%s 256Mi %s: host inputs %.4f s, open %.4f s, sampling %.4f s, verification %.4f s, "
            "release %.4f s, median %.3f us\n",
            kernel, x->phases.buffers_reused ? "reused" : "fresh ", x->phases.host_inputs_seconds,
            x->phases.open_seconds, x->phases.sampling_seconds, x->phases.verification_seconds,
            x->phases.release_seconds, x->stats.median_seconds * 1e6);
      }
    }
  }
}

}  // namespace
}  // namespace gpubench
