#include "kernels/cuda/gemm_lt.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/gemm_autotune.h"

namespace gpubench::cuda {
namespace {

#include "kernels/cuda/cublaslt_names.inc"

template <size_t N>
std::string EnumName(const char* const (&names)[N], unsigned value) {
  if (value < N && names[value] != nullptr) return names[value];
  return value == 0 ? "auto" : absl::StrCat("#", value);
}

// The cuBLASLt types of one precision (the "TN" GEMM of kernels/gemm.h).
struct LtTypes {
  cudaDataType_t ab;       // A and B
  cudaDataType_t cd;       // C and D
  cublasComputeType_t compute;
  cudaDataType_t scale;    // alpha and beta
};

LtTypes TypesOf(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::kF16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case GemmPrecision::kBF16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case GemmPrecision::kTF32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F};
    case GemmPrecision::kF32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case GemmPrecision::kF64:
      return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    case GemmPrecision::kF8E4M3:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
  }
  return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
}

}  // namespace

struct CublasLt::Api {
  void* lib = nullptr;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetVersion) get_version = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) config_get = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;

  // "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (15)"
  std::string Error(const char* call, cublasStatus_t s) const {
    return absl::StrCat(call, ": ", status_string != nullptr ? status_string(s) : "error", " (",
                        static_cast<int>(s), ")");
  }
  absl::Status Check(cublasStatus_t s, const char* call) const {
    switch (s) {
      case CUBLAS_STATUS_SUCCESS:
        return absl::OkStatus();
      case CUBLAS_STATUS_ALLOC_FAILED:
        return absl::ResourceExhaustedError(Error(call, s));
      case CUBLAS_STATUS_NOT_SUPPORTED:
      case CUBLAS_STATUS_ARCH_MISMATCH:
        return absl::FailedPreconditionError(Error(call, s));
      default:
        return absl::InternalError(Error(call, s));
    }
  }
};

CublasLt::~CublasLt() {
  if (api_ != nullptr && api_->lib != nullptr) dlclose(api_->lib);
}

absl::StatusOr<std::unique_ptr<CublasLt>> CublasLt::Load(const std::string& library) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->lib == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GEMM needs cuBLASLt (", library, "), which is not loadable: ", dlerror(),
        " (the CUDA toolkit's lib64 or the nvidia-cublas wheel provides it; add its directory to "
        "LD_LIBRARY_PATH)"));
  }
  std::string missing;
  auto need = [&](auto* fn, const char* name) {
    void* p = dlsym(api->lib, name);
    if (p == nullptr && missing.empty()) missing = name;
    *fn = reinterpret_cast<std::remove_reference_t<decltype(*fn)>>(p);
  };
  need(&api->create, "cublasLtCreate");
  need(&api->destroy, "cublasLtDestroy");
  need(&api->get_version, "cublasLtGetVersion");
  need(&api->status_string, "cublasLtGetStatusString");
  need(&api->desc_create, "cublasLtMatmulDescCreate");
  need(&api->desc_destroy, "cublasLtMatmulDescDestroy");
  need(&api->desc_set, "cublasLtMatmulDescSetAttribute");
  need(&api->layout_create, "cublasLtMatrixLayoutCreate");
  need(&api->layout_destroy, "cublasLtMatrixLayoutDestroy");
  need(&api->pref_create, "cublasLtMatmulPreferenceCreate");
  need(&api->pref_destroy, "cublasLtMatmulPreferenceDestroy");
  need(&api->pref_set, "cublasLtMatmulPreferenceSetAttribute");
  need(&api->heuristic, "cublasLtMatmulAlgoGetHeuristic");
  need(&api->config_get, "cublasLtMatmulAlgoConfigGetAttribute");
  need(&api->matmul, "cublasLtMatmul");
  if (!missing.empty()) {
    dlclose(api->lib);
    return absl::FailedPreconditionError(
        absl::StrCat("GEMM needs cuBLASLt: ", library, " has no ", missing));
  }
  std::unique_ptr<CublasLt> lt(new CublasLt());
  const size_t v = api->get_version();  // major x 10000 + minor x 100 + patch
  lt->version_ = absl::StrFormat("cuBLASLt %d.%d.%d (%s)", v / 10000, (v / 100) % 100, v % 100,
                                 library);
  lt->api_ = std::move(api);
  return lt;
}

absl::StatusOr<const CublasLt*> CublasLt::Shared() {
  static const absl::StatusOr<std::unique_ptr<CublasLt>>* shared = [] {
    const char* override_path = std::getenv("GPUBENCH_CUBLASLT_LIBRARY");
    return new absl::StatusOr<std::unique_ptr<CublasLt>>(
        Load(override_path != nullptr && *override_path ? override_path : kCublasLtLibrary));
  }();
  if (!shared->ok()) return shared->status();
  return shared->value().get();
}

std::string GemmAlgorithm::Describe() const {
  std::string s = absl::StrFormat("cublasLt algo %d, tile %s, stages %s, split-K %d", algo_id,
                                  tile, stages, split_k);
  if (split_k > 1) {
    absl::StrAppendFormat(&s, " (reduction scheme %d%s)", reduction_scheme,
                          reduction_in_output_type ? ", in the output type" : "");
  }
  absl::StrAppendFormat(&s, ", swizzle %d, custom option %d, inner shape %d, cluster %s",
                        cta_swizzling, custom_option, inner_shape_id,
                        EnumName(kClusterShapeNames, static_cast<unsigned>(cluster_shape_id)));
  absl::StrAppendFormat(&s, ", workspace %d bytes, %.2f waves; the heuristic's #%d of %d%s",
                        workspace_bytes, waves_count, rank, candidates,
                        avoided_output_type_reduction
                            ? " (without split-K reductions in the output type)" : "");
  if (timed == 0) {
    absl::StrAppend(&s, ", not timed");
    return s;
  }
  absl::StrAppendFormat(&s, ", fastest of %d timed at setup (%d trials of %d launches", timed,
                        trial_rounds, trial_batch);
  if (refused > 0) absl::StrAppendFormat(&s, "; %d refused by cuBLASLt", refused);
  absl::StrAppendFormat(&s, "): %.4g ms", trial_seconds * 1e3);
  if (rank != 0) {
    absl::StrAppend(&s, first_trial_seconds > 0
                            ? absl::StrFormat(" vs %.4g ms for the heuristic's first",
                                              first_trial_seconds * 1e3)
                            : std::string(" (the heuristic's first was refused)"));
  }
  return s;
}

struct GemmPlan::Descriptors {
  const CublasLt::Api* api = nullptr;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  // The heuristic's candidates, in its order.
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;

  ~Descriptors() {
    if (a != nullptr) api->layout_destroy(a);
    if (b != nullptr) api->layout_destroy(b);
    if (c != nullptr) api->layout_destroy(c);
    if (d != nullptr) api->layout_destroy(d);
    if (op != nullptr) api->desc_destroy(op);
    if (handle != nullptr) api->destroy(handle);
  }
};

GemmPlan::GemmPlan(const CublasLt& lt, GemmPrecision precision, const GemmShape& shape)
    : lt_(lt), precision_(precision), shape_(shape), desc_(std::make_unique<Descriptors>()) {
  desc_->api = &lt.api();
}

GemmPlan::~GemmPlan() = default;

namespace {

// What cublasLtMatmulAlgoConfigGetAttribute says about one heuristic result.
GemmAlgorithm DescribeResult(const CublasLt::Api& api, const cublasLtMatmulHeuristicResult_t& r) {
  GemmAlgorithm g;
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attribute, auto* value) {
    size_t written = 0;
    api.config_get(&r.algo, attribute, value, sizeof(*value), &written);
  };
  int32_t id = 0;
  uint32_t tile = 0, split = 1, reduction = 0, swizzle = 0, custom = 0, stages = 0;
  uint16_t inner = 0, cluster = 0;
  get(CUBLASLT_ALGO_CONFIG_ID, &id);
  get(CUBLASLT_ALGO_CONFIG_TILE_ID, &tile);
  get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split);
  get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction);
  get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle);
  get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom);
  get(CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages);
  get(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner);
  get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster);
  g.algo_id = id;
  g.tile_id = static_cast<int>(tile);
  g.tile = EnumName(kTileNames, tile);
  g.stages_id = static_cast<int>(stages);
  g.stages = EnumName(kStagesNames, stages);
  // cuBLASLt reports a split count it picks per launch as -1 (all bits set in a uint32).
  g.split_k = split == UINT32_MAX ? -1 : std::max<int>(1, static_cast<int>(split));
  const bool splits = g.split_k != 1;
  g.reduction_scheme = splits ? static_cast<int>(reduction) : 0;
  g.reduction_in_output_type = splits && (reduction == CUBLASLT_REDUCTION_SCHEME_INPLACE ||
                                          reduction == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
  g.cta_swizzling = static_cast<int>(swizzle);
  g.custom_option = static_cast<int>(custom);
  g.inner_shape_id = inner;
  g.cluster_shape_id = cluster;
  g.workspace_bytes = static_cast<int64_t>(r.workspaceSize);
  g.waves_count = r.wavesCount;
  return g;
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

absl::StatusOr<std::unique_ptr<GemmPlan>> GemmPlan::Create(const CublasLt& lt,
                                                           GemmPrecision precision,
                                                           const GemmShape& shape,
                                                           absl::string_view device_name, int cc,
                                                           int64_t max_workspace_bytes,
                                                           GemmScales scales) {
  const GemmPrecisionInfo& info = GemmInfo(precision);
  if (cc < info.min_compute_capability) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s GEMM (%s) needs compute capability %d.%d or newer; %s has %d.%d", info.name,
        info.compute, info.min_compute_capability / 10, info.min_compute_capability % 10,
        device_name, cc / 10, cc % 10));
  }
  if (shape.m < 1 || shape.n < 1 || shape.k < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GEMM dimensions must be positive: ", GemmShapeString(shape)));
  }
  const bool fp8 = precision == GemmPrecision::kF8E4M3;
  if (fp8 && (scales.a == nullptr || scales.b == nullptr || !Aligned16(scales.a) ||
              !Aligned16(scales.b))) {
    return absl::InvalidArgumentError(
        "fp8 GEMM needs device scales for A and B, each 16-byte aligned");
  }
  std::unique_ptr<GemmPlan> plan(new GemmPlan(lt, precision, shape));
  const CublasLt::Api& api = lt.api();
  Descriptors& d = *plan->desc_;
  const LtTypes t = TypesOf(precision);
  auto u64 = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (absl::Status s = api.Check(api.create(&d.handle), "cublasLtCreate"); !s.ok()) return s;
  if (absl::Status s = api.Check(api.desc_create(&d.op, t.compute, t.scale),
                                 "cublasLtMatmulDescCreate");
      !s.ok()) {
    return s;
  }
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  api.desc_set(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a));
  api.desc_set(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b));
  if (fp8) {
    const int8_t fast_accumulation = 0;  // promote partial sums to f32 (torch._scaled_mm default)
    api.desc_set(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accumulation,
                 sizeof(fast_accumulation));
    // Before the heuristic, as NVIDIA's LtFp8Matmul sample and torch._scaled_mm set them.
    api.desc_set(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scales.a, sizeof(scales.a));
    api.desc_set(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scales.b, sizeof(scales.b));
  }
  // Column-major: A is K x M (ld K) used transposed, B is K x N (ld K), C and D are M x N (ld M).
  for (auto [layout, type, rows, columns, ld, name] :
       {std::tuple{&d.a, t.ab, shape.k, shape.m, shape.k, "A"},
        std::tuple{&d.b, t.ab, shape.k, shape.n, shape.k, "B"},
        std::tuple{&d.c, t.cd, shape.m, shape.n, shape.m, "C"},
        std::tuple{&d.d, t.cd, shape.m, shape.n, shape.m, "D"}}) {
    if (absl::Status s = api.Check(api.layout_create(layout, type, u64(rows), u64(columns), ld),
                                   "cublasLtMatrixLayoutCreate");
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(s.message(), " (matrix ", name, ")"));
    }
  }
  cublasLtMatmulPreference_t preference = nullptr;
  if (absl::Status s = api.Check(api.pref_create(&preference), "cublasLtMatmulPreferenceCreate");
      !s.ok()) {
    return s;
  }
  const uint64_t workspace = u64(max_workspace_bytes);
  api.pref_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  auto ask = [&](std::vector<cublasLtMatmulHeuristicResult_t>* out) {
    out->assign(kGemmHeuristicCandidates, {});
    int returned = 0;
    const cublasStatus_t hs = api.heuristic(d.handle, d.op, d.a, d.b, d.c, d.d, preference,
                                            kGemmHeuristicCandidates, out->data(), &returned);
    out->resize(hs == CUBLAS_STATUS_SUCCESS ? static_cast<size_t>(std::max(returned, 0)) : 0);
    std::erase_if(*out, [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
    return hs;
  };
  std::vector<cublasLtMatmulHeuristicResult_t> results;
  const cublasStatus_t hs = ask(&results);
  // A split-K algorithm that reduces its partial sums in a narrow output type (f16, bf16) rounds
  // each partial: outside the error bound gpubench verifies with (kernels/gemm.h). Drop those
  // candidates; when none is left, ask again without those schemes. The square sizes of interest
  // never split K.
  const size_t offered = results.size();
  std::erase_if(results, [&](const auto& r) {
    return DescribeResult(api, r).reduction_in_output_type;
  });
  bool avoided_output_type_reduction = results.size() < offered;
  if (results.empty() && offered > 0) {
    const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    api.pref_set(preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask));
    ask(&results);
  }
  api.pref_destroy(preference);
  if (results.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cuBLASLt has no %s algorithm for %s on %s (%s)%s", info.name, GemmShapeString(shape),
        device_name,
        hs != CUBLAS_STATUS_SUCCESS ? api.Error("cublasLtMatmulAlgoGetHeuristic", hs)
                                    : "the heuristic returned none",
        fp8 ? "; fp8 needs M and K multiples of 16 (16-byte aligned columns)" : ""));
  }
  d.candidates = std::move(results);
  plan->selected_ = 0;
  plan->algorithm_ = plan->Candidate(0);
  plan->algorithm_.avoided_output_type_reduction = avoided_output_type_reduction;
  return plan;
}

int GemmPlan::candidate_count() const { return static_cast<int>(desc_->candidates.size()); }

GemmAlgorithm GemmPlan::Candidate(int index) const {
  GemmAlgorithm g = DescribeResult(lt_.api(), desc_->candidates.at(static_cast<size_t>(index)));
  g.rank = index;
  g.candidates = candidate_count();
  g.avoided_output_type_reduction = algorithm_.avoided_output_type_reduction;
  return g;
}

absl::Status GemmPlan::RunCandidate(int index, const void* a, const void* b, void* d,
                                    void* workspace, int64_t workspace_bytes, void* stream) const {
  const CublasLt::Api& api = lt_.api();
  const Descriptors& desc = *desc_;
  if (index < 0 || index >= candidate_count()) {
    return absl::InvalidArgumentError(absl::StrCat("no GEMM candidate ", index));
  }
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const bool f64 = precision_ == GemmPrecision::kF64;
  return api.Check(
      api.matmul(desc.handle, desc.op, f64 ? static_cast<const void*>(&alpha_d) : &alpha_f, a,
                 desc.a, b, desc.b, f64 ? static_cast<const void*>(&beta_d) : &beta_f, d, desc.c,
                 d, desc.d, &desc.candidates[static_cast<size_t>(index)].algo, workspace,
                 static_cast<size_t>(workspace_bytes), static_cast<cudaStream_t>(stream)),
      "cublasLtMatmul");
}

absl::Status GemmPlan::Run(const void* a, const void* b, void* d, void* workspace,
                           int64_t workspace_bytes, void* stream) const {
  return RunCandidate(selected_, a, b, d, workspace, workspace_bytes, stream);
}

namespace {

// cudaEvent_t pair, destroyed on every return path.
class EventPair {
 public:
  EventPair() {
    ok_ = cudaEventCreate(&start_) == cudaSuccess && cudaEventCreate(&stop_) == cudaSuccess;
  }
  ~EventPair() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  bool ok() const { return ok_; }
  cudaEvent_t start() const { return start_; }
  cudaEvent_t stop() const { return stop_; }

 private:
  bool ok_ = false;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

absl::Status CudaCheck(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("GEMM setup trials: ", what, ": ", cudaGetErrorName(e),
                                          " (", cudaGetErrorString(e), ")"));
}

}  // namespace

absl::Status GemmPlan::Autotune(const void* a, const void* b, void* d, void* workspace,
                                int64_t workspace_bytes, void* stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  const int offered = candidate_count();
  std::vector<GemmCandidateTrials> trials(static_cast<size_t>(offered));
  EventPair events;
  if (!events.ok()) return CudaCheck(cudaGetLastError(), "cudaEventCreate");
  // Per-launch seconds of `batch` launches of candidate `index`. cuBLASLt's own errors (a refusal:
  // not supported, invalid value) are returned as they are with `*launch_failed` set; they are
  // not CUDA errors and leave the device in service.
  bool launch_failed = false;
  auto time_batch = [&](int index, int batch, double* seconds) -> absl::Status {
    launch_failed = false;
    if (absl::Status s = CudaCheck(cudaEventRecord(events.start(), st), "cudaEventRecord");
        !s.ok()) {
      return s;
    }
    for (int j = 0; j < batch; ++j) {
      if (absl::Status s = RunCandidate(index, a, b, d, workspace, workspace_bytes, stream);
          !s.ok()) {
        launch_failed = true;
        cudaStreamSynchronize(st);
        return s;
      }
    }
    cudaEventRecord(events.stop(), st);
    if (absl::Status s = CudaCheck(cudaEventSynchronize(events.stop()), "cudaEventSynchronize");
        !s.ok()) {
      return s;
    }
    float ms = 0;
    if (absl::Status s = CudaCheck(cudaEventElapsedTime(&ms, events.start(), events.stop()),
                                   "cudaEventElapsedTime");
        !s.ok()) {
      return s;
    }
    *seconds = ms * 1e-3 / batch;
    return absl::OkStatus();
  };
  // A refusal drops the candidate; a CUDA error ends the setup.
  absl::Status first_refusal;
  int refused = 0;
  auto refuse = [&](int index, const absl::Status& s) {
    trials[static_cast<size_t>(index)].launched = false;
    ++refused;
    if (first_refusal.ok()) first_refusal = s;
  };
  // The heuristic's first candidate cuBLASLt launches, timed twice (the first launch loads the
  // kernel): the trial plan's launch time.
  int first_launched = -1;
  double one_launch = 0;
  for (int i = 0; i < offered && first_launched < 0; ++i) {
    absl::Status s = time_batch(i, 1, &one_launch);
    if (s.ok()) s = time_batch(i, 1, &one_launch);
    if (s.ok()) {
      first_launched = i;
      trials[static_cast<size_t>(i)].launched = true;
    } else if (launch_failed) {
      refuse(i, s);
    } else {
      return s;
    }
  }
  const GemmPrecisionInfo& info = GemmInfo(precision_);
  if (first_launched < 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cuBLASLt offered %d %s algorithms for %s and launched none of them: %s", offered,
        info.name, GemmShapeString(shape_), first_refusal.message()));
  }
  GemmTrialPlan trial_plan = PlanGemmTrials(offered, one_launch);
  trial_plan.candidates = std::max(trial_plan.candidates, first_launched + 1);
  // The other candidates to time, once each: loads their kernels, finds cuBLASLt's refusals.
  for (int i = first_launched + 1; i < trial_plan.candidates; ++i) {
    double ignored = 0;
    absl::Status s = time_batch(i, 1, &ignored);
    if (s.ok()) {
      trials[static_cast<size_t>(i)].launched = true;
    } else if (launch_failed) {
      refuse(i, s);
    } else {
      return s;
    }
  }
  for (int round = 0; round < trial_plan.rounds; ++round) {
    for (int i = 0; i < trial_plan.candidates; ++i) {
      GemmCandidateTrials& t = trials[static_cast<size_t>(i)];
      if (!t.launched) continue;
      double seconds = 0;
      if (absl::Status s = time_batch(i, trial_plan.batch, &seconds); !s.ok()) {
        if (!launch_failed) return s;
        refuse(i, s);  // refused after launching before: drop it
        t.seconds.clear();
        continue;
      }
      t.seconds.push_back(seconds);
    }
  }
  const int chosen = ChooseGemmCandidate(trials);
  if (chosen < 0) return absl::InternalError("GEMM setup trials timed no candidate");
  selected_ = chosen;
  algorithm_ = Candidate(chosen);
  algorithm_.timed = 0;
  for (const GemmCandidateTrials& t : trials) {
    if (!t.seconds.empty()) ++algorithm_.timed;
  }
  algorithm_.refused = refused;
  algorithm_.trial_rounds = trial_plan.rounds;
  algorithm_.trial_batch = trial_plan.batch;
  algorithm_.trial_seconds = GemmTrialMedian(trials[static_cast<size_t>(chosen)].seconds);
  algorithm_.first_trial_seconds = GemmTrialMedian(trials[0].seconds);
  return absl::OkStatus();
}

}  // namespace gpubench::cuda
