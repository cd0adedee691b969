// On-device verification (kernels/cuda/device_verify.h) against host verification:
//   DeviceReferenceFormula.*: every family's device reference, run on the host by the same
//     __host__ __device__ code, equals the host reference (no GPU needed);
//   DeviceVerifyGpu.VerdictsAgreeOnTheCatalog*: every variant this GPU runs, at a small and a
//     mid size: the device's verdict, counts and first mismatches equal the host's, and the
//     output hash made from the device's chunk hashes equals the host's OutputHash;
//   DeviceVerifyGpu.WrongResultsCaughtOnEveryRun: test_corrupt_one_add_f32 and
//     test_write_nothing_add_f32 fail through the engine at 1Mi, 16Mi and 256Mi, on every seed
//     tried, with the corrupted index;
//   DeviceVerifyGpu.PlacementCopiesComparedOnTheDevice: placements > 1 still verify;
//   DeviceVerifyGpu.TimingOf256MiAdd: prints device vs host verification time (no assertion).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "cuda_test.h"
#include "kernels/host_cross_check.h"
#include "kernels/reference.h"
#include "kernels/test_corrupt.h"
#include "kernels/test_faults.h"

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

TEST(DeviceReferenceFormula, HostRunOfEveryDeviceReferenceMatchesTheHostReference) {
  ParallelPool pool(2);
  int checked_variants = 0;
  for (const KernelVariant& k : AllKernels()) {
    const DeviceCheckFn check = DeviceCheckOf(k);
    if (check == nullptr) continue;
    for (const uint64_t seed : {uint64_t{1}, uint64_t{0x9e3779b97f4a7c15}}) {
      const HostData data = GenerateHostData(k, 3001, seed, &pool);
      for (size_t b = 0; b < k.family->buffers.size(); ++b) {
        if (!IsVerified(k.family->buffers[b])) continue;
        DeviceCheckArgs args;
        args.mode = DeviceCheckMode::kOnHost;
        args.buffer = static_cast<int>(b);
        args.dtype = k.dtype;
        args.out_dtype = BufferDType(k.family->buffers[b], k.dtype);
        args.seed = seed;
        for (size_t s = 0; s < k.family->buffers.size(); ++s) {
          args.streams[s] = k.family->buffers[s].seed_stream;
        }
        int64_t differ = 0;
        for (int64_t i = 0; i < BufferElements(k.family->buffers[b], data.shape); ++i) {
          double device = 0;
          args.after = i;
          args.host_value = &device;
          ASSERT_EQ(check(args), 0) << k.name;
          const double host = ReferenceValue(k, data, static_cast<int>(b), i);
          // Add and copy: bit for bit. SAXPY: the same double formula, up to the order of
          // operations (pow against products): far inside its 1e-5 tolerance.
          const bool same = k.family->name == "saxpy"
                                ? std::fabs(device - host) <= 1e-12 * std::fabs(host) + 1e-15
                                : device == host;
          if (!same && ++differ <= 3) {
            ADD_FAILURE() << k.name << " buffer " << b << " i " << i << ": device reference "
                          << device << " host " << host;
          }
        }
        EXPECT_EQ(differ, 0) << k.name;
      }
    }
    ++checked_variants;
  }
  EXPECT_GE(checked_variants, 33 + 3 + 1);  // the add variants, SAXPY, copy (and the copies)
}

class DeviceVerifyGpu : public CudaTest {
 protected:
  static void SetUpTestSuite() {
    CudaTest::SetUpTestSuite();
    RegisterWrongResultVariantsOnce();
  }

  bool RunsHere(const KernelVariant& k, std::string* why) {
    absl::StatusOr<DeviceInfo> d = backend_->Describe(0);
    if (!d.ok()) return false;
    if (k.cuda == nullptr) {
      *why = "no CUDA code";
    } else if (k.min_compute_capability >
               d->compute_capability_major * 10 + d->compute_capability_minor) {
      *why = "needs a newer GPU";
    } else if (NeedsPeerDevice(*k.family) && backend_->device_count() < 2) {
      *why = "needs a second GPU";
    } else {
      return true;
    }
    return false;
  }

  struct Opened {
    RunSpec spec;
    std::unique_ptr<HostData> data;
    std::unique_ptr<Session> session;
  };
  absl::StatusOr<Opened> Open(const std::string& kernel, int64_t n, uint64_t seed) {
    RunRequest r = Quick(kernel, n);
    r.seed = seed;
    Opened o;
    ASSIGN_OR_RETURN(o.spec, ResolveRunRequest(r, *backend_, ServerLimits()));
    o.data = std::make_unique<HostData>(
        GenerateHostData(*o.spec.kernel, o.spec.shape, o.spec.seed, &pool_));
    o.data->peer_device = o.spec.peer_device_index;
    ASSIGN_OR_RETURN(o.session,
                     backend_->Open(o.spec.device_index, *o.spec.kernel, o.spec.geometry, *o.data));
    return o;
  }

  // Both verifications of one launch each: the device's (with the host's cross-check) and the
  // host's of the read-back; they must agree.
  void ExpectVerdictsAgree(const std::string& kernel, int64_t n, uint64_t seed,
                           bool expect_pass) {
    absl::StatusOr<Opened> o = Open(kernel, n, seed);
    ASSERT_TRUE(o.ok()) << kernel << ": " << o.status();
    const KernelVariant& k = *o->spec.kernel;
    const SampleIndices samples = HostSampleIndices(k, o->spec.shape, seed);
    absl::StatusOr<DeviceVerifyReport> report = o->session->VerifyOnDevice(samples);
    ASSERT_TRUE(report.ok()) << kernel << ": " << report.status();
    absl::StatusOr<Verification> device = CombineDeviceVerification(k, *o->data, samples, *report);
    ASSERT_TRUE(device.ok()) << device.status();
    BufferContents out;
    ASSERT_TRUE(o->session->RunOnceAndRead(&out).ok());
    const Verification host = Verify(k, *o->data, out, &pool_);
    const std::string where = absl::StrCat(kernel, " n=", n, " seed=", seed);
    EXPECT_EQ(device->passed, host.passed) << where << "\n device: "
                                           << VerificationSummary(*device)
                                           << "\n host: " << VerificationSummary(host);
    EXPECT_EQ(device->passed, expect_pass) << where << ": " << VerificationSummary(*device);
    EXPECT_EQ(device->mismatches, host.mismatches) << where;
    EXPECT_EQ(device->checked, host.checked) << where;
    EXPECT_EQ(device->where, VerifiedWhere::kDevice);
    ASSERT_EQ(device->first_mismatches.size(), host.first_mismatches.size()) << where;
    for (size_t j = 0; j < host.first_mismatches.size(); ++j) {
      EXPECT_EQ(device->first_mismatches[j].index, host.first_mismatches[j].index) << where;
      EXPECT_EQ(device->first_mismatches[j].buffer, host.first_mismatches[j].buffer) << where;
      EXPECT_EQ(device->first_mismatches[j].expected, host.first_mismatches[j].expected) << where;
    }
    if (host.passed) {
      EXPECT_EQ(device->max_abs_error, host.max_abs_error) << where;
    }
    EXPECT_EQ(OutputHashFromChunks(k, report->chunk_hashes, report->hashed_bytes),
              OutputHash(k, o->spec.shape, out, &pool_))
        << where;
  }

  void VerdictsAgreeOnTheCatalogAt(int64_t n) {
    int device_verified = 0;
    std::vector<std::string> host_only, skipped;
    for (const KernelVariant& k : AllKernels()) {
      std::string why;
      const bool wrong = absl::StartsWith(k.name, "test_");
      if (absl::StartsWith(k.name, "test_fault_")) continue;  // crash the process on purpose
      if (!RunsHere(k, &why)) {
        skipped.push_back(absl::StrCat(k.name, " (", why, ")"));
        continue;
      }
      absl::StatusOr<Opened> o = Open(std::string(k.name), n, 17);
      if (!o.ok()) {
        skipped.push_back(absl::StrCat(k.name, " (", o.status().ToString(), ")"));
        continue;
      }
      if (!o->session->CanVerifyOnDevice()) {
        host_only.push_back(std::string(k.name));
        continue;
      }
      o->session.reset();
      ExpectVerdictsAgree(std::string(k.name), n, 17, /*expect_pass=*/!wrong);
      ++device_verified;
    }
    std::printf("n=%lld: %d variants verified on the device and on the host, same verdicts\n",
                static_cast<long long>(n), device_verified);
    std::printf("  host verification only: %s\n", absl::StrJoin(host_only, ", ").c_str());
    std::printf("  not run here: %s\n", absl::StrJoin(skipped, ", ").c_str());
    EXPECT_GE(device_verified, 33 + 3 + 1 + 2);
  }
};

TEST_F(DeviceVerifyGpu, VerdictsAgreeOnTheCatalogSmall) { VerdictsAgreeOnTheCatalogAt(1003); }
TEST_F(DeviceVerifyGpu, VerdictsAgreeOnTheCatalogMid) { VerdictsAgreeOnTheCatalogAt(3 << 20); }

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

TEST_F(DeviceVerifyGpu, WrongResultsCaughtOnEveryRun) {
  for (const int64_t n : {int64_t{1} << 20, int64_t{16} << 20, int64_t{256} << 20}) {
    for (const uint64_t seed : {11u, 12u, 13u}) {
      RunRequest r = Quick("test_corrupt_one_add_f32", n);
      r.seed = seed;
      absl::StatusOr<RunResult> c = Run(r);
      ASSERT_TRUE(c.ok()) << c.status();
      ASSERT_TRUE(c->verification.has_value());
      EXPECT_FALSE(c->verification->passed) << "n " << n << " seed " << seed;
      EXPECT_EQ(c->verification->where, VerifiedWhere::kDevice);
      EXPECT_EQ(c->verification->device_checked, n);
      EXPECT_EQ(c->verification->mismatches, 1);
      EXPECT_EQ(c->verification->first_mismatch_index, ExpectedCorruptIndex(seed, n))
          << "n " << n << " seed " << seed;
      EXPECT_NEAR(
          c->verification->first_mismatch_actual - c->verification->first_mismatch_expected,
          test_faults::kCorruption, 1e-6);

      r.kernel = "test_write_nothing_add_f32";
      absl::StatusOr<RunResult> w = Run(r);
      ASSERT_TRUE(w.ok()) << w.status();
      EXPECT_FALSE(w->verification->passed);
      EXPECT_EQ(w->verification->mismatches, n);
      EXPECT_EQ(w->verification->first_mismatch_index, 0);
      EXPECT_TRUE(std::isnan(w->verification->first_mismatch_actual));
      EXPECT_EQ(w->verification->first_mismatches.size(),
                static_cast<size_t>(kMaxReportedMismatches));
    }
  }
}

TEST_F(DeviceVerifyGpu, PlacementCopiesComparedOnTheDevice) {
  RunRequest r = Quick("add_f32_tuned", 16 << 20);
  r.measurement.placements = 3;
  absl::StatusOr<RunResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->verification->passed);
  EXPECT_EQ(result->verification->where, VerifiedWhere::kDevice);
  EXPECT_THAT(result->method, HasSubstr("on the device"));
}

TEST_F(DeviceVerifyGpu, TimingOf256MiAdd) {
  constexpr int64_t kN = int64_t{256} << 20;
  absl::StatusOr<Opened> o = Open("add_f32", kN, 3);
  ASSERT_TRUE(o.ok()) << o.status();
  const KernelVariant& k = *o->spec.kernel;
  using Clock = std::chrono::steady_clock;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = Clock::now();
    const SampleIndices samples = HostSampleIndices(k, o->spec.shape, 3);
    absl::StatusOr<DeviceVerifyReport> report = o->session->VerifyOnDevice(samples);
    ASSERT_TRUE(report.ok()) << report.status();
    absl::StatusOr<Verification> device = CombineDeviceVerification(k, *o->data, samples, *report);
    const uint64_t device_hash = OutputHashFromChunks(k, report->chunk_hashes, report->hashed_bytes);
    const auto t1 = Clock::now();
    BufferContents out;
    ASSERT_TRUE(o->session->RunOnceAndRead(&out).ok());
    const Verification host = Verify(k, *o->data, out, &pool_);
    const uint64_t host_hash = OutputHash(k, o->spec.shape, out, &pool_);
    const auto t2 = Clock::now();
    ASSERT_TRUE(device.ok());
    EXPECT_TRUE(device->passed && host.passed);
    EXPECT_EQ(device_hash, host_hash);
    std::printf("256Mi add_f32 verification, round %d: device %.1f ms (launch + check + sample + "
                "hash), host %.1f ms (launch + read-back + check + hash)\n",
                round, std::chrono::duration<double, std::milli>(t1 - t0).count(),
                std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
}

}  // namespace
}  // namespace gpubench
