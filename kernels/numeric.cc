#include "kernels/numeric.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpubench {
namespace {

// Rounds `value` to a binary format with `mantissa_bits` explicit significand bits and exponent
// bias `bias` (max exponent = bias), returning the encoded bits. Round to nearest, ties to even.
uint16_t RoundToNarrow(double value, int mantissa_bits, int exponent_bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const uint16_t sign = std::signbit(value) ? static_cast<uint16_t>(1u << 15) : 0;
  const uint16_t exp_all_ones = static_cast<uint16_t>(((1u << exponent_bits) - 1) << mantissa_bits);
  if (std::isnan(value)) {
    return static_cast<uint16_t>(sign | exp_all_ones | (1u << (mantissa_bits - 1)));
  }
  double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return static_cast<uint16_t>(sign | exp_all_ones);
  if (magnitude == 0) return sign;
  int exponent;  // magnitude = fraction * 2^exponent, fraction in [0.5, 1)
  std::frexp(magnitude, &exponent);
  int unbiased = exponent - 1;  // magnitude in [2^unbiased, 2^(unbiased+1))
  const int min_normal = 1 - bias;
  // Quantum (value of one unit in the last place) at this magnitude; subnormals share the quantum
  // of the smallest normal binade.
  const int quantum_exp = std::max(unbiased, min_normal) - mantissa_bits;
  double scaled = std::ldexp(magnitude, -quantum_exp);  // exact: a power-of-two scaling
  double rounded = std::nearbyint(scaled);              // default FE_TONEAREST: ties to even
  // Encode: rounded * 2^quantum_exp.
  uint64_t significand = static_cast<uint64_t>(rounded);
  int biased;
  if (unbiased < min_normal) {
    // Subnormal range: significand < 2^mantissa_bits unless it rounded up to the smallest normal.
    if (significand >= (1ULL << mantissa_bits)) {
      biased = 1;
      significand -= (1ULL << mantissa_bits);
    } else {
      biased = 0;
    }
  } else {
    biased = unbiased + bias;
    if (significand >= (2ULL << mantissa_bits)) {  // rounding carried into the next binade
      significand >>= 1;
      ++biased;
    }
    significand -= (1ULL << mantissa_bits);
  }
  if (biased >= (1 << exponent_bits) - 1) return static_cast<uint16_t>(sign | exp_all_ones);
  return static_cast<uint16_t>(sign | (biased << mantissa_bits) | significand);
}

}  // namespace

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF64:
      return "f64";
    case DType::kU32:
      return "u32";
    case DType::kU64:
      return "u64";
    case DType::kF8E4M3:
      return "f8e4m3";
  }
  return "unknown";
}

Half DoubleToHalf(double value) { return Half{RoundToNarrow(value, 10, 5)}; }

BFloat16 DoubleToBFloat16(double value) { return BFloat16{RoundToNarrow(value, 7, 8)}; }

float HalfToFloat(Half h) {
  const uint32_t sign = (h.bits >> 15) & 1u;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const uint32_t mantissa = h.bits & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::quiet_NaN();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

Fp8E4M3 DoubleToFp8E4M3(double value, bool saturate) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const uint8_t overflow = saturate ? 0x7e : 0x7f;  // 448 or NaN
  if (std::isnan(value)) return Fp8E4M3{static_cast<uint8_t>(sign | 0x7f)};
  const double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return Fp8E4M3{static_cast<uint8_t>(sign | overflow)};
  if (magnitude == 0) return Fp8E4M3{sign};
  int exponent;  // magnitude = fraction * 2^exponent, fraction in [0.5, 1)
  std::frexp(magnitude, &exponent);
  // Quantum at this magnitude: 2^(e - 3) in the binade [2^e, 2^(e+1)), 2^-9 for subnormals.
  const int quantum_exp = std::max(exponent - 1, -6) - 3;
  const double rounded =
      std::ldexp(std::nearbyint(std::ldexp(magnitude, -quantum_exp)), quantum_exp);  // ties to even
  if (rounded > 448.0) return Fp8E4M3{static_cast<uint8_t>(sign | overflow)};
  if (rounded < 0x1p-6) {  // subnormal (or zero): rounded = m * 2^-9, m in [0, 7]
    return Fp8E4M3{static_cast<uint8_t>(sign | static_cast<int>(std::ldexp(rounded, 9)))};
  }
  std::frexp(rounded, &exponent);  // rounding may have carried into the next binade
  const int unbiased = exponent - 1;
  const int mantissa = static_cast<int>(std::ldexp(rounded, 3 - unbiased)) - 8;
  return Fp8E4M3{static_cast<uint8_t>(sign | ((unbiased + 7) << 3) | mantissa)};
}

float Fp8E4M3ToFloat(Fp8E4M3 v) {
  const int exponent = (v.bits >> 3) & 0xf;
  const int mantissa = v.bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return (v.bits & 0x80) ? -magnitude : magnitude;
}

float RoundToTf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u) return value;  // infinity or NaN
  // Round the 13 dropped bits to nearest, ties to the even kept bit; a carry may reach infinity.
  bits += 0xfffu + ((bits >> 13) & 1u);
  bits &= ~0x1fffu;
  float rounded;
  std::memcpy(&rounded, &bits, sizeof(rounded));
  return rounded;
}

double LoadAsDouble(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(data)[i];
    case DType::kF16:
      return HalfToFloat(static_cast<const Half*>(data)[i]);
    case DType::kBF16:
      return BFloat16ToFloat(static_cast<const BFloat16*>(data)[i]);
    case DType::kF64:
      return static_cast<const double*>(data)[i];
    case DType::kU32:
      return static_cast<double>(static_cast<const uint32_t*>(data)[i]);
    case DType::kU64:
      return static_cast<double>(static_cast<const uint64_t*>(data)[i]);
    case DType::kF8E4M3:
      return Fp8E4M3ToFloat(static_cast<const Fp8E4M3*>(data)[i]);
  }
  return 0;
}

}  // namespace gpubench
