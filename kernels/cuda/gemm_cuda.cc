// The gemm family's CUDA binding: per-session setup (cuBLASLt plan, workspace, fp8 scales) and the
// launch, for kernels/families/gemm.cc. Host code only (cuBLASLt is a library: no device code).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/gemm.h"
#include "kernels/gemm_peak.h"
#include "kernels/launch.h"

namespace gpubench::cuda {
namespace {

// Buffer indices of the gemm family (kernels/families/gemm.cc): A, B, D.
constexpr int kA = 0, kB = 1, kD = 2;

class GemmState final : public LaunchState {
 public:
  ~GemmState() override {
    if (workspace != nullptr) cudaFree(workspace);
    if (scales != nullptr) cudaFree(scales);
  }
  std::unique_ptr<GemmPlan> plan;
  void* workspace = nullptr;
  float* scales = nullptr;  // fp8: scale_a, scale_b on the device
};

// The session's error for a failed setup: FAILED_PRECONDITION (cudaErrorNotSupported) for a
// missing library, an unsupported device or shape; the report carries the message.
int SetupError(const absl::Status& status, std::string* report) {
  *report = std::string(status.message());
  if (absl::IsResourceExhausted(status)) return cudaErrorMemoryAllocation;
  if (absl::IsFailedPrecondition(status) || absl::IsInvalidArgument(status)) {
    return cudaErrorNotSupported;
  }
  return cudaErrorUnknown;
}

int Setup(GemmPrecision precision, const KernelBuffers& buffers, std::unique_ptr<LaunchState>* state,
          std::string* report) {
  absl::StatusOr<const CublasLt*> lt = CublasLt::Shared();
  if (!lt.ok()) return SetupError(lt.status(), report);
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, buffers.device); e != cudaSuccess) return e;
  const GemmShape shape{buffers.shape.m, buffers.shape.n, buffers.shape.k};
  auto plan = GemmPlan::Create(**lt, precision, shape, prop.name, prop.major * 10 + prop.minor,
                               kGemmWorkspaceBytes);
  if (!plan.ok()) return SetupError(plan.status(), report);
  auto s = std::make_unique<GemmState>();
  s->plan = *std::move(plan);
  const GemmAlgorithm& algorithm = s->plan->algorithm();
  if (algorithm.workspace_bytes > 0) {
    if (cudaError_t e = cudaMalloc(&s->workspace, static_cast<size_t>(algorithm.workspace_bytes));
        e != cudaSuccess) {
      *report = absl::StrCat("cuBLASLt workspace of ", algorithm.workspace_bytes, " bytes");
      return e;
    }
  }
  if (precision == GemmPrecision::kF8E4M3) {
    const float scales[2] = {kGemmFp8Scale, kGemmFp8Scale};
    if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&s->scales), sizeof(scales));
        e != cudaSuccess) {
      return e;
    }
    if (cudaError_t e = cudaMemcpy(s->scales, scales, sizeof(scales), cudaMemcpyHostToDevice);
        e != cudaSuccess) {
      return e;
    }
  }
  *report = absl::StrCat((*lt)->version(), ": ", algorithm.Describe());
  absl::StatusOr<GemmPeak> peak = GemmDensePeak(prop.name, prop.major, prop.minor,
                                                prop.multiProcessorCount, precision);
  absl::StrAppend(report, "; peak: ",
                  peak.ok() ? absl::StrCat(peak->basis, " (", peak->source_url, ")")
                            : std::string(peak.status().message()));
  *state = std::move(s);
  return cudaSuccess;
}

}  // namespace

#define GPUBENCH_GEMM_CUDA_SETUP(Name, Precision)                                          \
  int GemmSetup##Name(const KernelBuffers& buffers, const LaunchGeometry&, void*,          \
                      std::unique_ptr<LaunchState>* state, std::string* report) {          \
    return Setup(Precision, buffers, state, report);                                       \
  }
GPUBENCH_GEMM_CUDA_SETUP(F16, GemmPrecision::kF16)
GPUBENCH_GEMM_CUDA_SETUP(BF16, GemmPrecision::kBF16)
GPUBENCH_GEMM_CUDA_SETUP(TF32, GemmPrecision::kTF32)
GPUBENCH_GEMM_CUDA_SETUP(F32, GemmPrecision::kF32)
GPUBENCH_GEMM_CUDA_SETUP(F64, GemmPrecision::kF64)
GPUBENCH_GEMM_CUDA_SETUP(F8E4M3, GemmPrecision::kF8E4M3)
#undef GPUBENCH_GEMM_CUDA_SETUP

int GemmLaunch(const KernelBuffers& buffers, const LaunchGeometry&, void* stream,
               const void** symbol) {
  if (symbol != nullptr) {  // cuBLASLt picks its own kernel: no occupancy figures
    *symbol = nullptr;
    return cudaSuccess;
  }
  const auto* s = static_cast<const GemmState*>(buffers.state);
  if (s == nullptr) return cudaErrorInvalidValue;  // no setup ran
  const float* scales = s->scales;
  absl::Status status =
      s->plan->Run(buffers.data[kA], buffers.data[kB], buffers.data[kD], scales,
                   scales != nullptr ? scales + 1 : nullptr, s->workspace, stream);
  // cuBLASLt's own failures are not sticky CUDA errors: unknown, so the device stays in service.
  return status.ok() ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace gpubench::cuda
