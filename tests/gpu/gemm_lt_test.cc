// The cuBLASLt wrapper (kernels/cuda/gemm_lt.h) on a real GPU (ctest label "gpu"): every
// precision against the host reference, the algorithm description, fp8's compute-capability
// gate. Skips, printing why, where no GPU or no libcublasLt.so.13 is usable.
#include "kernels/cuda/gemm_lt.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

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

  // Runs one GEMM through a plan and returns D on the host; the algorithm in `algorithm`.
  absl::StatusOr<std::vector<std::byte>> Run(const GemmHostData& data, GemmAlgorithm* algorithm,
                                             int timed_launches = 0, double* seconds = nullptr) {
    auto plan = GemmPlan::Create(*lt_, data.precision, data.shape, name_, cc_, kGemmWorkspaceBytes);
    if (!plan.ok()) return plan.status();
    *algorithm = (*plan)->algorithm();
    const GemmShape& s = data.shape;
    const size_t d_bytes = static_cast<size_t>(s.m * s.n * GemmInfo(data.precision).output_bytes);
    DeviceBuffer a = Allocate(data.a.size()), b = Allocate(data.b.size()), d = Allocate(d_bytes),
                 ws = Allocate(static_cast<size_t>(algorithm->workspace_bytes)),
                 scales = Allocate(2 * sizeof(float));
    if (!a || !b || !d || !ws || !scales) return absl::ResourceExhaustedError("cudaMalloc");
    const float host_scales[2] = {data.scale_a, data.scale_b};
    cudaMemcpy(a.get(), data.a.data(), data.a.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(b.get(), data.b.data(), data.b.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(scales.get(), host_scales, sizeof(host_scales), cudaMemcpyHostToDevice);
    cudaMemset(d.get(), 0xff, d_bytes);  // NaN in every output type: unwritten elements show
    const float* scale = static_cast<const float*>(scales.get());
    const bool fp8 = data.precision == GemmPrecision::kF8E4M3;
    absl::Status run = (*plan)->Run(a.get(), b.get(), d.get(), fp8 ? scale : nullptr,
                                    fp8 ? scale + 1 : nullptr, ws.get(), nullptr);
    if (!run.ok()) return run;
    if (cudaDeviceSynchronize() != cudaSuccess) return absl::InternalError("cudaDeviceSynchronize");
    std::vector<std::byte> out(d_bytes);
    cudaMemcpy(out.data(), d.get(), d_bytes, cudaMemcpyDeviceToHost);
    if (timed_launches > 0) {
      cudaEvent_t start, stop;
      cudaEventCreate(&start);
      cudaEventCreate(&stop);
      cudaEventRecord(start, nullptr);
      for (int i = 0; i < timed_launches; ++i) {
        (void)(*plan)->Run(a.get(), b.get(), d.get(), fp8 ? scale : nullptr,
                           fp8 ? scale + 1 : nullptr, ws.get(), nullptr);
      }
      cudaEventRecord(stop, nullptr);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      *seconds = ms * 1e-3 / timed_launches;
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
    }
    return out;
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
    const GemmVerification v = VerifyGemm(
        data, d->data(), kGemmDefaultSamples, 5, &pool_,
        {.split_k_reduced_in_output_type = algorithm.reduction_in_output_type ? algorithm.split_k : 0});
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
  // the goal comparison with torch is bench/run_device_gemm.sh's job).
  for (GemmPrecision p : {GemmPrecision::kBF16, GemmPrecision::kF8E4M3}) {
    const GemmPrecisionInfo& info = GemmInfo(p);
    if (cc_ < info.min_compute_capability) continue;
    const GemmHostData data = GenerateGemmData(p, {4096, 4096, 4096}, 23, &pool_);
    GemmAlgorithm algorithm;
    double seconds = 0;
    auto d = Run(data, &algorithm, 20, &seconds);
    ASSERT_TRUE(d.ok()) << d.status();
    const GemmVerification v = VerifyGemm(
        data, d->data(), kGemmDefaultSamples, 5, &pool_,
        {.split_k_reduced_in_output_type = algorithm.reduction_in_output_type ? algorithm.split_k : 0});
    EXPECT_TRUE(v.passed) << std::string(info.name) << " mismatches " << v.mismatches;
    std::printf("%-7s 4096^3: %.1f TFLOP/s hot, worst error/bound %.3g; %s\n",
                std::string(info.name).c_str(), GemmFlops(data.shape) / seconds / 1e12,
                v.max_error_to_bound, algorithm.Describe().c_str());
  }
}

}  // namespace
}  // namespace gpubench::cuda
