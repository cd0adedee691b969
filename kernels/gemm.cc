#include "kernels/gemm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/family.h"
#include "kernels/numeric.h"

namespace gpubench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Error-model constants, per GemmErrorBound. One ulp relative spacing of a p-bit significand is
// 2^(1-p): fp16 2^-10, bf16 2^-7, fp32 2^-23, fp64 2^-52. TF32 keeps 10 explicit mantissa bits:
// converting each operand errs by < 2^-10 (truncation) and the product by < 2 x 2^-10 + 2^-20.
constexpr GemmPrecisionInfo kPrecisions[] = {
    {.precision = GemmPrecision::kF16, .name = "f16", .input_type = "f16", .output_type = "f16",
     .compute = "f16 tensor cores, f32 accumulate", .input_dtype = DType::kF16, .output_dtype = DType::kF16,
     .input_bytes = 2, .output_bytes = 2,
     .min_compute_capability = 70, .input_conversion_error = 0, .accumulation_unit = 0x1p-23,
     .output_unit = 0x1p-10, .output_absolute_floor = 0x1p-24},
    {.precision = GemmPrecision::kBF16, .name = "bf16", .input_type = "bf16",
     .output_type = "bf16", .compute = "bf16 tensor cores, f32 accumulate", .input_dtype = DType::kBF16, .output_dtype = DType::kBF16,
     .input_bytes = 2,
     .output_bytes = 2, .min_compute_capability = 80, .input_conversion_error = 0,
     .accumulation_unit = 0x1p-23, .output_unit = 0x1p-7, .output_absolute_floor = 0x1p-133},
    {.precision = GemmPrecision::kTF32, .name = "tf32", .input_type = "f32", .output_type = "f32",
     .compute = "tf32 tensor cores (f32 inputs rounded to 10 mantissa bits), f32 accumulate",
     .input_dtype = DType::kF32, .output_dtype = DType::kF32,
     .input_bytes = 4, .output_bytes = 4, .min_compute_capability = 80,
     .input_conversion_error = 2 * 0x1p-10 + 0x1p-20, .accumulation_unit = 0x1p-23,
     .output_unit = 0, .output_absolute_floor = 0x1p-149},
    {.precision = GemmPrecision::kF32, .name = "f32", .input_type = "f32", .output_type = "f32",
     .compute = "f32 FMA on CUDA cores (no tensor path)", .input_dtype = DType::kF32, .output_dtype = DType::kF32,
     .input_bytes = 4, .output_bytes = 4,
     .min_compute_capability = 0, .input_conversion_error = 0, .accumulation_unit = 0x1p-23,
     .output_unit = 0, .output_absolute_floor = 0x1p-149},
    {.precision = GemmPrecision::kF64, .name = "f64", .input_type = "f64", .output_type = "f64",
     .compute = "f64 (tensor cores where the GPU has them), f64 accumulate", .input_dtype = DType::kF64, .output_dtype = DType::kF64,
     .input_bytes = 8,
     .output_bytes = 8, .min_compute_capability = 0, .input_conversion_error = 0,
     .accumulation_unit = 0x1p-52, .output_unit = 0, .output_absolute_floor = 0x1p-1074},
    // cuBLASLt's default for FP8 (CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0) promotes the tensor
    // core's partial sums into f32 accumulators every k-block, but inside a block Hopper's FP8
    // tensor cores keep about 14 bits of the sum (DeepSeek-V3 technical report, arXiv:2412.19437,
    // section 3.3.2, which promotes every 128 products). H200, 2026-11-30: 16^3 gemm_f8e4m3 put one
    // element 7.6e-5 from the exact product (-0.0028076 vs -0.0027313) where the f32-only bound
    // allowed 3e-5 (bench/results/2026-11-30-h200x2.md). So: 2^-14 over up to 128 products;
    // the bound is then loose at large K (8192: about 60% of a typical |value|).
    {.precision = GemmPrecision::kF8E4M3, .name = "f8e4m3", .input_type = "e4m3",
     .output_type = "bf16", .compute = "fp8 (e4m3) tensor cores, per-tensor scales, f32 accumulate",
     .input_dtype = DType::kF8E4M3, .output_dtype = DType::kBF16,
     .input_bytes = 1, .output_bytes = 2, .min_compute_capability = 89,
     .input_conversion_error = 0, .accumulation_unit = 0x1p-23, .output_unit = 0x1p-7,
     .output_absolute_floor = 0x1p-133, .limited_accumulation_unit = 0x1p-14,
     .limited_accumulation_terms = 128},
};

double LoadInput(GemmPrecision p, const std::byte* base, int64_t i) {
  return LoadAsDouble(GemmInfo(p).input_dtype, base, i);
}

// Rounds an accumulated value once to the output type and stores it.
template <typename Acc>
void StoreOutput(GemmPrecision p, Acc v, void* d, int64_t i) {
  switch (p) {
    case GemmPrecision::kF16:
      static_cast<Half*>(d)[i] = DoubleToHalf(static_cast<double>(v));
      return;
    case GemmPrecision::kBF16:
    case GemmPrecision::kF8E4M3:
      static_cast<BFloat16*>(d)[i] = DoubleToBFloat16(static_cast<double>(v));
      return;
    case GemmPrecision::kTF32:
    case GemmPrecision::kF32:
      static_cast<float*>(d)[i] = static_cast<float>(v);
      return;
    case GemmPrecision::kF64:
      static_cast<double*>(d)[i] = static_cast<double>(v);
      return;
  }
}

// Blocking of the CPU GEMM: a tile of D is kTileM x kTileN (its accumulators stay in L1/L2), the
// K loop is cut into kTileK slices so the A and B panels of a slice (64 + 64 rows of 256 values)
// stay cache-resident while the 4 x 4 register blocks sweep them.
constexpr int64_t kTileM = 64;
constexpr int64_t kTileN = 64;
constexpr int64_t kTileK = 256;
constexpr int64_t kRegister = 4;

// One tile of D: rows [m0, m1), columns [n0, n1). `a` and `b` are the inputs converted to Acc.
template <typename Acc>
void GemmTile(const Acc* a, const Acc* b, const GemmShape& s, int64_t m0, int64_t m1, int64_t n0,
              int64_t n1, Acc scale, GemmPrecision p, void* d) {
  Acc acc[kTileM * kTileN] = {};
  const int64_t K = s.k;
  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
    const int64_t k1 = std::min(K, k0 + kTileK);
    for (int64_t i = m0; i < m1; i += kRegister) {
      for (int64_t j = n0; j < n1; j += kRegister) {
        Acc* t = &acc[(i - m0) * kTileN + (j - n0)];
        if (i + kRegister <= m1 && j + kRegister <= n1) {
          // 4 x 4 register block: 8 loads feed 16 multiply-adds per k.
          Acc c[kRegister][kRegister];
          for (int r = 0; r < kRegister; ++r) {
            for (int q = 0; q < kRegister; ++q) c[r][q] = t[r * kTileN + q];
          }
          const Acc* ar[kRegister] = {a + i * K, a + (i + 1) * K, a + (i + 2) * K, a + (i + 3) * K};
          const Acc* bq[kRegister] = {b + j * K, b + (j + 1) * K, b + (j + 2) * K, b + (j + 3) * K};
          for (int64_t k = k0; k < k1; ++k) {
            const Acc a0 = ar[0][k], a1 = ar[1][k], a2 = ar[2][k], a3 = ar[3][k];
            const Acc b0 = bq[0][k], b1 = bq[1][k], b2 = bq[2][k], b3 = bq[3][k];
            c[0][0] += a0 * b0, c[0][1] += a0 * b1, c[0][2] += a0 * b2, c[0][3] += a0 * b3;
            c[1][0] += a1 * b0, c[1][1] += a1 * b1, c[1][2] += a1 * b2, c[1][3] += a1 * b3;
            c[2][0] += a2 * b0, c[2][1] += a2 * b1, c[2][2] += a2 * b2, c[2][3] += a2 * b3;
            c[3][0] += a3 * b0, c[3][1] += a3 * b1, c[3][2] += a3 * b2, c[3][3] += a3 * b3;
          }
          for (int r = 0; r < kRegister; ++r) {
            for (int q = 0; q < kRegister; ++q) t[r * kTileN + q] = c[r][q];
          }
        } else {  // ragged edge of the tile
          for (int64_t r = i; r < std::min(i + kRegister, m1); ++r) {
            for (int64_t q = j; q < std::min(j + kRegister, n1); ++q) {
              Acc sum = acc[(r - m0) * kTileN + (q - n0)];
              for (int64_t k = k0; k < k1; ++k) sum += a[r * K + k] * b[q * K + k];
              acc[(r - m0) * kTileN + (q - n0)] = sum;
            }
          }
        }
      }
    }
  }
  for (int64_t i = m0; i < m1; ++i) {
    for (int64_t j = n0; j < n1; ++j) {
      StoreOutput(p, scale * acc[(i - m0) * kTileN + (j - n0)], d, i + j * s.m);
    }
  }
}

template <typename Acc>
void GemmRowsAs(const std::vector<Acc>& a, const std::vector<Acc>& b, const GemmShape& s,
                Acc scale, GemmPrecision p, void* d, int64_t row_begin, int64_t row_end) {
  for (int64_t m0 = row_begin; m0 < row_end; m0 += kTileM) {
    for (int64_t n0 = 0; n0 < s.n; n0 += kTileN) {
      GemmTile<Acc>(a.data(), b.data(), s, m0, std::min(row_end, m0 + kTileM), n0,
                    std::min(s.n, n0 + kTileN), scale, p, d);
    }
  }
}

}  // namespace

std::span<const GemmPrecisionInfo> AllGemmPrecisions() { return kPrecisions; }

const GemmPrecisionInfo* FindGemmPrecision(absl::string_view name) {
  for (const GemmPrecisionInfo& info : kPrecisions) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const GemmPrecisionInfo& GemmInfo(GemmPrecision precision) {
  for (const GemmPrecisionInfo& info : kPrecisions) {
    if (info.precision == precision) return info;
  }
  return kPrecisions[0];  // unreachable: every enumerator has a row
}

int64_t GemmBytes(const GemmPrecisionInfo& info, const GemmShape& s) {
  return (s.m * s.k + s.n * s.k) * info.input_bytes + s.m * s.n * info.output_bytes;
}

std::string GemmShapeString(const GemmShape& s) { return absl::StrCat(s.m, "x", s.n, "x", s.k); }

void FillGemmInput(GemmPrecision precision, uint64_t seed, uint64_t stream, std::span<std::byte> out,
                   ParallelPool* pool) {
  GenerateContext context{.seed = seed, .stream = stream, .pool = pool};
  if (precision != GemmPrecision::kF8E4M3) {
    context.dtype = GemmInfo(precision).input_dtype;
    GenerateUniform(context, out);
    return;
  }
  // fp8: the same uniform values (as f32, exact) times 1 / kGemmFp8Scale, then rounded to E4M3.
  std::vector<float> uniform(out.size());
  context.dtype = DType::kF32;
  GenerateUniform(context, std::as_writable_bytes(std::span<float>(uniform)));
  auto* fp8 = reinterpret_cast<Fp8E4M3*>(out.data());
  pool->For(static_cast<int64_t>(uniform.size()), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fp8[i] = DoubleToFp8E4M3(uniform[i] / kGemmFp8Scale);
  });
}

GemmHostData GenerateGemmData(GemmPrecision precision, const GemmShape& shape, uint64_t seed,
                              ParallelPool* pool) {
  GemmHostData data;
  data.precision = precision;
  data.shape = shape;
  const int bytes = GemmInfo(precision).input_bytes;
  if (precision == GemmPrecision::kF8E4M3) data.scale_a = data.scale_b = kGemmFp8Scale;
  data.a.resize(static_cast<size_t>(shape.m * shape.k * bytes));
  data.b.resize(static_cast<size_t>(shape.n * shape.k * bytes));
  FillGemmInput(precision, seed, 0, data.a, pool);
  FillGemmInput(precision, seed, 1, data.b, pool);
  return data;
}

double GemmInputScale(GemmPrecision precision) {
  return precision == GemmPrecision::kF8E4M3
             ? static_cast<double>(kGemmFp8Scale) * kGemmFp8Scale
             : 1.0;
}

GemmExactElement ExactGemmElement(GemmPrecision precision, const GemmShape& shape, const void* a,
                                  const void* b, double scale, int64_t row, int64_t column) {
  const auto* pa = static_cast<const std::byte*>(a);
  const auto* pb = static_cast<const std::byte*>(b);
  long double sum = 0, abs_sum = 0;
  for (int64_t k = 0; k < shape.k; ++k) {
    const long double product =
        static_cast<long double>(LoadInput(precision, pa, row * shape.k + k)) *
        static_cast<long double>(LoadInput(precision, pb, column * shape.k + k));
    sum += product;
    abs_sum += std::fabs(product);
  }
  return {static_cast<double>(sum * scale), static_cast<double>(abs_sum * scale)};
}

double GemmInputValue(const GemmHostData& data, int which, int64_t i) {
  return LoadInput(data.precision, (which == 0 ? data.a : data.b).data(), i);
}

double GemmOutputValue(GemmPrecision precision, const void* d, int64_t i) {
  return LoadAsDouble(GemmInfo(precision).output_dtype, d, i);
}

GemmOperands ConvertGemmOperands(const GemmHostData& data, ParallelPool* pool) {
  GemmOperands o;
  o.precision = data.precision;
  o.shape = data.shape;
  const bool f64 = data.precision == GemmPrecision::kF64;
  const bool tf32 = data.precision == GemmPrecision::kTF32;
  auto convert = [&](int which, int64_t count, auto* out) {
    out->resize(static_cast<size_t>(count));
    pool->For(count, 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const double v = GemmInputValue(data, which, i);
        (*out)[i] = tf32 ? RoundToTf32(static_cast<float>(v)) : v;
      }
    });
  };
  const GemmShape& s = data.shape;
  if (f64) {
    convert(0, s.m * s.k, &o.a64);
    convert(1, s.n * s.k, &o.b64);
  } else {
    convert(0, s.m * s.k, &o.a32);
    convert(1, s.n * s.k, &o.b32);
  }
  o.scale = static_cast<double>(data.scale_a) * data.scale_b;
  return o;
}

void CpuGemmRows(const GemmOperands& o, void* d, int64_t row_begin, int64_t row_end) {
  if (o.precision == GemmPrecision::kF64) {
    GemmRowsAs<double>(o.a64, o.b64, o.shape, o.scale, o.precision, d, row_begin, row_end);
  } else {
    GemmRowsAs<float>(o.a32, o.b32, o.shape, static_cast<float>(o.scale), o.precision, d,
                      row_begin, row_end);
  }
}

void CpuGemm(const GemmHostData& data, void* d, ParallelPool* pool) {
  const GemmOperands operands = ConvertGemmOperands(data, pool);
  // Whole tile rows per task, so each tile is computed by one thread in one order: the result is
  // the same for any thread count.
  const int64_t tile_rows = (data.shape.m + kTileM - 1) / kTileM;
  pool->For(tile_rows, 1, [&](int64_t begin, int64_t end) {
    CpuGemmRows(operands, d, begin * kTileM, std::min(data.shape.m, end * kTileM));
  });
}

double GemmErrorBound(const GemmPrecisionInfo& info, int64_t k, double exact, double abs_sum,
                      const GemmErrorContext& context) {
  auto gamma = [](double n, double u) { return n * u < 0.5 ? n * u / (1 - n * u) : kInf; };
  const double relative =
      info.input_conversion_error + gamma(static_cast<double>(k), info.accumulation_unit) +
      gamma(static_cast<double>(std::min(k, info.limited_accumulation_terms)),
            info.limited_accumulation_unit) +
      gamma(2.0 * context.split_k_reduced_in_output_type, info.output_unit);
  if (std::isinf(relative)) return kInf;
  const double e = relative * abs_sum;
  return e + info.output_unit * (std::fabs(exact) + e) + info.output_absolute_floor;
}

GemmTolerance GemmRunTolerance(const GemmPrecisionInfo& info, int64_t k) {
  // GemmErrorBound at exact = 0 and abs_sum = K is E (1 + u_out) + floor: the atol.
  return {.rtol = info.output_unit, .atol = GemmErrorBound(info, k, 0, static_cast<double>(k))};
}

GemmVerification VerifyGemm(const GemmHostData& data, const void* d, int64_t max_samples,
                            uint64_t seed, ParallelPool* pool, const GemmErrorContext& context) {
  const GemmShape& s = data.shape;
  const GemmPrecisionInfo& info = GemmInfo(data.precision);
  GemmVerification result;
  const int64_t elements = s.m * s.n;

  // 1. Every element finite: the output is poisoned (NaN) before the launch, so an element the
  // GEMM never wrote shows here even where no sample lands.
  std::mutex mu;
  pool->For(elements, 1 << 18, [&](int64_t begin, int64_t end) {
    int64_t bad = 0;
    for (int64_t i = begin; i < end; ++i) bad += !std::isfinite(GemmOutputValue(data.precision, d, i));
    std::lock_guard<std::mutex> lock(mu);
    result.nonfinite += bad;
  });
  result.finite_checked = elements;

  // 2. Sampled positions: all of D when small, else the corners and seeded random positions.
  std::vector<int64_t> positions;
  if (elements <= max_samples) {
    positions.resize(static_cast<size_t>(elements));
    for (int64_t i = 0; i < elements; ++i) positions[i] = i;
  } else {
    positions = {0, s.m - 1, (s.n - 1) * s.m, s.m * s.n - 1};
    std::mt19937_64 rng(seed);
    for (int64_t i = 4; i < max_samples; ++i) {
      positions.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(elements)));
    }
  }
  const double scale = static_cast<double>(data.scale_a) * data.scale_b;
  pool->For(static_cast<int64_t>(positions.size()), 16, [&](int64_t begin, int64_t end) {
    GemmVerification local;
    for (int64_t p = begin; p < end; ++p) {
      const int64_t row = positions[p] % s.m, column = positions[p] / s.m;
      const GemmExactElement e =
          ExactGemmElement(data.precision, s, data.a.data(), data.b.data(), scale, row, column);
      const double exact = e.value;
      const double bound = GemmErrorBound(info, s.k, exact, e.abs_sum, context);
      const double actual = GemmOutputValue(data.precision, d, positions[p]);
      const double error = std::fabs(actual - exact);
      const bool ok = error <= bound;  // NaN: false
      if (!ok && local.mismatches++ == 0) {
        local.first_mismatch_row = row;
        local.first_mismatch_column = column;
        local.first_mismatch_expected = exact;
        local.first_mismatch_actual = actual;
        local.first_mismatch_bound = bound;
      }
      local.max_abs_error = std::max(local.max_abs_error, std::isnan(error) ? kInf : error);
      local.max_bound = std::max(local.max_bound, bound);
      local.max_error_to_bound =
          std::max(local.max_error_to_bound, std::isnan(error) ? kInf : error / bound);
    }
    std::lock_guard<std::mutex> lock(mu);
    if (local.mismatches > 0 && result.mismatches == 0) {
      result.first_mismatch_row = local.first_mismatch_row;
      result.first_mismatch_column = local.first_mismatch_column;
      result.first_mismatch_expected = local.first_mismatch_expected;
      result.first_mismatch_actual = local.first_mismatch_actual;
      result.first_mismatch_bound = local.first_mismatch_bound;
    }
    result.mismatches += local.mismatches;
    result.max_abs_error = std::max(result.max_abs_error, local.max_abs_error);
    result.max_bound = std::max(result.max_bound, local.max_bound);
    result.max_error_to_bound = std::max(result.max_error_to_bound, local.max_error_to_bound);
  });
  result.checked = static_cast<int64_t>(positions.size());
  result.passed = result.nonfinite == 0 && result.mismatches == 0;
  return result;
}

}  // namespace gpubench
