// Device helpers of the 16-byte elementwise-add kernels (tuned, grid-stride and bulk-copy
// variants): one element added, and one 16-byte packet of float, half or bf16 added lane by lane.
#ifndef GPUBENCH_KERNELS_CUDA_PACKED_ADD_CUH_
#define GPUBENCH_KERNELS_CUDA_PACKED_ADD_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace gpubench::cuda {

__device__ __forceinline__ float ScalarAdd(float x, float y) { return x + y; }
__device__ __forceinline__ half ScalarAdd(half x, half y) { return __hadd(x, y); }
__device__ __forceinline__ __nv_bfloat16 ScalarAdd(__nv_bfloat16 x, __nv_bfloat16 y) {
  return __hadd(x, y);
}

// Adds two 16-byte packets of T lane by lane.
template <typename T>
__device__ __forceinline__ uint4 AddPacked(uint4 x, uint4 y) {
  uint4 out;
  if constexpr (sizeof(T) == 4) {
    const float4 fx = *reinterpret_cast<float4*>(&x), fy = *reinterpret_cast<float4*>(&y);
    *reinterpret_cast<float4*>(&out) = make_float4(fx.x + fy.x, fx.y + fy.y, fx.z + fy.z, fx.w + fy.w);
  } else {
    using T2 = std::conditional_t<std::is_same_v<T, half>, half2, __nv_bfloat162>;
    const T2* px = reinterpret_cast<const T2*>(&x);
    const T2* py = reinterpret_cast<const T2*>(&y);
    T2* po = reinterpret_cast<T2*>(&out);
#pragma unroll
    for (int k = 0; k < 4; ++k) po[k] = __hadd2(px[k], py[k]);
  }
  return out;
}

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_PACKED_ADD_CUH_
