#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

namespace gpubench {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) with 24 random bits: exactly representable in float.
double UniformValue(uint64_t seed, uint64_t stream, int64_t i) {
  const uint64_t bits = SplitMix64(seed ^ SplitMix64(stream * 0x632be59bd9b4e019ULL +
                                                     static_cast<uint64_t>(i)));
  return static_cast<double>(bits >> 40) / static_cast<double>(1 << 23) - 1.0;
}

void FillBuffer(DType dtype, uint64_t seed, uint64_t stream, int64_t n, std::vector<std::byte>* out,
                ParallelPool* pool) {
  out->resize(static_cast<size_t>(n) * DTypeSize(dtype));
  void* data = out->data();
  pool->For(n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double v = UniformValue(seed, stream, i);
      switch (dtype) {
        case DType::kF32:
          static_cast<float*>(data)[i] = static_cast<float>(v);
          break;
        case DType::kF16:
          static_cast<Half*>(data)[i] = DoubleToHalf(v);
          break;
        case DType::kBF16:
          static_cast<BFloat16*>(data)[i] = DoubleToBFloat16(v);
          break;
      }
    }
  });
}

// The seed's SAXPY formulas evaluated in double with the seed's float constants.
double SaxpyReference(absl::string_view name, double alpha, double x, double y) {
  auto f = [](float c) { return static_cast<double>(c); };
  if (name == "saxpy_sophisticated") {
    const double px4 = x * f(1.0001f) * f(0.9999f) * f(1.000001f) * f(0.999999f);
    const double py4 = y * f(1.000005f) * f(0.999995f) * f(1.0000001f) * f(0.9999999f);
    const double a4 = alpha * f(1.00001f) * f(0.99999f) * f(1.000001f) * f(0.999999f) *
                      f(1.0000001f) * f(0.9999999f) * f(1.00000001f) * f(0.99999999f);
    const double correction = std::pow(px4, 2) * f(0.0000001f) -
                              std::pow(px4, 4) * f(0.00000001f) +
                              std::pow(px4, 6) * f(0.000000001f) -
                              std::pow(px4, 8) * f(0.0000000001f);
    return a4 * px4 + py4 + correction;
  }
  if (name == "saxpy_balanced") {
    const double ex = x * f(1.00001f) * f(0.99999f);
    const double ey = y * f(1.00001f) * f(0.99999f);
    const double sa = alpha * f(1.000001f) * f(0.999999f);
    return sa * ex + ey + ex * ex * f(0.000001f);
  }
  return alpha * x + y;
}

}  // namespace

HostData GenerateHostData(const KernelVariant& variant, int64_t n, uint64_t seed,
                          ParallelPool* pool) {
  HostData data;
  data.dtype = variant.dtype;
  data.n = n;
  FillBuffer(variant.dtype, seed, 0, n, &data.in0, pool);
  if (variant.family == KernelFamily::kElementwiseAdd) {
    FillBuffer(variant.dtype, seed, 1, n, &data.in1, pool);
  }
  if (variant.family == KernelFamily::kSaxpy) {
    FillBuffer(variant.dtype, seed, 2, n, &data.out_initial, pool);
  }
  return data;
}

double ReferenceValue(const KernelVariant& variant, const HostData& data, int64_t i) {
  const double a = LoadAsDouble(data.dtype, data.in0.data(), i);
  switch (variant.family) {
    case KernelFamily::kCopy:
      return a;
    case KernelFamily::kSaxpy:
      return SaxpyReference(variant.name, 2.5, a,
                            LoadAsDouble(data.dtype, data.out_initial.data(), i));
    case KernelFamily::kElementwiseAdd: {
      const double b = LoadAsDouble(data.dtype, data.in1.data(), i);
      // One correctly rounded addition in the storage type, as IEEE 754 specifies.
      switch (data.dtype) {
        case DType::kF32:
          return static_cast<float>(a) + static_cast<float>(b);
        case DType::kF16:
          return HalfToFloat(DoubleToHalf(a + b));
        case DType::kBF16:
          return BFloat16ToFloat(DoubleToBFloat16(a + b));
      }
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

Verification Verify(const KernelVariant& variant, const HostData& data, const void* out,
                    ParallelPool* pool) {
  Verification result;
  result.rtol = variant.rtol;
  result.atol = variant.atol;
  result.checked = data.n;
  std::mutex mu;
  pool->For(data.n, 1 << 16, [&](int64_t begin, int64_t end) {
    Verification local;
    for (int64_t i = begin; i < end; ++i) {
      const double expected = ReferenceValue(variant, data, i);
      const double actual = LoadAsDouble(data.dtype, out, i);
      const double abs_error = std::fabs(actual - expected);
      const double rel_error = abs_error / std::max(std::fabs(expected), 1e-30);
      const bool ok = abs_error <= variant.atol + variant.rtol * std::fabs(expected);  // NaN: false
      if (!ok) {
        if (local.mismatches == 0) {
          local.first_mismatch_index = i;
          local.first_mismatch_expected = expected;
          local.first_mismatch_actual = actual;
        }
        ++local.mismatches;
      }
      if (std::isnan(abs_error)) {
        local.max_abs_error = local.max_rel_error = std::numeric_limits<double>::infinity();
      } else {
        local.max_abs_error = std::max(local.max_abs_error, abs_error);
        local.max_rel_error = std::max(local.max_rel_error, rel_error);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    if (local.mismatches > 0 &&
        (result.first_mismatch_index < 0 || local.first_mismatch_index < result.first_mismatch_index)) {
      result.first_mismatch_index = local.first_mismatch_index;
      result.first_mismatch_expected = local.first_mismatch_expected;
      result.first_mismatch_actual = local.first_mismatch_actual;
    }
    result.mismatches += local.mismatches;
    result.max_abs_error = std::max(result.max_abs_error, local.max_abs_error);
    result.max_rel_error = std::max(result.max_rel_error, local.max_rel_error);
  });
  result.passed = result.mismatches == 0;
  return result;
}

}  // namespace gpubench
