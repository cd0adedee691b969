// Host-side storage types and exact conversions for fp16 and bf16, independent of CUDA headers,
// so the CPU backend and the host reference compute what the GPU computes, bit for bit.
#ifndef GPUBENCH_KERNELS_NUMERIC_H_
#define GPUBENCH_KERNELS_NUMERIC_H_

#include <cstdint>
#include <cstring>

namespace gpubench {

// Element types of a run's buffers. kU32 / kU64: unsigned integers (indices, e.g. a pointer
// chase's next-element table); LoadAsDouble reads them exactly up to 2^53.
// kF8E4M3: OCP fp8 E4M3 (Fp8E4M3 below), the GEMM family's fp8 inputs.
enum class DType { kF32, kF16, kBF16, kF64, kU32, kU64, kF8E4M3 };

// Size of one element in bytes.
constexpr int DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF8E4M3:
      return 1;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF64:
    case DType::kU64:
      return 8;
    case DType::kF32:
    case DType::kU32:
      return 4;
  }
  return 0;
}
// "f32", "f16", "bf16", "f64", "u32", "u64", "f8e4m3".
const char* DTypeName(DType dtype);

// Raw IEEE binary16 / bfloat16 bits.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Rounds a double to binary16 with round-to-nearest-even, with overflow to infinity, gradual
// underflow to subnormals and NaN preserved. Pure; thread-safe.
Half DoubleToHalf(double value);
// Exact widening conversion.
float HalfToFloat(Half h);

// Rounds a double to bfloat16 with round-to-nearest-even. Pure; thread-safe.
BFloat16 DoubleToBFloat16(double value);
// Exact widening conversion.
inline float BFloat16ToFloat(BFloat16 b) {
  const uint32_t bits = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The correctly rounded sums that the GPU's __hadd computes: the double sum of two narrow values
// is exact (their significands span fewer than 53 bits except for extreme exponent gaps in bf16,
// where the double is still far inside one bf16 rounding interval), then one rounding.
inline Half AddHalf(Half a, Half b) {
  return DoubleToHalf(static_cast<double>(HalfToFloat(a)) + HalfToFloat(b));
}
inline BFloat16 AddBFloat16(BFloat16 a, BFloat16 b) {
  return DoubleToBFloat16(static_cast<double>(BFloat16ToFloat(a)) + BFloat16ToFloat(b));
}

// OCP 8-bit floating point E4M3 (the "FN" variant CUDA's __nv_fp8_e4m3 stores): 1 sign, 4 exponent
// (bias 7) and 3 mantissa bits, subnormals down to 2^-9, no infinities, S.1111.111 is NaN, largest
// finite 448.
struct Fp8E4M3 {
  uint8_t bits;
};

// Rounds a double to E4M3 with round-to-nearest-even. Magnitudes that round beyond 448 (and
// infinities) give +-448 when `saturate` (CUDA's __NV_SATFINITE), NaN otherwise. Pure; thread-safe.
Fp8E4M3 DoubleToFp8E4M3(double value, bool saturate = true);
// Exact widening conversion.
float Fp8E4M3ToFloat(Fp8E4M3 v);

// Rounds a float to TF32 precision (fp32's exponent range, 10 explicit mantissa bits) with
// round-to-nearest-even, kept in a float: what a tensor core multiplies when a GEMM runs fp32
// inputs in TF32 mode. Infinities and NaN pass through. Pure; thread-safe.
float RoundToTf32(float value);

// Reads element `i` of a buffer of `dtype` as a double. Thread-safe.
double LoadAsDouble(DType dtype, const void* data, int64_t i);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_NUMERIC_H_
