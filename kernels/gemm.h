// The GEMM family's host side, free of CUDA: precisions, problem shapes, input generation, the
// blocked and threaded CPU GEMM the CPU backend runs, and the host reference with its error bound
// for verifying sampled output elements of any backend.
//
// Layout (cuBLAS's "TN", the layout of nn.Linear's x . W^T; FP8 GEMM on tensor cores requires it):
//   A is M x K row-major    a[m * K + k]
//   B is N x K row-major    b[n * K + k]
//   D is M x N column-major d[m + n * M]
//   D[m, n] = scale_a * scale_b * sum_k A[m, k] * B[n, k]    (alpha = 1, beta = 0)
#ifndef GPUBENCH_KERNELS_GEMM_H_
#define GPUBENCH_KERNELS_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/parallel.h"
#include "kernels/numeric.h"

namespace gpubench {

enum class GemmPrecision { kF16, kBF16, kTF32, kF32, kF64, kF8E4M3 };

// What one precision stores, computes and how its result may deviate from the exact product.
struct GemmPrecisionInfo {
  GemmPrecision precision;
  absl::string_view name;         // "f16", "bf16", "tf32", "f32", "f64", "f8e4m3"
  absl::string_view input_type;   // element type of A and B
  absl::string_view output_type;  // element type of D
  absl::string_view compute;      // what multiplies and accumulates, in words
  DType input_dtype;              // storage of A and B (tf32 stores f32)
  DType output_dtype;             // storage of D
  int input_bytes;
  int output_bytes;
  // Lowest compute capability (major x 10 + minor) with tensor cores for this precision; 0: any.
  int min_compute_capability;
  // Error model of GemmErrorBound (see there): relative error of one product from the tensor
  // core's conversion of its inputs; unit roundoff of the accumulator; relative error of storing
  // the result in the output type; smallest output spacing near zero (absolute).
  double input_conversion_error;
  double accumulation_unit;
  double output_unit;
  double output_absolute_floor;
  // Tensor cores that add partial sums at less than f32 precision before the accumulator gets
  // them: unit roundoff of that partial sum and how many products it spans (0: none). GemmErrorBound
  // adds gamma(min(K, terms), unit).
  double limited_accumulation_unit = 0;
  int64_t limited_accumulation_terms = 0;
};

// Every precision, in a stable order.
std::span<const GemmPrecisionInfo> AllGemmPrecisions();
const GemmPrecisionInfo& GemmInfo(GemmPrecision precision);
// The precision called `name` ("bf16", ...); nullptr for none.
const GemmPrecisionInfo* FindGemmPrecision(absl::string_view name);

struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

// Floating-point operations of one launch: 2 x M x N x K (one multiply and one add per term).
inline double GemmFlops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}
// Bytes of A, B and D (each read or written once: the minimum traffic of one launch).
int64_t GemmBytes(const GemmPrecisionInfo& info, const GemmShape& s);
// "4096x4096x4096" (M x N x K).
std::string GemmShapeString(const GemmShape& s);

// The fp8 inputs are quantized with this per-tensor scale (values uniform in [-8, 8) stored in
// E4M3, dequantized by 1/8 each): scale_a = scale_b = kGemmFp8Scale, exact powers of two.
inline constexpr float kGemmFp8Scale = 0.125f;

// Inputs of one GEMM run, generated from a seed.
struct GemmHostData {
  GemmPrecision precision = GemmPrecision::kF32;
  GemmShape shape;
  std::vector<std::byte> a;  // M x K of the input type
  std::vector<std::byte> b;  // N x K of the input type
  float scale_a = 1.0f;      // fp8: dequantization scales; 1 otherwise
  float scale_b = 1.0f;
};

// Fills `out` (whole elements of the precision's input type) with values uniform in [-1, 1)
// (fp8: [-8, 8), to be scaled by 1/8) rounded to the input type. Element i depends only on
// (seed, stream, i). Uses `pool` for speed.
void FillGemmInput(GemmPrecision precision, uint64_t seed, uint64_t stream, std::span<std::byte> out,
                   ParallelPool* pool);

// A (stream 0) and B (stream 1) from FillGemmInput.
GemmHostData GenerateGemmData(GemmPrecision precision, const GemmShape& shape, uint64_t seed,
                              ParallelPool* pool);

// scale_a x scale_b of the generated inputs: 1/64 for fp8, 1 otherwise.
double GemmInputScale(GemmPrecision precision);

// Element (row, column) of the exact product scale x A . B^T of stored inputs `a` (M x K) and `b`
// (N x K) of the precision's input type, accumulated in long double, with scale x sum_k |a b| for
// the error bound. Thread-safe.
struct GemmExactElement {
  double value = 0;
  double abs_sum = 0;
};
GemmExactElement ExactGemmElement(GemmPrecision precision, const GemmShape& shape, const void* a,
                                  const void* b, double scale, int64_t row, int64_t column);

// Element i of matrix A (which = 0) or B (which = 1) as a double, exactly.
double GemmInputValue(const GemmHostData& data, int which, int64_t i);
// Element i of a D buffer of `precision`'s output type as a double, exactly.
double GemmOutputValue(GemmPrecision precision, const void* d, int64_t i);

// The CPU backend's GEMM computes D as the device does: the inputs converted once to the compute
// type (f32; TF32-rounded for tf32; f64 for f64), as a tensor core converts its operands on load;
// products accumulated in the compute type; the scaled sum rounded once to the output type.
struct GemmOperands {
  GemmPrecision precision = GemmPrecision::kF32;
  GemmShape shape;
  std::vector<float> a32, b32;   // all but f64
  std::vector<double> a64, b64;  // f64
  double scale = 1;              // scale_a x scale_b
};
GemmOperands ConvertGemmOperands(const GemmHostData& data, ParallelPool* pool);

// Rows [row_begin, row_end) of D (M x N column-major, output type), on the calling thread:
// 64 x 64 tiles of D, K in slices of 256, a 4 x 4 register block. Threads may compute disjoint
// row ranges of the same D concurrently.
void CpuGemmRows(const GemmOperands& operands, void* d, int64_t row_begin, int64_t row_end);

// Converts and computes all of D (M x N elements) with whole tile rows spread over `pool`.
void CpuGemm(const GemmHostData& data, void* d, ParallelPool* pool);

// Run facts that widen the bound: a split-K algorithm whose partial sums are reduced in the output
// type (cuBLASLt's CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE) rounds each of its `split_k` partials.
struct GemmErrorContext {
  int split_k_reduced_in_output_type = 0;
};

// The largest |D[m,n] - exact| a correct GEMM of this precision may produce, for an element whose
// exact value is `exact` and whose products have absolute sum `abs_sum` = scale x sum_k |a b|:
//   E   = (e_in + gamma_K(u_acc) + gamma_2s(u_out)) x abs_sum
//   tol = E + u_out x (|exact| + E) + floor
// gamma_n(u) = n u / (1 - n u) bounds the error of ANY order of summing n products in precision u
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5), so split-K, tree
// reductions and tensor-core accumulation order are all covered; e_in covers TF32's input
// conversion (two operands, truncation allowed); u_acc is one ulp (not half) so truncating
// accumulators (tensor cores align and truncate) are covered; u_out covers the one rounding to the
// output type. The bound grows linearly with K while a correct result's typical error grows like
// sqrt(K): wrong data (|error| ~ |exact| ~ sqrt(K)/3 here) stays far above it for the K gpubench
// runs (K up to ~2^17 for fp16 and fp32, ~2^16 for tf32). Infinity when K u_acc >= 1/2.
double GemmErrorBound(const GemmPrecisionInfo& info, int64_t k, double exact, double abs_sum,
                      const GemmErrorContext& context = {});

// GemmErrorBound for an engine that verifies every element with one |out - ref| <= atol +
// rtol x |ref|: abs_sum at its largest, K (|a|, |b| <= 1 after scaling), so atol = (e_in +
// gamma_K(u_acc)) x K x (1 + u_out) + floor and rtol = u_out. Looser than the per-element bound
// by about 4x (sum |a b| is about K/4 for uniform inputs), never tighter.
struct GemmTolerance {
  double rtol = 0;
  double atol = 0;
};
GemmTolerance GemmRunTolerance(const GemmPrecisionInfo& info, int64_t k);

struct GemmVerification {
  bool passed = false;
  int64_t checked = 0;             // sampled elements compared with the reference
  int64_t finite_checked = 0;      // elements checked to be finite (all of D)
  int64_t nonfinite = 0;           // NaN or infinite elements of D (the output is poisoned first)
  int64_t mismatches = 0;          // sampled elements outside their bound (NaN counts)
  double max_abs_error = 0;
  double max_bound = 0;            // largest per-element bound among the samples
  double max_error_to_bound = 0;   // worst |error| / bound: < 1 passes; the margin left
  int64_t first_mismatch_row = -1;
  int64_t first_mismatch_column = -1;
  double first_mismatch_expected = 0;
  double first_mismatch_actual = 0;
  double first_mismatch_bound = 0;
};

// Checks that every element of D is finite, then compares sampled elements with the exact
// product (long double) under GemmErrorBound. Samples: every element when M x N <= max_samples;
// otherwise the four corners and max_samples - 4 positions drawn from `seed`.
GemmVerification VerifyGemm(const GemmHostData& data, const void* d, int64_t max_samples,
                            uint64_t seed, ParallelPool* pool,
                            const GemmErrorContext& context = {});

// Sampled elements verified by default: 4096 x K multiply-adds, milliseconds at K = 8192.
inline constexpr int64_t kGemmDefaultSamples = 4096;

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_GEMM_H_
