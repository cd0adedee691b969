// GEMM through cuBLASLt, the vendor path (as CUB is for the elementwise family). The library is
// loaded at run time (dlopen), so the server and its container run without it and a GEMM then
// answers FAILED_PRECONDITION naming the missing library. Host-only header: no CUDA or cuBLAS
// types (streams and device pointers travel as void*), no gRPC.
//
// A GemmPlan is one problem (precision, M, N, K in kernels/gemm.h's "TN" layout) with its
// descriptors, the candidate algorithms cuBLASLt's heuristic offers for it on the current device,
// and the selected one (the heuristic's first, or the fastest in Autotune's setup trials).
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

// What cublasLtMatmulAlgoConfigGetAttribute reports for one algorithm, its place in the
// heuristic's list, and (for the chosen one) the setup trials that picked it.
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
  int candidates = 0;           // algorithms the heuristic returned (after the filter below)
  int rank = 0;                 // this one's place in the heuristic's list: 0 = its first choice
  // Candidates that reduced split-K partials in the (narrow) output type, which the verification
  // bound does not cover, were dropped from the heuristic's list.
  bool avoided_output_type_reduction = false;
  // Setup trials (GemmPlan::Autotune; 0 when none ran): candidates timed, candidates cuBLASLt
  // refused to launch, trials per candidate and launches per trial, the chosen one's median
  // per-launch seconds and the heuristic's first's (0 when it was refused).
  int timed = 0;
  int refused = 0;
  int trial_rounds = 0;
  int trial_batch = 0;
  double trial_seconds = 0;
  double first_trial_seconds = 0;

  // "cublasLt algo 66, tile 128x256, stages 64x4, split-K 1, ...; the heuristic's #3 of 8,
  // fastest of 8 timed at setup (3 trials of 6 launches): 0.180 ms vs 0.185 ms for its first".
  std::string Describe() const;
};

// Device pointers to the per-tensor dequantization scales of fp8 A and B (one f32 each). cuBLASLt
// requires them set before its heuristic runs and 16-byte aligned, like the matrices.
struct GemmScales {
  const float* a = nullptr;
  const float* b = nullptr;
};

class GemmPlan {
 public:
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  // Creates the handle and the descriptors on the current CUDA device (cudaSetDevice first) and
  // asks the heuristic for up to kGemmHeuristicCandidates algorithms within
  // `max_workspace_bytes`; the first is selected until Autotune. `device_name` and `cc` (compute
  // capability, major x 10 + minor) describe that device: below the precision's minimum (fp8: 8.9)
  // the answer is FAILED_PRECONDITION naming both. FAILED_PRECONDITION also when cuBLASLt has no
  // algorithm for the problem, with cuBLASLt's status. fp8 needs `scales` (both set, 16-byte
  // aligned): INVALID_ARGUMENT otherwise; other precisions ignore them.
  static absl::StatusOr<std::unique_ptr<GemmPlan>> Create(const CublasLt& lt,
                                                          GemmPrecision precision,
                                                          const GemmShape& shape,
                                                          absl::string_view device_name, int cc,
                                                          int64_t max_workspace_bytes,
                                                          GemmScales scales = {});

  // The selected algorithm (the heuristic's first until Autotune selects another).
  const GemmAlgorithm& algorithm() const { return algorithm_; }
  GemmPrecision precision() const { return precision_; }
  const GemmShape& shape() const { return shape_; }
  int candidate_count() const;
  // Candidate `index` (0 <= index < candidate_count()) as the heuristic described it.
  GemmAlgorithm Candidate(int index) const;

  // Enqueues D = scale_a x scale_b x A . B^T on `stream` (a cudaStream_t) with the selected
  // algorithm (RunCandidate: with candidate `index`). a, b and d are device buffers in the layout
  // of kernels/gemm.h; workspace a device buffer of `workspace_bytes`, at least the algorithm's
  // workspace_bytes (at most the plan's max_workspace_bytes covers every candidate). Not
  // thread-safe (one stream at a time). cuBLASLt's refusal is FAILED_PRECONDITION with its status.
  absl::Status Run(const void* a, const void* b, void* d, void* workspace, int64_t workspace_bytes,
                   void* stream) const;
  absl::Status RunCandidate(int index, const void* a, const void* b, void* d, void* workspace,
                            int64_t workspace_bytes, void* stream) const;

  // The setup trials: times the first candidate cuBLASLt launches (twice: the first launch loads
  // the kernel), plans the trials from that (kernels/gemm_autotune.h: PlanGemmTrials), launches
  // the other planned candidates once (those cuBLASLt refuses are dropped), times them all
  // round-robin (CUDA events on `stream`) and selects the fastest (ChooseGemmCandidate);
  // algorithm() then carries the trials. Synchronizes `stream`. FAILED_PRECONDITION with
  // cuBLASLt's first refusal when it launches none; INTERNAL for a CUDA error.
  absl::Status Autotune(const void* a, const void* b, void* d, void* workspace,
                        int64_t workspace_bytes, void* stream);

 private:
  struct Descriptors;
  GemmPlan(const CublasLt& lt, GemmPrecision precision, const GemmShape& shape);

  const CublasLt& lt_;
  GemmPrecision precision_;
  GemmShape shape_;
  std::unique_ptr<Descriptors> desc_;
  int selected_ = 0;
  GemmAlgorithm algorithm_;
};

// Workspace offered to the heuristic: 32 MiB, NVIDIA's recommendation for Hopper and later
// (cuBLAS documentation, "cublasSetWorkspace"). The session allocates what its candidates need,
// at least kGemmMinWorkspaceBytes (what torch 2.11 passes to cuBLASLt for torch._scaled_mm, seen
// in cuBLASLt's API log on an H200), and passes all of it to every launch.
inline constexpr int64_t kGemmWorkspaceBytes = 32 << 20;
inline constexpr int64_t kGemmMinWorkspaceBytes = 1 << 20;

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_GEMM_LT_H_
