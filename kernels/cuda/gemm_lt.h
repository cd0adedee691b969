// GEMM through cuBLASLt, the vendor path (as CUB is for the elementwise family). The library is
// loaded at run time (dlopen), so the server and its container run without it and a GEMM then
// answers FAILED_PRECONDITION naming the missing library. Host-only header: no CUDA or cuBLAS
// types (streams and device pointers travel as void*), no gRPC.
//
// A GemmPlan is one problem (precision, M, N, K in kernels/gemm.h's "TN" layout) with its
// descriptors and the algorithm cuBLASLt's heuristic ranks first for it on the current device.
#ifndef GPUBENCH_KERNELS_CUDA_GEMM_LT_H_
#define GPUBENCH_KERNELS_CUDA_GEMM_LT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/gemm.h"

namespace gpubench::cuda {

// The soname the CUDA 13 toolkit and the nvidia-cublas wheels install.
inline constexpr char kCublasLtLibrary[] = "libcublasLt.so.13";

// The loaded library. Thread-safe (immutable after Load).
class CublasLt {
 public:
  ~CublasLt();

  // dlopens `library` and resolves the entry points. FAILED_PRECONDITION naming the library and
  // the dlopen error when it cannot be loaded or lacks a symbol.
  static absl::StatusOr<std::unique_ptr<CublasLt>> Load(const std::string& library);

  // The process-wide instance, loaded once from kCublasLtLibrary (or $GPUBENCH_CUBLASLT_LIBRARY
  // where set); the load's error, remembered, otherwise. Thread-safe.
  static absl::StatusOr<const CublasLt*> Shared();

  // "cuBLASLt 13.0.2 (libcublasLt.so.13)".
  const std::string& version() const { return version_; }

  struct Api;
  const Api& api() const { return *api_; }

 private:
  CublasLt() = default;
  std::unique_ptr<Api> api_;
  std::string version_;
};

// What cublasLtMatmulAlgoConfigGetAttribute reports for the chosen algorithm, plus the
// heuristic's own figures.
struct GemmAlgorithm {
  int algo_id = 0;
  int tile_id = 0;
  std::string tile;  // "128x256", from cublasLtMatmulTile_t
  int stages_id = 0;
  std::string stages;  // "64x4", from cublasLtMatmulStages_t
  int split_k = 1;
  int reduction_scheme = 0;  // cublasLtReductionScheme_t; 0 when split_k is 1
  bool reduction_in_output_type = false;
  int cta_swizzling = 0;
  int custom_option = 0;
  int inner_shape_id = 0;
  int cluster_shape_id = 0;
  int64_t workspace_bytes = 0;  // what the algorithm needs
  float waves_count = 0;        // the heuristic's estimate of waves on this device
  int candidates = 0;           // algorithms the heuristic returned
  // The heuristic's first choice reduced split-K partials in the (narrow) output type, which the
  // verification bound does not cover; this is its first choice without such schemes.
  bool avoided_output_type_reduction = false;

  // "cublasLt algo 66, tile 128x256, stages 64x4, split-K 1, swizzle 0, cluster 2x1x1 ...".
  std::string Describe() const;
};

class GemmPlan {
 public:
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  // Creates the handle and the descriptors on the current CUDA device (cudaSetDevice first) and
  // asks the heuristic for the best algorithm within `max_workspace_bytes`. `device_name` and `cc`
  // (compute capability, major x 10 + minor) describe that device: below the precision's minimum
  // (fp8: 8.9) the answer is FAILED_PRECONDITION naming both. FAILED_PRECONDITION also when
  // cuBLASLt has no algorithm for the problem, with cuBLASLt's status.
  static absl::StatusOr<std::unique_ptr<GemmPlan>> Create(const CublasLt& lt,
                                                          GemmPrecision precision,
                                                          const GemmShape& shape,
                                                          absl::string_view device_name, int cc,
                                                          int64_t max_workspace_bytes);

  const GemmAlgorithm& algorithm() const { return algorithm_; }
  GemmPrecision precision() const { return precision_; }
  const GemmShape& shape() const { return shape_; }

  // Enqueues D = scale_a x scale_b x A . B^T on `stream` (a cudaStream_t). a, b and d are device
  // buffers in the layout of kernels/gemm.h; scale_a and scale_b device floats (fp8 only, null
  // otherwise); workspace a device buffer of at least algorithm().workspace_bytes. Not
  // thread-safe (one stream at a time).
  absl::Status Run(const void* a, const void* b, void* d, const float* scale_a,
                   const float* scale_b, void* workspace, void* stream) const;

 private:
  struct Descriptors;
  GemmPlan(const CublasLt& lt, GemmPrecision precision, const GemmShape& shape);

  const CublasLt& lt_;
  GemmPrecision precision_;
  GemmShape shape_;
  std::unique_ptr<Descriptors> desc_;
  GemmAlgorithm algorithm_;
};

// Workspace offered to the heuristic: 32 MiB, NVIDIA's recommendation for Hopper and later
// (cuBLAS documentation, "cublasSetWorkspace"); PyTorch offers cuBLASLt the same on sm_90.
inline constexpr int64_t kGemmWorkspaceBytes = 32 << 20;

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_GEMM_LT_H_
