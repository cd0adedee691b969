// The six elementwise-add kernels of seed 000_90ef8f88548fa484, with the seed's memory-access
// pattern but correct for every N: 64-bit indices, no load past N, scalar tails. Device buffers
// come from cudaMalloc (256-byte aligned) and every vector starts at a multiple of its width, so
// the wide accesses are always aligned. Like the seed, no __restrict__: this is the baseline.
#include <cuda_fp16.h>

#include "kernels/cuda/launch_helpers.cuh"
#include "kernels/cuda/launchers.h"

namespace gpubench::cuda {
namespace {

__global__ void AddF32Kernel(const float* a, const float* b, float* c, int64_t n) {
  const int64_t i = GlobalThreadIndex();
  if (i < n) c[i] = a[i] + b[i];
}

// One LDG.128 per operand: 16 bytes per thread per instruction.
__global__ void AddF32x4Kernel(const float* a, const float* b, float* c, int64_t n) {
  const int64_t idx = 4 * GlobalThreadIndex();
  if (idx + 3 < n) {
    const float4 ra = *reinterpret_cast<const float4*>(a + idx);
    const float4 rb = *reinterpret_cast<const float4*>(b + idx);
    float4 rc;
    rc.x = ra.x + rb.x;
    rc.y = ra.y + rb.y;
    rc.z = ra.z + rb.z;
    rc.w = ra.w + rb.w;
    *reinterpret_cast<float4*>(c + idx) = rc;
  } else if (idx < n) {
    for (int64_t i = idx; i < n; ++i) c[i] = a[i] + b[i];
  }
}

__global__ void AddF16Kernel(const half* a, const half* b, half* c, int64_t n) {
  const int64_t i = GlobalThreadIndex();
  if (i < n) c[i] = __hadd(a[i], b[i]);
}

// One 32-bit half2 per thread, added with one HADD2.
__global__ void AddF16x2Kernel(const half* a, const half* b, half* c, int64_t n) {
  const int64_t idx = 2 * GlobalThreadIndex();
  if (idx + 1 < n) {
    *reinterpret_cast<half2*>(c + idx) = __hadd2(*reinterpret_cast<const half2*>(a + idx),
                                                 *reinterpret_cast<const half2*>(b + idx));
  } else if (idx < n) {
    c[idx] = __hadd(a[idx], b[idx]);
  }
}

// Eight halves per thread as four independent half2 loads (ILP), as the seed's v5.
__global__ void AddF16x8Kernel(const half* a, const half* b, half* c, int64_t n) {
  const int64_t idx = 8 * GlobalThreadIndex();
  if (idx + 7 < n) {
    const half2 ra0 = *reinterpret_cast<const half2*>(a + idx + 0);
    const half2 ra1 = *reinterpret_cast<const half2*>(a + idx + 2);
    const half2 ra2 = *reinterpret_cast<const half2*>(a + idx + 4);
    const half2 ra3 = *reinterpret_cast<const half2*>(a + idx + 6);
    const half2 rb0 = *reinterpret_cast<const half2*>(b + idx + 0);
    const half2 rb1 = *reinterpret_cast<const half2*>(b + idx + 2);
    const half2 rb2 = *reinterpret_cast<const half2*>(b + idx + 4);
    const half2 rb3 = *reinterpret_cast<const half2*>(b + idx + 6);
    *reinterpret_cast<half2*>(c + idx + 0) = __hadd2(ra0, rb0);
    *reinterpret_cast<half2*>(c + idx + 2) = __hadd2(ra1, rb1);
    *reinterpret_cast<half2*>(c + idx + 4) = __hadd2(ra2, rb2);
    *reinterpret_cast<half2*>(c + idx + 6) = __hadd2(ra3, rb3);
  } else if (idx < n) {
    for (int64_t i = idx; i < n; ++i) c[i] = __hadd(a[i], b[i]);
  }
}

// Eight halves per thread packed in one 128-bit load per operand and one 128-bit store (v6).
__global__ void AddF16x8PackKernel(const half* a, const half* b, half* c, int64_t n) {
  const int64_t idx = 8 * GlobalThreadIndex();
  if (idx + 7 < n) {
    alignas(16) half pack_a[8], pack_b[8], pack_c[8];
    *reinterpret_cast<float4*>(pack_a) = *reinterpret_cast<const float4*>(a + idx);
    *reinterpret_cast<float4*>(pack_b) = *reinterpret_cast<const float4*>(b + idx);
#pragma unroll
    for (int i = 0; i < 8; i += 2) {
      *reinterpret_cast<half2*>(pack_c + i) = __hadd2(*reinterpret_cast<half2*>(pack_a + i),
                                                      *reinterpret_cast<half2*>(pack_b + i));
    }
    *reinterpret_cast<float4*>(c + idx) = *reinterpret_cast<float4*>(pack_c);
  } else if (idx < n) {
    for (int64_t i = idx; i < n; ++i) c[i] = __hadd(a[i], b[i]);
  }
}

template <typename T>
int LaunchAdd(void (*kernel)(const T*, const T*, T*, int64_t), const KernelBuffers& b,
              const LaunchGeometry& g, void* stream, const void** symbol) {
  return LaunchOrReport(kernel, g, stream, symbol, static_cast<const T*>(b.in0),
                        static_cast<const T*>(b.in1), static_cast<T*>(b.out), b.n);
}

}  // namespace

int LaunchAddF32(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) {
  return LaunchAdd<float>(AddF32Kernel, b, g, s, sym);
}
int LaunchAddF32x4(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) {
  return LaunchAdd<float>(AddF32x4Kernel, b, g, s, sym);
}
int LaunchAddF16(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) {
  return LaunchAdd<half>(AddF16Kernel, b, g, s, sym);
}
int LaunchAddF16x2(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) {
  return LaunchAdd<half>(AddF16x2Kernel, b, g, s, sym);
}
int LaunchAddF16x8(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) {
  return LaunchAdd<half>(AddF16x8Kernel, b, g, s, sym);
}
int LaunchAddF16x8Pack(const KernelBuffers& b, const LaunchGeometry& g, void* s,
                       const void** sym) {
  return LaunchAdd<half>(AddF16x8PackKernel, b, g, s, sym);
}

}  // namespace gpubench::cuda
