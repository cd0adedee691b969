// Elementwise add on the GPU.
//
// Seed variants (000_90ef8f88548fa484): the seed's memory-access patterns, correct for every N
// (64-bit indices, no load past N, scalar tails). Device buffers come from cudaMalloc (256-byte
// aligned) and every vector starts at a multiple of its width, so wide accesses are aligned. Like
// the seed, no __restrict__: these are the baselines. The fp16 patterns are templates so the same
// code serves bf16 (__hadd/__hadd2 have bf16 overloads).
//
// Tuned variants: 16-byte accesses with kUnroll independent 16-byte loads per operand in flight
// per thread. AddOnePassKernel is one pass under a cache policy (cache_policy.cuh): read-only
// loads (add_*_tuned), streaming (add_*_stream) or L2 keep/evict hints (add_*_l2keep);
// AddGridStrideKernel (add_*_gridstride) loops grid-stride over a resident grid with streaming
// hints. The bulk-copy variants are in add_bulk_kernels.cu. Numbers that justified each choice
// are beside the values in kernels/families/elementwise_add.cc and in bench/results/ (H200,
// 2026-11-29).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cache_policy.cuh"
#include "kernels/cuda/launch_helpers.cuh"
#include "kernels/cuda/packed_add.cuh"

namespace gpubench::cuda {
namespace {

// ---- seed variants --------------------------------------------------------------------------

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

// T = half or __nv_bfloat16, T2 its pair type.
template <typename T>
__global__ void AddScalarKernel(const T* a, const T* b, T* c, int64_t n) {
  const int64_t i = GlobalThreadIndex();
  if (i < n) c[i] = __hadd(a[i], b[i]);
}

// One 32-bit pair per thread, added with one HADD2.
template <typename T, typename T2>
__global__ void AddX2Kernel(const T* a, const T* b, T* c, int64_t n) {
  const int64_t idx = 2 * GlobalThreadIndex();
  if (idx + 1 < n) {
    *reinterpret_cast<T2*>(c + idx) =
        __hadd2(*reinterpret_cast<const T2*>(a + idx), *reinterpret_cast<const T2*>(b + idx));
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

// Eight 16-bit values per thread packed in one 128-bit load per operand and one store (v6).
template <typename T, typename T2>
__global__ void AddX8PackKernel(const T* a, const T* b, T* c, int64_t n) {
  const int64_t idx = 8 * GlobalThreadIndex();
  if (idx + 7 < n) {
    alignas(16) T pack_a[8], pack_b[8], pack_c[8];
    *reinterpret_cast<float4*>(pack_a) = *reinterpret_cast<const float4*>(a + idx);
    *reinterpret_cast<float4*>(pack_b) = *reinterpret_cast<const float4*>(b + idx);
#pragma unroll
    for (int i = 0; i < 8; i += 2) {
      *reinterpret_cast<T2*>(pack_c + i) =
          __hadd2(*reinterpret_cast<T2*>(pack_a + i), *reinterpret_cast<T2*>(pack_b + i));
    }
    *reinterpret_cast<float4*>(c + idx) = *reinterpret_cast<float4*>(pack_c);
  } else if (idx < n) {
    for (int64_t i = idx; i < n; ++i) c[i] = __hadd(a[i], b[i]);
  }
}

// ---- tuned variants ---------------------------------------------------------------------------

template <typename T, int kUnroll>
__global__ void __launch_bounds__(1024) AddGridStrideKernel(const T* __restrict__ a,
                                                            const T* __restrict__ b,
                                                            T* __restrict__ c, int64_t n) {
  constexpr int kVec = 16 / sizeof(T);
  const int64_t nvec = n / kVec;
  const uint4* __restrict__ a4 = reinterpret_cast<const uint4*>(a);
  const uint4* __restrict__ b4 = reinterpret_cast<const uint4*>(b);
  uint4* __restrict__ c4 = reinterpret_cast<uint4*>(c);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = GlobalThreadIndex();
  // kUnroll independent 16-byte loads per operand before the first use: bytes in flight.
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    uint4 ra[kUnroll], rb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      ra[u] = __ldcs(a4 + i + u * stride);
      rb[u] = __ldcs(b4 + i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) __stcs(c4 + i + u * stride, AddPacked<T>(ra[u], rb[u]));
  }
  for (; i < nvec; i += stride) __stcs(c4 + i, AddPacked<T>(__ldcs(a4 + i), __ldcs(b4 + i)));
  // The last n mod kVec elements, one per thread.
  const int64_t t = nvec * kVec + GlobalThreadIndex();
  if (t < n) c[t] = ScalarAdd(a[t], b[t]);
}

// One pass, no grid-stride: block b owns vectors [b * block * kUnroll, (b + 1) * block * kUnroll),
// lane-interleaved so each of the kUnroll loads is coalesced across the warp; all loads are issued
// before the first add. The cache policy (cache_policy.cuh) picks the load and store flavour:
// read-only loads through __restrict__ const (LDG.E.128.CONSTANT) for add_*_tuned, streaming
// (.cs) for add_*_stream, L2 evict_last/evict_first hints for add_*_l2keep.
//
// kTail = false (n a multiple of the packet, every size the benchmarks use): `count` is the
// packet count and the kernel is the packets' loop alone, the same code as bench/l2_probe.cu's
// VecKernel (the probe's copy ran 16Mi f16 hot 3% faster than this kernel did when it also took
// the element count, divided it and carried the scalar tail: bench/results/2026-11-30-l2keep-codegen.md). kTail = true: `count` is the
// element count n and thread t also adds element nvec * kVec + t when that is below n (the tail
// rule the CPU emulation, cpu::Add*OnePass, reproduces); the launcher picks it only for n that
// is not a multiple of the packet, so the tail costs nothing where there is none.
template <typename T, int kUnroll, CachePolicy kPolicy, bool kTail>
__device__ __forceinline__ void AddOnePass(const uint4* __restrict__ a4,
                                           const uint4* __restrict__ b4, uint4* __restrict__ c4,
                                           int64_t count, int64_t keep_packets) {
  constexpr int kVec = 16 / sizeof(T);
  const int64_t nvec = kTail ? count / kVec : count;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
  uint4 ra[kUnroll], rb[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = base + u * blockDim.x;
    if (v < nvec) {
      ra[u] = LoadPacket<kPolicy>(a4, v, keep_packets);
      rb[u] = LoadPacket<kPolicy>(b4, v, keep_packets);
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = base + u * blockDim.x;
    if (v < nvec) StorePacket<kPolicy>(c4, v, AddPacked<T>(ra[u], rb[u]));
  }
  if constexpr (kTail) {
    const T* __restrict__ a = reinterpret_cast<const T*>(a4);
    const T* __restrict__ b = reinterpret_cast<const T*>(b4);
    T* __restrict__ c = reinterpret_cast<T*>(c4);
    const int64_t t = nvec * kVec + GlobalThreadIndex();
    if (t < count) c[t] = ScalarAdd(a[t], b[t]);
  }
}

template <typename T, int kUnroll, CachePolicy kPolicy, bool kTail>
__global__ void __launch_bounds__(1024) AddOnePassKernel(const uint4* __restrict__ a4,
                                                         const uint4* __restrict__ b4,
                                                         uint4* __restrict__ c4, int64_t count,
                                                         int64_t keep_packets) {
  AddOnePass<T, kUnroll, kPolicy, kTail>(a4, b4, c4, count, keep_packets);
}

// add_*_l2keep_pdl: the same work, launched with programmatic dependent launch (sm_90; stream
// order is kept by WaitForPreviousGridThenReleaseNext): the next grid's launch and block
// placement overlap this grid's last wave instead of following its end. Only back-to-back
// launches gain (hot batches, loops); a launch behind an event or a copy starts as usual.
template <typename T, int kUnroll, CachePolicy kPolicy, bool kTail>
__global__ void __launch_bounds__(1024) AddOnePassPdlKernel(const uint4* __restrict__ a4,
                                                            const uint4* __restrict__ b4,
                                                            uint4* __restrict__ c4, int64_t count,
                                                            int64_t keep_packets) {
  WaitForPreviousGridThenReleaseNext();
  AddOnePass<T, kUnroll, kPolicy, kTail>(a4, b4, c4, count, keep_packets);
}

// The one-pass kernel a launch runs: the PDL form under kPdl, else the plain one.
template <typename T, int kUnroll, CachePolicy kPolicy, bool kTail, bool kPdl>
auto OnePassKernel() {
  if constexpr (kPdl) {
    return AddOnePassPdlKernel<T, kUnroll, kPolicy, kTail>;
  } else {
    return AddOnePassKernel<T, kUnroll, kPolicy, kTail>;
  }
}

// add_*_l2keep: an eighth of the L2 of each input is loaded evict_last (a quarter for both), the
// rest evict_first, while the working set (a, b, c) is at most kL2KeepMaxWorkingSetOverL2 x the
// L2; beyond that the hints only cost (H200, 2026-11-30, bench/l2_probe: 256Mi fp16 hot 399 us
// with hints vs 367 us without) and the launch runs the read-only policy of add_*_tuned. The
// catalog entry has the measurements behind both numbers.
constexpr double kL2KeepFractionPerInput = 0.125;
constexpr int64_t kL2KeepMaxWorkingSetOverL2 = 2;

// The current device's L2 size in bytes, read once per device (the launch path stays cheap).
int64_t CurrentDeviceL2Bytes() {
  static int64_t l2_bytes[64] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 0;
  if (l2_bytes[device] == 0) {
    int bytes = 0;
    if (cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device) != cudaSuccess) return 0;
    l2_bytes[device] = bytes;
  }
  return l2_bytes[device];
}

constexpr int kGridStrideUnroll = 4;

template <typename T>
int LaunchAdd(void (*kernel)(const T*, const T*, T*, int64_t), const KernelBuffers& b,
              const LaunchGeometry& g, void* stream, const void** symbol) {
  return LaunchOrReport(kernel, g, stream, symbol, b.at<const T>(0),
                        b.at<const T>(1), b.at<T>(2), b.n);
}

// The one-pass kernels' items per thread is a template argument (the loads must be unrolled into
// registers): items = 16-byte packets x elements per packet, packets in {1, 2, 4, 8}, the set the
// catalog's max_items_per_thread and the server's validation allow.
// kPdl: the kernel is AddOnePassPdlKernel, launched with programmatic stream serialization.
template <typename T, CachePolicy kPolicy, bool kPdl>
int LaunchAddOnePass(const KernelBuffers& b, const LaunchGeometry& g, void* stream,
                 const void** symbol) {
  int64_t keep_packets = 0;
  if constexpr (kPolicy == CachePolicy::kL2Keep) {
    const int64_t l2_bytes = CurrentDeviceL2Bytes();
    if (3 * b.n * static_cast<int64_t>(sizeof(T)) > kL2KeepMaxWorkingSetOverL2 * l2_bytes) {
      return LaunchAddOnePass<T, CachePolicy::kReadOnly, kPdl>(b, g, stream, symbol);
    }
    keep_packets = static_cast<int64_t>(kL2KeepFractionPerInput * l2_bytes) / 16;
  }
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const bool tail = b.n % kVec != 0;
  const auto* a4 = reinterpret_cast<const uint4*>(b.at<const T>(0));
  const auto* b4 = reinterpret_cast<const uint4*>(b.at<const T>(1));
  auto* c4 = reinterpret_cast<uint4*>(b.at<T>(2));
  const auto launch = [&](auto kernel, auto tail_kernel) {
    return tail ? LaunchOrReport<kPdl>(tail_kernel, g, stream, symbol, a4, b4, c4, b.n,
                                       keep_packets)
                : LaunchOrReport<kPdl>(kernel, g, stream, symbol, a4, b4, c4, b.n / kVec,
                                       keep_packets);
  };
  switch (g.items_per_thread / kVec) {
    case 1:
      return launch(OnePassKernel<T, 1, kPolicy, false, kPdl>(),
                    OnePassKernel<T, 1, kPolicy, true, kPdl>());
    case 2:
      return launch(OnePassKernel<T, 2, kPolicy, false, kPdl>(),
                    OnePassKernel<T, 2, kPolicy, true, kPdl>());
    case 4:
      return launch(OnePassKernel<T, 4, kPolicy, false, kPdl>(),
                    OnePassKernel<T, 4, kPolicy, true, kPdl>());
    case 8:
      return launch(OnePassKernel<T, 8, kPolicy, false, kPdl>(),
                    OnePassKernel<T, 8, kPolicy, true, kPdl>());
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

#define GPUBENCH_ADD_LAUNCHER(name, T, kernel)                                              \
  int name(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) { \
    return LaunchAdd<T>(kernel, b, g, s, sym);                                              \
  }

GPUBENCH_ADD_LAUNCHER(LaunchAddF32, float, AddF32Kernel)
GPUBENCH_ADD_LAUNCHER(LaunchAddF32x4, float, AddF32x4Kernel)
GPUBENCH_ADD_LAUNCHER(LaunchAddF16, half, AddScalarKernel<half>)
GPUBENCH_ADD_LAUNCHER(LaunchAddF16x2, half, (AddX2Kernel<half, half2>))
GPUBENCH_ADD_LAUNCHER(LaunchAddF16x8, half, AddF16x8Kernel)
GPUBENCH_ADD_LAUNCHER(LaunchAddF16x8Pack, half, (AddX8PackKernel<half, half2>))
GPUBENCH_ADD_LAUNCHER(LaunchAddBF16, __nv_bfloat16, AddScalarKernel<__nv_bfloat16>)
GPUBENCH_ADD_LAUNCHER(LaunchAddBF16x2, __nv_bfloat16, (AddX2Kernel<__nv_bfloat16, __nv_bfloat162>))
GPUBENCH_ADD_LAUNCHER(LaunchAddBF16x8Pack, __nv_bfloat16,
                      (AddX8PackKernel<__nv_bfloat16, __nv_bfloat162>))
GPUBENCH_ADD_LAUNCHER(LaunchAddF32GridStride, float,
                      (AddGridStrideKernel<float, kGridStrideUnroll>))
GPUBENCH_ADD_LAUNCHER(LaunchAddF16GridStride, half, (AddGridStrideKernel<half, kGridStrideUnroll>))
GPUBENCH_ADD_LAUNCHER(LaunchAddBF16GridStride, __nv_bfloat16,
                      (AddGridStrideKernel<__nv_bfloat16, kGridStrideUnroll>))

#undef GPUBENCH_ADD_LAUNCHER

#define GPUBENCH_ADD_ONE_PASS_LAUNCHER(name, T, policy, pdl)                              \
  int name(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) { \
    return LaunchAddOnePass<T, CachePolicy::policy, pdl>(b, g, s, sym);                  \
  }

GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF32Tuned, float, kReadOnly, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF16Tuned, half, kReadOnly, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddBF16Tuned, __nv_bfloat16, kReadOnly, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF32Stream, float, kStreaming, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF16Stream, half, kStreaming, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddBF16Stream, __nv_bfloat16, kStreaming, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF32L2Keep, float, kL2Keep, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF16L2Keep, half, kL2Keep, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddBF16L2Keep, __nv_bfloat16, kL2Keep, false)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF32L2KeepPdl, float, kL2Keep, true)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddF16L2KeepPdl, half, kL2Keep, true)
GPUBENCH_ADD_ONE_PASS_LAUNCHER(LaunchAddBF16L2KeepPdl, __nv_bfloat16, kL2Keep, true)

#undef GPUBENCH_ADD_ONE_PASS_LAUNCHER

}  // namespace gpubench::cuda
