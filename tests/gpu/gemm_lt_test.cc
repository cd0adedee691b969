// The cuBLASLt wrapper (kernels/cuda/gemm_lt.h) on a real GPU (ctest label "gpu"): every
// precision against the host reference, the algorithm description, fp8's compute-capability
// gate. Skips, printing why, where no GPU or no libcublasLt.so.13 is usable.
#include "kernels/cuda/gemm_lt.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/parallel.h"
#include "kernels/gemm.h"

namespace gpubench::cuda {
namespace {

// Needs neither a GPU nor the library: the error a server without cuBLASLt answers with.
TEST(CublasLtLoad, MissingLibraryIsFailedPreconditionNamingIt) {
  auto lt = CublasLt::Load("libcublasLt-not-installed.so.13");
  ASSERT_FALSE(lt.ok());
  EXPECT_EQ(lt.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(lt.status().message().find("libcublasLt-not-installed.so.13"), std::string::npos);
}

// Needs no GPU: the library's entry points resolve and it names its version.
TEST(CublasLtLoad, InstalledLibraryResolvesEveryEntryPoint) {
  auto lt = CublasLt::Load(kCublasLtLibrary);
  if (!lt.ok()) GTEST_SKIP() << lt.status();
  EXPECT_NE((*lt)->version().find("cuBLASLt 13."), std::string::npos) << (*lt)->version();
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

DeviceBuffer Allocate(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(bytes, 256)) != cudaSuccess) return nullptr;
  return DeviceBuffer(p);
}

class GemmLtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      GTEST_SKIP() << "no usable CUDA GPU";
    }
    auto lt = CublasLt::Shared();
    if (!lt.ok()) GTEST_SKIP() << lt.status();
    lt_ = *lt;
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    name_ = prop.name;
    cc_ = prop.major * 10 + prop.minor;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }

  // Device buffers of one problem: inputs copied from `data`, D poisoned with NaN, fp8 scales
  // 256 bytes apart (16-byte aligned, as cuBLASLt requires).
  struct Problem {
    DeviceBuffer a, b, d, ws, scales;
    size_t d_bytes = 0;
    GemmScales gemm_scales() const {
      const auto* s = static_cast<const float*>(scales.get());
      return {s, s + 64};
    }
  };
  absl::StatusOr<Problem> Upload(const GemmHostData& data) {
    Problem p;
    const GemmShape& s = data.shape;
    p.d_bytes = static_cast<size_t>(s.m * s.n * GemmInfo(data.precision).output_bytes);
    p.a = Allocate(data.a.size());
    p.b = Allocate(data.b.size());
    p.d = Allocate(p.d_bytes);
    p.ws = Allocate(kGemmWorkspaceBytes);
    p.scales = Allocate(512);
    if (!p.a || !p.b || !p.d || !p.ws || !p.scales) return absl::ResourceExhaustedError("cudaMalloc");
    float host_scales[128] = {};
    host_scales[0] = data.scale_a;
    host_scales[64] = data.scale_b;
    cudaMemcpy(p.a.get(), data.a.data(), data.a.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(p.b.get(), data.b.data(), data.b.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(p.scales.get(), host_scales, sizeof(host_scales), cudaMemcpyHostToDevice);
    return p;
  }
  absl::StatusOr<std::unique_ptr<GemmPlan>> Plan(const GemmHostData& data, const Problem& p) {
    return GemmPlan::Create(*lt_, data.precision, data.shape, name_, cc_, kGemmWorkspaceBytes,
                            p.gemm_scales());
  }
  // Candidate `index` of `plan` once; D on the host.
  absl::StatusOr<std::vector<std::byte>> RunOnce(const GemmPlan& plan, int index, Problem& p) {
    cudaMemset(p.d.get(), 0xff, p.d_bytes);  // NaN in every output type: unwritten elements show
    if (absl::Status run = plan.RunCandidate(index, p.a.get(), p.b.get(), p.d.get(), p.ws.get(),
                                             kGemmWorkspaceBytes, nullptr);
        !run.ok()) {
      return run;
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return absl::InternalError("cudaDeviceSynchronize");
    std::vector<std::byte> out(p.d_bytes);
    cudaMemcpy(out.data(), p.d.get(), p.d_bytes, cudaMemcpyDeviceToHost);
    return out;
  }

  // Plans, tunes (GemmPlan::Autotune) and runs one GEMM; D on the host, the chosen algorithm in
  // `algorithm`, and with `timed_launches` the hot per-launch seconds in `seconds`.
  absl::StatusOr<std::vector<std::byte>> Run(const GemmHostData& data, GemmAlgorithm* algorithm,
                                             int timed_launches = 0, double* seconds = nullptr) {
    absl::StatusOr<Problem> p = Upload(data);
    if (!p.ok()) return p.status();
    auto plan = Plan(data, *p);
    if (!plan.ok()) return plan.status();
    if (absl::Status tuned = (*plan)->Autotune(p->a.get(), p->b.get(), p->d.get(), p->ws.get(),
                                               kGemmWorkspaceBytes, nullptr);
        !tuned.ok()) {
      return tuned;
    }
    *algorithm = (*plan)->algorithm();
    auto out = RunOnce(**plan, (*plan)->algorithm().rank, *p);
    if (!out.ok() || timed_launches == 0) return out;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start, nullptr);
    for (int i = 0; i < timed_launches; ++i) {
      (void)(*plan)->Run(p->a.get(), p->b.get(), p->d.get(), p->ws.get(), kGemmWorkspaceBytes,
                         nullptr);
    }
    cudaEventRecord(stop, nullptr);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    *seconds = ms * 1e-3 / timed_launches;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return out;
  }

  // VerifyGemm with the algorithm's split-K context.
  GemmVerification Verify(const GemmHostData& data, const std::vector<std::byte>& d,
                          const GemmAlgorithm& algorithm) {
    return VerifyGemm(data, d.data(), kGemmDefaultSamples, 5, &pool_,
                      {.split_k_reduced_in_output_type =
                           algorithm.reduction_in_output_type ? std::max(algorithm.split_k, 1) : 0});
  }

  const CublasLt* lt_ = nullptr;
  std::string name_;
  int cc_ = 0;
  ParallelPool pool_{0};
};

TEST_F(GemmLtTest, EveryPrecisionMatchesTheHostReference) {
  std::printf("%s\n", lt_->version().c_str());
  // Not powers of two, so edge tiles run; multiples of 16 for fp8's alignment rule.
  const GemmShape shape{528, 400, 272};
  for (const GemmPrecisionInfo& info : AllGemmPrecisions()) {
    SCOPED_TRACE(std::string(info.name));
    const GemmHostData data = GenerateGemmData(info.precision, shape, 17, &pool_);
    GemmAlgorithm algorithm;
    auto d = Run(data, &algorithm);
    if (cc_ < info.min_compute_capability) {
      ASSERT_FALSE(d.ok());
      EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition) << d.status();
      continue;
    }
    ASSERT_TRUE(d.ok()) << d.status();
    const GemmVerification v = Verify(data, *d, algorithm);
    std::printf("%-7s %s: checked %lld, max |error| %.3g, worst error/bound %.3g\n  %s\n",
                std::string(info.name).c_str(), GemmShapeString(shape).c_str(),
                static_cast<long long>(v.checked), v.max_abs_error, v.max_error_to_bound,
                algorithm.Describe().c_str());
    EXPECT_TRUE(v.passed) << "mismatches " << v.mismatches << " nonfinite " << v.nonfinite
                          << " first (" << v.first_mismatch_row << "," << v.first_mismatch_column
                          << ") expected " << v.first_mismatch_expected << " actual "
                          << v.first_mismatch_actual << " bound " << v.first_mismatch_bound;
    EXPECT_EQ(v.finite_checked, shape.m * shape.n);
    EXPECT_FALSE(algorithm.tile.empty());
    EXPECT_GE(algorithm.candidates, 1);
    EXPECT_GE(algorithm.timed, 1);  // the setup trials ran
    EXPECT_GT(algorithm.trial_seconds, 0);
    EXPECT_NE(algorithm.Describe().find("fastest of"), std::string::npos) << algorithm.Describe();
  }
}

// Whatever the trials choose must compute the right product: every candidate the heuristic
// offers (and cuBLASLt launches) is verified, at edge-tile sizes.
TEST_F(GemmLtTest, EveryCandidateMatchesTheHostReference) {
  const GemmShape shape{528, 400, 272};
  for (const GemmPrecisionInfo& info : AllGemmPrecisions()) {
    if (cc_ < info.min_compute_capability) continue;
    SCOPED_TRACE(std::string(info.name));
    const GemmHostData data = GenerateGemmData(info.precision, shape, 29, &pool_);
    absl::StatusOr<Problem> p = Upload(data);
    ASSERT_TRUE(p.ok()) << p.status();
    auto plan = Plan(data, *p);
    ASSERT_TRUE(plan.ok()) << plan.status();
    int launched = 0;
    for (int i = 0; i < (*plan)->candidate_count(); ++i) {
      const GemmAlgorithm candidate = (*plan)->Candidate(i);
      SCOPED_TRACE(candidate.Describe());
      EXPECT_EQ(candidate.rank, i);
      auto d = RunOnce(**plan, i, *p);
      if (!d.ok()) {
        EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition) << d.status();
        continue;
      }
      ++launched;
      const GemmVerification v = Verify(data, *d, candidate);
      EXPECT_TRUE(v.passed) << "mismatches " << v.mismatches << " nonfinite " << v.nonfinite;
    }
    std::printf("%-7s %d of %d candidates launched and verified\n",
                std::string(info.name).c_str(), launched, (*plan)->candidate_count());
    EXPECT_GE(launched, 1);
  }
}

// Needs neither a GPU nor the library: the launch report's wording, which readers of results
// parse ("algo N, tile T,", "cluster C,", "the heuristic's #K of N", "fastest of M timed").
TEST(GemmAlgorithmDescribe, NamesTheChoiceAndTheTrials) {
  GemmAlgorithm g;
  g.algo_id = 66;
  g.tile = "320x128";
  g.stages = "64xAUTO";
  g.cluster_shape_id = 0;
  g.workspace_bytes = 4;
  g.waves_count = 12.61f;
  g.candidates = 8;
  g.rank = 7;
  EXPECT_NE(g.Describe().find("cublasLt algo 66, tile 320x128, stages 64xAUTO, split-K 1"),
            std::string::npos)
      << g.Describe();
  EXPECT_NE(g.Describe().find("the heuristic's #7 of 8, not timed"), std::string::npos)
      << g.Describe();
  g.timed = 8;
  g.trial_rounds = 3;
  g.trial_batch = 1;
  g.trial_seconds = 1.58e-3;
  g.first_trial_seconds = 1.66e-3;
  g.refused = 0;
  EXPECT_NE(g.Describe().find("the heuristic's #7 of 8, fastest of 8 timed at setup (3 trials of 1 "
                              "launches): 1.58 ms vs 1.66 ms for the heuristic's first"),
            std::string::npos)
      << g.Describe();
  g.refused = 2;
  g.first_trial_seconds = 0;
  EXPECT_NE(g.Describe().find("; 2 refused by cuBLASLt): 1.58 ms (the heuristic's first was "
                              "refused)"),
            std::string::npos)
      << g.Describe();
}

// Needs the library but no GPU: the scales' alignment is checked before cuBLASLt is called.
TEST(GemmPlanScales, Fp8NeedsAlignedScalesBeforeTheHeuristic) {
  auto lt = CublasLt::Load(kCublasLtLibrary);
  if (!lt.ok()) GTEST_SKIP() << lt.status();
  alignas(16) static const float kScales[8] = {};
  for (GemmScales scales : {GemmScales{}, GemmScales{kScales, nullptr},
                            GemmScales{kScales, kScales + 1}}) {
    auto plan = GemmPlan::Create(**lt, GemmPrecision::kF8E4M3, {256, 256, 256}, "an H100", 90,
                                 kGemmWorkspaceBytes, scales);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
    EXPECT_NE(plan.status().message().find("16-byte aligned"), std::string::npos);
  }
}

TEST_F(GemmLtTest, Fp8BelowComputeCapability89IsFailedPrecondition) {
  auto plan = GemmPlan::Create(*lt_, GemmPrecision::kF8E4M3, {256, 256, 256}, "an Ampere GPU", 80,
                               kGemmWorkspaceBytes);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("8.9"), std::string::npos) << plan.status();
  EXPECT_NE(plan.status().message().find("8.0"), std::string::npos) << plan.status();
}

TEST_F(GemmLtTest, LargeSquareGemmsRunAndVerify) {
  // 4096^3 per tensor-core precision: verified on samples and timed hot (printed, not asserted:
  // the comparison with torch is bench/torch_gemm.py's job).
  for (GemmPrecision p : {GemmPrecision::kBF16, GemmPrecision::kF8E4M3}) {
    const GemmPrecisionInfo& info = GemmInfo(p);
    if (cc_ < info.min_compute_capability) continue;
    const GemmHostData data = GenerateGemmData(p, {4096, 4096, 4096}, 23, &pool_);
    GemmAlgorithm algorithm;
    double seconds = 0;
    auto d = Run(data, &algorithm, 20, &seconds);
    ASSERT_TRUE(d.ok()) << d.status();
    const GemmVerification v = Verify(data, *d, algorithm);
    EXPECT_TRUE(v.passed) << std::string(info.name) << " mismatches " << v.mismatches;
    std::printf("%-7s 4096^3: %.1f TFLOP/s hot, worst error/bound %.3g; %s\n",
                std::string(info.name).c_str(), GemmFlops(data.shape) / seconds / 1e12,
                v.max_error_to_bound, algorithm.Describe().c_str());
  }
}

}  // namespace
}  // namespace gpubench::cuda
