// The gemm family: D = A . B^T through cuBLASLt, the vendor path, in six precisions;
// FLOP/s against the device's dense datasheet peak; verified on sampled elements of D with a
// K-dependent bound. Host side: kernels/gemm.{h,cc}; CPU binding: kernels/cpu_gemm.cc; CUDA
// binding: kernels/cuda/gemm_cuda.cc (cuBLASLt loaded at run time: kernels/cuda/gemm_lt.h).
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/families/families.h"
#include "kernels/families/gemm_precisions.h"
#include "kernels/family.h"
#include "kernels/gemm.h"
#include "kernels/gemm_peak.h"

namespace gpubench {

namespace cpu {
#define GPUBENCH_GEMM_DECLARE(Name, ...)                                  \
  void GemmSetup##Name(const KernelBuffers&, const LaunchGeometry&,       \
                       std::unique_ptr<LaunchState>*, std::string*);
GPUBENCH_GEMM_PRECISIONS(GPUBENCH_GEMM_DECLARE)
#undef GPUBENCH_GEMM_DECLARE
void GemmRows(const KernelBuffers&, const LaunchGeometry&, int64_t, int64_t);
}  // namespace cpu
#if GPUBENCH_HAVE_CUDA
namespace cuda {
#define GPUBENCH_GEMM_DECLARE(Name, ...)                                  \
  int GemmSetup##Name(const KernelBuffers&, const LaunchGeometry&, void*, \
                      std::unique_ptr<LaunchState>*, std::string*);
GPUBENCH_GEMM_PRECISIONS(GPUBENCH_GEMM_DECLARE)
#undef GPUBENCH_GEMM_DECLARE
int GemmLaunch(const KernelBuffers&, const LaunchGeometry&, void*, const void**);
}  // namespace cuda
#endif

namespace {

// The precision of a gemm variant: its name after "gemm_".
GemmPrecision PrecisionOf(const KernelVariant& variant) {
  const GemmPrecisionInfo* info = FindGemmPrecision(variant.name.substr(5));
  return info != nullptr ? info->precision : GemmPrecision::kF32;
}

GemmShape GemmShapeOf(const RunShape& s) { return {s.m, s.n, s.k}; }

int64_t ElementsA(const RunShape& s) { return s.m * s.k; }
int64_t ElementsB(const RunShape& s) { return s.n * s.k; }
int64_t ElementsD(const RunShape& s) { return s.m * s.n; }
int64_t Rows(const RunShape& s) { return s.m; }
int64_t Flops(const RunShape& s) { return 2 * s.m * s.n * s.k; }
// fp8 (e4m3) inputs give a bf16 D, as torch._scaled_mm's usual out_dtype.
DType OutputDType(DType input) { return input == DType::kF8E4M3 ? DType::kBF16 : input; }

GemmPrecision InputPrecision(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return GemmPrecision::kF16;
    case DType::kBF16:
      return GemmPrecision::kBF16;
    case DType::kF64:
      return GemmPrecision::kF64;
    case DType::kF8E4M3:
      return GemmPrecision::kF8E4M3;
    default:
      return GemmPrecision::kF32;  // f32 and tf32 store f32
  }
}

// Uniform in [-1, 1) (fp8: [-8, 8), dequantized by the scales) rounded to the input type.
void GenerateInput(const GenerateContext& ctx, std::span<std::byte> out) {
  FillGemmInput(InputPrecision(ctx.dtype), ctx.seed, ctx.stream, out, ctx.pool);
}

constexpr BufferSpec kBuffers[] = {
    {.name = "a", .role = BufferRole::kInput, .elements = &ElementsA, .generate = &GenerateInput,
     .seed_stream = 0},
    {.name = "b", .role = BufferRole::kInput, .elements = &ElementsB, .generate = &GenerateInput,
     .seed_stream = 1},
    {.name = "d", .role = BufferRole::kOutput, .dtype_of = &OutputDType, .elements = &ElementsD},
};

// D[i] (column-major: row i % M, column i / M) of the exact product of the stored inputs.
double Reference(const KernelVariant& variant, const HostData& data, int buffer, int64_t i) {
  (void)buffer;  // D is the only output
  const GemmPrecision p = PrecisionOf(variant);
  const GemmShape s = GemmShapeOf(data.shape);
  return ExactGemmElement(p, s, data.buffers[0].data(), data.buffers[1].data(), GemmInputScale(p),
                          i % s.m, i / s.m)
      .value;
}

// kernels/gemm.h's GemmErrorBound at its largest sum |a b| (K): see GemmRunTolerance.
Tolerance GemmToleranceOf(const KernelVariant& variant, const RunShape& shape) {
  const GemmTolerance t = GemmRunTolerance(GemmInfo(PrecisionOf(variant)), shape.k);
  return {.rtol = t.rtol, .atol = t.atol};
}

// --size=N: M = N = K = N; --m/--n/--k given: those, the others from the size.
absl::StatusOr<RunShape> ResolveGemmShape(int64_t elements, const RunShape& requested) {
  RunShape s;
  s.m = requested.m > 0 ? requested.m : elements;
  s.n = requested.n > 0 ? requested.n : elements;
  s.k = requested.k > 0 ? requested.k : elements;
  if (s.m < 1 || s.n < 1 || s.k < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gemm needs M, N and K >= 1 (a size for square M = N = K, or m, n, k); got ",
        GemmShapeString(GemmShapeOf(s))));
  }
  constexpr int64_t kMaxDimension = int64_t{1} << 20;  // keeps M N K and every product in int64
  if (s.m > kMaxDimension || s.n > kMaxDimension || s.k > kMaxDimension) {
    return absl::InvalidArgumentError(absl::StrCat("gemm dimensions are limited to ", kMaxDimension,
                                                   "; got ", GemmShapeString(GemmShapeOf(s))));
  }
  s.elements = elements > 0 ? elements : s.m;
  return s;
}

std::optional<double> Peak(const DeviceInfo& device, const KernelVariant& variant) {
  absl::StatusOr<GemmPeak> peak =
      GemmDensePeak(device.name, device.compute_capability_major,
                    device.compute_capability_minor, device.multiprocessor_count,
                    PrecisionOf(variant));
  if (!peak.ok()) return std::nullopt;
  return peak->flops_per_second;
}


// One variant per precision; cuBLASLt's candidates and the setup trials choose tiles and launches
// (kernels/cuda/gemm_lt.h), so nothing is tunable here.
constexpr KernelVariant Variant(absl::string_view name, DType dtype, absl::string_view description,
                                int min_compute_capability, CpuSetupFn cpu_setup,
                                CudaSetupFn cuda_setup) {
  return {.name = name,
          .family = &kGemm,
          .dtype = dtype,
          // The CPU emulation's "threads" are rows of D (launch_items = M), 32 to a block.
          .default_policy = {.block_size = 32, .block_size_tunable = false},
          .description = description,
          .provenance =
              "NVIDIA cuBLASLt (cublasLtMatmul): its heuristic's candidates, the fastest in "
              "setup trials",
          .cpu = &cpu::GemmRows,
          .cuda = GPUBENCH_CUDA(GemmLaunch),
          .min_compute_capability = min_compute_capability,
          .cpu_setup = cpu_setup,
          .cuda_setup = cuda_setup};
}

constexpr KernelVariant kVariants[] = {
#define GPUBENCH_GEMM_VARIANT(Name, name, dtype, min_compute_capability, description) \
  Variant("gemm_" #name, DType::dtype, description, min_compute_capability,          \
          &cpu::GemmSetup##Name, GPUBENCH_CUDA(GemmSetup##Name)),
    GPUBENCH_GEMM_PRECISIONS(GPUBENCH_GEMM_VARIANT)
#undef GPUBENCH_GEMM_VARIANT
};

}  // namespace

constexpr KernelFamily kGemm{
    .name = "gemm",
    .buffers = kBuffers,
    .metric = Metric::kOperationsPerSecond,
    .operation_unit = "FLOP",
    .operations = &Flops,
    .reference = &Reference,
    .verify_samples = kGemmDefaultSamples,
    .tolerance = &GemmToleranceOf,
    .resolve_shape = &ResolveGemmShape,
    .launch_items = &Rows,
    .peak = &Peak,
    .cpu_chunk_threads = 1,
};

std::span<const KernelVariant> GemmVariants() { return kVariants; }

}  // namespace gpubench
