// Verification end to end through the engine without a GPU: the CPU backend verifies every
// element on the host and catches the wrong-result test variants (test_corrupt_one_add_f32 at
// its seeded index, test_write_nothing_add_f32 everywhere); the device path (emulated by the fake
// backend's VerifyOnDevice) reports itself in the result and the method text, with the same
// output hash as the host path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "engine/fake_backend.h"
#include "kernels/cpu_backend.h"
#include "kernels/family.h"
#include "kernels/host_cross_check.h"
#include "kernels/test_corrupt.h"
#include "kernels/test_faults.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

// Once per process, whichever test of this binary registers them first (buffer_reuse tests do
// too).
void RegisterWrongResultVariantsOnce() {
  if (FindKernel("test_write_nothing_add_f32").ok()) return;
  const absl::Status registered = RegisterVariants(TestWrongResultVariants());
  ASSERT_TRUE(registered.ok()) << registered;
}

// The index test_corrupt_one_add_f32 corrupts in a run of `n` elements with `seed`: from the
// inputs' first elements, made here as the host generator makes them.
int64_t ExpectedCorruptIndex(uint64_t seed, int64_t n) {
  const int64_t zero[] = {0};
  float a0 = 0, b0 = 0;
  GenerateUniformAt({.seed = seed, .stream = 0, .dtype = DType::kF32}, zero,
                    std::as_writable_bytes(std::span(&a0, 1)));
  GenerateUniformAt({.seed = seed, .stream = 1, .dtype = DType::kF32}, zero,
                    std::as_writable_bytes(std::span(&b0, 1)));
  uint32_t a = 0, b = 0;
  std::memcpy(&a, &a0, 4);
  std::memcpy(&b, &b0, 4);
  return test_faults::CorruptedIndex(a, b, n);
}

class VerificationTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterWrongResultVariantsOnce(); }
  absl::StatusOr<RunResult> Run(Backend& backend, const std::string& kernel, int64_t n,
                                uint64_t seed) {
    RunRequest r;
    r.kernel = kernel;
    r.elements = n;
    r.seed = seed;
    r.measurement.min_samples = 2;
    r.measurement.min_time_seconds = 0;
    r.measurement.max_noise = 1.0;
    r.measurement.timeout_seconds = 30;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, backend, ServerLimits());
    if (!spec.ok()) return spec.status();
    return MeasureRun(backend, *spec, [] { return false; }, &pool_);
  }
  ParallelPool pool_{2};
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
};

TEST_F(VerificationTest, CpuBackendVerifiesEveryElementOnTheHost) {
  absl::StatusOr<RunResult> r = Run(*cpu_, "add_f32", 1000, 9);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->verification.has_value());
  EXPECT_TRUE(r->verification->passed);
  EXPECT_EQ(r->verification->where, VerifiedWhere::kHost);
  EXPECT_EQ(r->verification->host_checked, 1000);
  EXPECT_EQ(r->verification->method, "all 1000 elements on the host");
  EXPECT_THAT(r->method, HasSubstr("; verified: all 1000 elements on the host"));
}

TEST_F(VerificationTest, CpuBackendCatchesTheCorruptedElementAtItsSeededIndex) {
  for (const int64_t n : {int64_t{1000}, int64_t{4099}, int64_t{1} << 16}) {
    for (const uint64_t seed : {1u, 2u, 77u}) {
      absl::StatusOr<RunResult> r = Run(*cpu_, "test_corrupt_one_add_f32", n, seed);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->verification.has_value());
      const Verification& v = *r->verification;
      EXPECT_FALSE(v.passed) << "n " << n << " seed " << seed;
      EXPECT_EQ(v.mismatches, 1);
      EXPECT_EQ(v.first_mismatch_index, ExpectedCorruptIndex(seed, n)) << "n " << n;
      EXPECT_NEAR(v.first_mismatch_actual - v.first_mismatch_expected, test_faults::kCorruption,
                  1e-6);
      EXPECT_EQ(RunStatus(*r).code(), absl::StatusCode::kInternal);
    }
  }
  // Different seeds corrupt different places (the index is not fixed).
  EXPECT_NE(ExpectedCorruptIndex(1, 1 << 20), ExpectedCorruptIndex(2, 1 << 20));
}

TEST_F(VerificationTest, CpuBackendCatchesAKernelThatWritesNothing) {
  absl::StatusOr<RunResult> r = Run(*cpu_, "test_write_nothing_add_f32", 4096, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  const Verification& v = *r->verification;
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.mismatches, 4096);
  EXPECT_EQ(v.first_mismatch_index, 0);
  EXPECT_TRUE(std::isnan(v.first_mismatch_actual));  // the poison
  EXPECT_EQ(v.first_mismatches.size(), static_cast<size_t>(kMaxReportedMismatches));
}

TEST_F(VerificationTest, DevicePathIsChosenWhereTheSessionCanAndHashesAgree) {
  testing::FakeBackend host_path({});
  testing::FakeBackend device_path({.verify_on_device = true});
  for (const char* kernel : {"add_f32", "add_bf16", "saxpy_balanced", "copy_d2d"}) {
    absl::StatusOr<RunResult> h = Run(host_path, kernel, 5000, 21);
    absl::StatusOr<RunResult> d = Run(device_path, kernel, 5000, 21);
    ASSERT_TRUE(h.ok() && d.ok()) << kernel;
    EXPECT_TRUE(h->verification->passed && d->verification->passed) << kernel;
    EXPECT_EQ(h->verification->where, VerifiedWhere::kHost);
    EXPECT_EQ(d->verification->where, VerifiedWhere::kDevice) << kernel;
    EXPECT_EQ(d->verification->device_checked, 5000);
    EXPECT_EQ(d->verification->host_checked, kHostSamplesPerBuffer);
    EXPECT_THAT(d->method,
                HasSubstr("; verified: all 5000 elements on the device + 64 sampled on the host"));
    ASSERT_TRUE(h->output_hash.has_value() && d->output_hash.has_value());
    EXPECT_EQ(*h->output_hash, *d->output_hash) << kernel;
  }
}

TEST_F(VerificationTest, DevicePathCatchesTheCorruptedElement) {
  testing::FakeBackend device_path({.verify_on_device = true});
  absl::StatusOr<RunResult> r = Run(device_path, "test_corrupt_one_add_f32", 1 << 16, 5);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->verification->passed);
  EXPECT_EQ(r->verification->where, VerifiedWhere::kDevice);
  EXPECT_EQ(r->verification->first_mismatch_index, ExpectedCorruptIndex(5, 1 << 16));
  EXPECT_THAT(RunStatus(*r).message(), HasSubstr("on the device"));
}

}  // namespace
}  // namespace gpubench
