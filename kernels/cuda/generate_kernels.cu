// GenerateUniform on the device (kernels/cuda/generate.h): one element per thread, grid-stride,
// each a pure function of (seed, stream, index), so the result is independent of the launch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "kernels/cuda/generate.h"
#include "kernels/uniform.h"

namespace gpubench::cuda {
namespace {

// The value in [-1, 1) as a float: exact (kernels/uniform.h), so every narrower type below is a
// single round-to-nearest-even of it, as the host's DoubleToHalf / DoubleToBFloat16 /
// DoubleToFp8E4M3 round the same (exact) double.
__host__ __device__ inline float UniformFloat(uint64_t seed, uint64_t stream, int64_t i) {
  return static_cast<float>(UniformBits24(seed, stream, i)) * 0x1p-23f - 1.0f;
}

template <typename T>
__host__ __device__ inline T Element(uint64_t seed, uint64_t stream, int64_t i);

template <>
__host__ __device__ inline float Element<float>(uint64_t seed, uint64_t stream, int64_t i) {
  return UniformFloat(seed, stream, i);
}
template <>
__host__ __device__ inline double Element<double>(uint64_t seed, uint64_t stream, int64_t i) {
  return static_cast<double>(UniformFloat(seed, stream, i));
}
template <>
__host__ __device__ inline __half Element<__half>(uint64_t seed, uint64_t stream, int64_t i) {
  return __float2half_rn(UniformFloat(seed, stream, i));
}
template <>
__host__ __device__ inline __nv_bfloat16 Element<__nv_bfloat16>(uint64_t seed, uint64_t stream,
                                                                int64_t i) {
  return __float2bfloat16_rn(UniformFloat(seed, stream, i));
}
template <>
__host__ __device__ inline __nv_fp8_storage_t Element<__nv_fp8_storage_t>(uint64_t seed,
                                                                          uint64_t stream,
                                                                          int64_t i) {
  return __nv_cvt_float_to_fp8(UniformFloat(seed, stream, i), __NV_SATFINITE, __NV_E4M3);
}
// Integers: the 24 random bits themselves (GenerateUniform's (v + 1) x 2^23).
template <>
__host__ __device__ inline uint32_t Element<uint32_t>(uint64_t seed, uint64_t stream, int64_t i) {
  return UniformBits24(seed, stream, i);
}
template <>
__host__ __device__ inline uint64_t Element<uint64_t>(uint64_t seed, uint64_t stream, int64_t i) {
  return UniformBits24(seed, stream, i);
}

template <typename T>
__global__ void GenerateKernel(T* __restrict__ out, int64_t n, uint64_t seed, uint64_t stream) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = Element<T>(seed, stream, i);
  }
}

template <typename T>
int Launch(void* out, int64_t n, uint64_t seed, uint64_t stream, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  constexpr int kBlock = 256;
  // Enough blocks to fill any current GPU several times over; the loop covers the rest.
  const int64_t blocks = std::min<int64_t>((n + kBlock - 1) / kBlock, 65536);
  GenerateKernel<T>
      <<<static_cast<unsigned>(blocks), kBlock, 0, s>>>(static_cast<T*>(out), n, seed, stream);
  return cudaGetLastError();
}

template <typename T>
uint64_t BitsOf(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

}  // namespace

int LaunchGenerateUniform(DType dtype, uint64_t seed, uint64_t seed_stream, int64_t elements,
                          void* out, void* stream) {
  auto* s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::kF32:
      return Launch<float>(out, elements, seed, seed_stream, s);
    case DType::kF16:
      return Launch<__half>(out, elements, seed, seed_stream, s);
    case DType::kBF16:
      return Launch<__nv_bfloat16>(out, elements, seed, seed_stream, s);
    case DType::kF64:
      return Launch<double>(out, elements, seed, seed_stream, s);
    case DType::kU32:
      return Launch<uint32_t>(out, elements, seed, seed_stream, s);
    case DType::kU64:
      return Launch<uint64_t>(out, elements, seed, seed_stream, s);
    case DType::kF8E4M3:
      return Launch<__nv_fp8_storage_t>(out, elements, seed, seed_stream, s);
  }
  return cudaErrorInvalidValue;
}

uint64_t GeneratedElementBitsOnHost(DType dtype, uint64_t seed, uint64_t seed_stream, int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return BitsOf(Element<float>(seed, seed_stream, i));
    case DType::kF16:
      return BitsOf(Element<__half>(seed, seed_stream, i));
    case DType::kBF16:
      return BitsOf(Element<__nv_bfloat16>(seed, seed_stream, i));
    case DType::kF64:
      return BitsOf(Element<double>(seed, seed_stream, i));
    case DType::kU32:
      return BitsOf(Element<uint32_t>(seed, seed_stream, i));
    case DType::kU64:
      return BitsOf(Element<uint64_t>(seed, seed_stream, i));
    case DType::kF8E4M3:
      return BitsOf(Element<__nv_fp8_storage_t>(seed, seed_stream, i));
  }
  return 0;
}

}  // namespace gpubench::cuda
