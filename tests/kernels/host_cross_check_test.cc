// The host's part of on-device verification (kernels/host_cross_check.h): which elements it
// samples, how it rebuilds their inputs, and the Verification it makes from a device's report;
// and the host verification's first mismatches and method text (kernels/reference.h).
#include "kernels/host_cross_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/parallel.h"
#include "kernels/catalog.h"
#include "kernels/reference.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

const KernelVariant& Kernel(const char* name) { return **FindKernel(name); }

TEST(HostSampleIndicesTest, BothEndsAndSeededPositionsAscendingAndDistinct) {
  const KernelVariant& add = Kernel("add_f32");
  const RunShape shape{.elements = 1 << 20};
  const SampleIndices s = HostSampleIndices(add, shape, 42);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(s[0].empty());  // inputs are not sampled
  EXPECT_TRUE(s[1].empty());
  const std::vector<int64_t>& c = s[2];
  ASSERT_EQ(c.size(), static_cast<size_t>(kHostSamplesPerBuffer));
  EXPECT_EQ(c.front(), 0);
  EXPECT_EQ(c.back(), shape.elements - 1);
  EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
  EXPECT_EQ(std::adjacent_find(c.begin(), c.end()), c.end());  // distinct
  // Not just the ends and not an even spread: random positions inside.
  int64_t inside = 0;
  for (int64_t i : c) inside += i > 0 && i < shape.elements - 1;
  EXPECT_EQ(inside, kHostSamplesPerBuffer - 2);
}

TEST(HostSampleIndicesTest, DeterministicFromTheSeedAndDifferentAcrossSeeds) {
  const KernelVariant& add = Kernel("add_f32");
  const RunShape shape{.elements = 16 << 20};
  EXPECT_EQ(HostSampleIndices(add, shape, 7), HostSampleIndices(add, shape, 7));
  EXPECT_NE(HostSampleIndices(add, shape, 7)[2], HostSampleIndices(add, shape, 8)[2]);
}

TEST(HostSampleIndicesTest, SmallBuffersAreSampledWhole) {
  const KernelVariant& add = Kernel("add_f32");
  const SampleIndices s = HostSampleIndices(add, RunShape{.elements = 10}, 1);
  EXPECT_EQ(s[2], (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(HostSampleIndices(add, RunShape{.elements = 0}, 1)[2].empty());
  const SampleIndices two = HostSampleIndices(add, RunShape{.elements = 1000}, 1, 2);
  EXPECT_EQ(two[2], (std::vector<int64_t>{0, 999}));
}

TEST(HostSampleIndicesTest, InOutBuffersAreSampled) {
  const SampleIndices s = HostSampleIndices(Kernel("saxpy_minimal"), RunShape{.elements = 5000}, 3);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].empty());  // x
  EXPECT_EQ(s[1].size(), static_cast<size_t>(kHostSamplesPerBuffer));  // y
}

TEST(HostDataAtTest, GeneratesWhatTheHostWouldHaveAndTheReferenceFollows) {
  ParallelPool pool(2);
  for (const char* name : {"add_f32", "add_f16", "add_bf16", "saxpy_sophisticated", "copy_d2d"}) {
    const KernelVariant& k = Kernel(name);
    const HostData full = GenerateHostData(k, 5000, 11, &pool);
    HostData empty_copy = full;  // as when the device generated the inputs: no host copies
    for (std::vector<std::byte>& b : empty_copy.buffers) b.clear();
    const HostData& empty = empty_copy;
    const std::vector<int64_t> indices = {0, 17, 4096, 4999};
    for (const HostData* source : {&full, &empty}) {
      absl::StatusOr<HostData> at = HostDataAt(k, *source, indices);
      ASSERT_TRUE(at.ok()) << at.status();
      const int out = static_cast<int>(k.family->buffers.size()) - 1;
      for (size_t j = 0; j < indices.size(); ++j) {
        EXPECT_EQ(ReferenceValue(k, *at, out, static_cast<int64_t>(j)),
                  ReferenceValue(k, full, out, indices[j]))
            << name << " index " << indices[j];
      }
    }
  }
}

// A device report of `variant`'s correct outputs (the CPU emulation's, through the host
// reference), to corrupt in the tests below.
struct Fixture {
  explicit Fixture(const char* name, int64_t n = 4096)
      : kernel(Kernel(name)), data(GenerateHostData(kernel, n, 5, &pool)) {
    samples = HostSampleIndices(kernel, data.shape, data.seed);
    const int out = static_cast<int>(kernel.family->buffers.size()) - 1;
    const DType dtype = BufferDType(kernel.family->buffers[out], kernel.dtype);
    report.checked = n;
    report.sampled.resize(kernel.family->buffers.size());
    for (int64_t i : samples[out]) AppendValue(out, dtype, ReferenceValue(kernel, data, out, i));
  }
  void AppendValue(int buffer, DType dtype, double v) {
    std::vector<std::byte>& b = report.sampled[buffer];
    const size_t at = b.size();
    b.resize(at + DTypeSize(dtype));
    if (dtype == DType::kF32) {
      const float f = static_cast<float>(v);
      std::memcpy(b.data() + at, &f, sizeof(f));
    } else {
      ASSERT_EQ(dtype, DType::kF32) << "the fixture writes f32 only";
    }
  }
  ParallelPool pool{2};
  const KernelVariant& kernel;
  HostData data;
  SampleIndices samples;
  DeviceVerifyReport report;
};

TEST(CombineDeviceVerificationTest, PassingRunSaysWhereAndHowMuch) {
  Fixture f("add_f32");
  absl::StatusOr<Verification> v =
      CombineDeviceVerification(f.kernel, f.data, f.samples, f.report);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->where, VerifiedWhere::kDevice);
  EXPECT_EQ(v->checked, 4096);
  EXPECT_EQ(v->device_checked, 4096);
  EXPECT_EQ(v->host_checked, kHostSamplesPerBuffer);
  EXPECT_FALSE(v->sampled);
  EXPECT_EQ(v->method, "all 4096 elements on the device + 64 sampled on the host");
  EXPECT_EQ(v->first_mismatch_index, -1);
  EXPECT_EQ(VerificationSummary(*v),
            "passed: all 4096 elements on the device + 64 sampled on the host");
}

TEST(CombineDeviceVerificationTest, DeviceMismatchFailsWithTheHostsExpectedValue) {
  Fixture f("add_f32");
  const double right = ReferenceValue(f.kernel, f.data, 2, 1234);
  f.report.mismatches = 1;
  f.report.first_mismatches.push_back(
      {.buffer = 2, .index = 1234, .expected = right, .actual = right + 1});
  absl::StatusOr<Verification> v =
      CombineDeviceVerification(f.kernel, f.data, f.samples, f.report);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->passed);
  EXPECT_EQ(v->mismatches, 1);
  EXPECT_EQ(v->first_mismatch_buffer, "c");
  EXPECT_EQ(v->first_mismatch_index, 1234);
  EXPECT_EQ(v->first_mismatch_expected, right);
  EXPECT_EQ(v->first_mismatch_actual, right + 1);
  ASSERT_EQ(v->first_mismatches.size(), 1u);
  EXPECT_EQ(v->method, "all 4096 elements on the device + 64 sampled on the host");
  EXPECT_THAT(VerificationSummary(*v), HasSubstr("FAILED: 1 of 4096 elements"));
  EXPECT_THAT(VerificationSummary(*v), HasSubstr("first at c[1234]"));
}

TEST(CombineDeviceVerificationTest, HostSampleCatchesWhatTheDeviceMissed) {
  Fixture f("add_f32");
  // The device says all is well, but one sampled element is wrong: the run fails, and says the
  // two disagreed.
  std::memset(f.report.sampled[2].data() + 4 * 5, 0xff, 4);  // NaN at the sixth sample
  absl::StatusOr<Verification> v =
      CombineDeviceVerification(f.kernel, f.data, f.samples, f.report);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->passed);
  EXPECT_EQ(v->mismatches, 1);
  EXPECT_EQ(v->first_mismatch_index, f.samples[2][5]);
  EXPECT_TRUE(std::isnan(v->first_mismatch_actual));
  EXPECT_EQ(v->max_abs_error, std::numeric_limits<double>::infinity());
  EXPECT_THAT(v->method, HasSubstr("device reference suspect"));
}

TEST(CombineDeviceVerificationTest, HostClearingADeviceMismatchIsStillAFailureThatSaysSo) {
  Fixture f("add_f32");
  const double right = ReferenceValue(f.kernel, f.data, 2, 7);
  f.report.mismatches = 1;
  f.report.first_mismatches.push_back({.buffer = 2, .index = 7, .expected = 0, .actual = right});
  absl::StatusOr<Verification> v =
      CombineDeviceVerification(f.kernel, f.data, f.samples, f.report);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->passed);
  EXPECT_THAT(v->method, HasSubstr("the host reference accepts 1 of the 1 device mismatches"));
}

TEST(CombineDeviceVerificationTest, ShortSampleIsAnError) {
  Fixture f("add_f32");
  f.report.sampled[2].resize(8);
  EXPECT_EQ(CombineDeviceVerification(f.kernel, f.data, f.samples, f.report).status().code(),
            absl::StatusCode::kInternal);
}

TEST(HostVerificationTest, MethodTextAndFirstMismatchesInOrder) {
  ParallelPool pool(2);
  const KernelVariant& add = Kernel("add_f32");
  const HostData data = GenerateHostData(add, 1000, 3, &pool);
  BufferContents out(3);
  out[2].resize(1000 * sizeof(float));
  for (int64_t i = 0; i < 1000; ++i) {
    const float v = static_cast<float>(ReferenceValue(add, data, 2, i)) + (i % 100 == 3 ? 1 : 0);
    std::memcpy(out[2].data() + i * 4, &v, 4);
  }
  const Verification v = Verify(add, data, out, &pool);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.where, VerifiedWhere::kHost);
  EXPECT_EQ(v.host_checked, 1000);
  EXPECT_EQ(v.device_checked, 0);
  EXPECT_EQ(v.method, "all 1000 elements on the host");
  EXPECT_EQ(v.mismatches, 10);
  ASSERT_EQ(v.first_mismatches.size(), static_cast<size_t>(kMaxReportedMismatches));
  for (int k = 0; k < kMaxReportedMismatches; ++k) {
    EXPECT_EQ(v.first_mismatches[k].index, 100 * k + 3);
    EXPECT_EQ(v.first_mismatches[k].buffer, "c");
  }
}

TEST(HostVerificationTest, GemmKeepsItsSampleAndSaysSo) {
  Verification v;
  v.sampled = true;
  v.host_checked = 4096;
  EXPECT_EQ(VerificationMethod(v, 16777216), "a sample of 4096 of 16777216 elements on the host");
}

TEST(DeviceCheckOfTest, FamiliesWithElementwiseReferencesHaveOneOthersNot) {
#if GPUBENCH_HAVE_CUDA
  EXPECT_NE(DeviceCheckOf(Kernel("add_f32")), nullptr);
  EXPECT_NE(DeviceCheckOf(Kernel("add_bf16x8_pack")), nullptr);
  EXPECT_NE(DeviceCheckOf(Kernel("saxpy_balanced")), nullptr);
  EXPECT_NE(DeviceCheckOf(Kernel("saxpy_balanced")), DeviceCheckOf(Kernel("saxpy_minimal")));
  EXPECT_NE(DeviceCheckOf(Kernel("copy_d2d")), nullptr);
#endif
  EXPECT_EQ(DeviceCheckOf(Kernel("latency_chase")), nullptr);  // its one word: host
  for (const KernelVariant& k : AllKernels()) {
    if (k.family->verify_samples > 0) {
      EXPECT_EQ(DeviceCheckOf(k), nullptr) << k.name << ": GEMM keeps sampled host verification";
    }
  }
}

}  // namespace
}  // namespace gpubench
