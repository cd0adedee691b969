// The gemm family's CUDA binding: per-session setup (cuBLASLt plan, workspace, fp8 scales) and the
// launch, for kernels/families/gemm.cc. Host code only (cuBLASLt is a library: no device code).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/families/gemm_precisions.h"
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
  int64_t workspace_bytes = 0;
  float* scales = nullptr;  // fp8: scale_a at scales[0], scale_b at scales[kScaleStride]
};

// fp8 scales sit 256 bytes apart: cuBLASLt wants them 16-byte aligned, like the matrices.
constexpr int kScaleStride = 64;

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

// The plan, its workspace and (fp8) scales, then the setup trials on the run's own buffers: the
// heuristic's candidates timed briefly, the fastest kept (GemmPlan::Autotune).
int Setup(GemmPrecision precision, const KernelBuffers& buffers, void* stream,
          std::unique_ptr<LaunchState>* state, std::string* report) {
  absl::StatusOr<const CublasLt*> lt = CublasLt::Shared();
  if (!lt.ok()) return SetupError(lt.status(), report);
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, buffers.device); e != cudaSuccess) return e;
  auto s = std::make_unique<GemmState>();
  GemmScales scales;
  if (precision == GemmPrecision::kF8E4M3) {
    float host[2 * kScaleStride] = {};
    host[0] = kGemmFp8Scale;
    host[kScaleStride] = kGemmFp8Scale;
    if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&s->scales), sizeof(host));
        e != cudaSuccess) {
      return e;
    }
    if (cudaError_t e = cudaMemcpy(s->scales, host, sizeof(host), cudaMemcpyHostToDevice);
        e != cudaSuccess) {
      return e;
    }
    scales = {s->scales, s->scales + kScaleStride};
  }
  const GemmShape shape{buffers.shape.m, buffers.shape.n, buffers.shape.k};
  auto plan = GemmPlan::Create(**lt, precision, shape, prop.name, prop.major * 10 + prop.minor,
                               kGemmWorkspaceBytes, scales);
  if (!plan.ok()) return SetupError(plan.status(), report);
  s->plan = *std::move(plan);
  s->workspace_bytes = kGemmMinWorkspaceBytes;
  for (int i = 0; i < s->plan->candidate_count(); ++i) {
    s->workspace_bytes = std::max(s->workspace_bytes, s->plan->Candidate(i).workspace_bytes);
  }
  if (cudaError_t e = cudaMalloc(&s->workspace, static_cast<size_t>(s->workspace_bytes));
      e != cudaSuccess) {
    *report = absl::StrCat("cuBLASLt workspace of ", s->workspace_bytes, " bytes");
    return e;
  }
  if (absl::Status tuned = s->plan->Autotune(buffers.data[kA], buffers.data[kB], buffers.data[kD],
                                             s->workspace, s->workspace_bytes, stream);
      !tuned.ok()) {
    return SetupError(tuned, report);
  }
  *report = absl::StrCat((*lt)->version(), ": ", s->plan->algorithm().Describe());
  absl::StatusOr<GemmPeak> peak = GemmDensePeak(prop.name, prop.major, prop.minor,
                                                prop.multiProcessorCount, precision);
  absl::StrAppend(report, "; peak: ",
                  peak.ok() ? absl::StrCat(peak->basis, " (", peak->source_url, ")")
                            : std::string(peak.status().message()));
  *state = std::move(s);
  return cudaSuccess;
}

}  // namespace

// One setup per precision of kernels/families/gemm_precisions.h.
#define GPUBENCH_GEMM_CUDA_SETUP(Name, ...)                                                \
  int GemmSetup##Name(const KernelBuffers& buffers, const LaunchGeometry&, void* stream,   \
                      std::unique_ptr<LaunchState>* state, std::string* report) {          \
    return Setup(GemmPrecision::k##Name, buffers, stream, state, report);                  \
  }
GPUBENCH_GEMM_PRECISIONS(GPUBENCH_GEMM_CUDA_SETUP)
#undef GPUBENCH_GEMM_CUDA_SETUP

int GemmLaunch(const KernelBuffers& buffers, const LaunchGeometry&, void* stream,
               const void** symbol) {
  if (symbol != nullptr) {  // cuBLASLt picks its own kernel: no occupancy figures
    *symbol = nullptr;
    return cudaSuccess;
  }
  const auto* s = static_cast<const GemmState*>(buffers.state);
  if (s == nullptr) return cudaErrorInvalidValue;  // no setup ran
  const absl::Status status = s->plan->Run(buffers.data[kA], buffers.data[kB], buffers.data[kD],
                                           s->workspace, s->workspace_bytes, stream);
  // cuBLASLt's own failures are not sticky CUDA errors, so the device stays in service: its
  // refusal (CUBLAS_STATUS_NOT_SUPPORTED) is cudaErrorNotSupported (FAILED_PRECONDITION), an
  // allocation failure cudaErrorMemoryAllocation, anything else unknown.
  if (status.ok()) return cudaSuccess;
  if (absl::IsFailedPrecondition(status)) return cudaErrorNotSupported;
  if (absl::IsResourceExhausted(status)) return cudaErrorMemoryAllocation;
  return cudaErrorUnknown;
}

}  // namespace gpubench::cuda
