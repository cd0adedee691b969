// L2-policy probe (standalone; no gpubench code): times one elementwise add under
// several cache policies with plain CUDA events, so one device call answers which policy helps
// at which size and mode before the catalog commits to one. Built here with nvcc, carried.
//
//   l2_probe [ELEMENTS,...]           table: variant,dtype,elements,mode,median_us,TB/s
//   l2_probe --ncu ELEMENTS           three launches of each variant back to back (no flush),
//                                     for ncu --cache-control none (counters of the hot case)
//   L2_PROBE_FILTER=f16_ l2_probe ...  only the variants whose name contains the text (f16_ also
//                                     matches bf16_: use ^-less names such as keep25_768x1)
//   L2_PROBE_BATCH=N                  hot launches between the events (default 200/50/5 by size)
//   L2_PROBE_FLUSH=memset             the cold flush before 2026-11-30 (see below)
//
// Variants are f16_*, f32_* and (the 768 x 1 one-pass ones only) bf16_*; f16 and bf16 differ in
// the add instruction alone. The sm_90 code of VecKernel<kF16|kBF16|kF32, kKeep, 1> is the code of
// the catalog's add_*_l2keep at sizes that are a multiple of the 16-byte packet
// (bench/results/2026-11-30-l2keep-codegen.md).
// Policies: "ro" = read-only loads (LDG.E.128.CONSTANT), plain stores (the catalog's tuned);
// "cs" = __ldcs/__stcs (ld/st .cs, evict-first); "ro_stcs" = read-only loads, streaming stores;
// "gs" = grid-stride resident grid (blocks per SM given), __ldcs/__stcs; "keepF" = the first
// F x L2 bytes of the inputs loaded with an L2 evict_last cache-policy, the rest evict_first,
// stores evict_first (createpolicy + .L2::cache_hint); "+sa" = the same after
// cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, max) (L2 set-aside for persisting lines).
// Cold = after cudaCtxResetPersistingL2Cache() (persisting lines back to normal), the L2 flushed
// as gpubench's server flushes it: a read-only pass over 2 x L2 bytes of zeros, so the launch
// starts with clean lines only (L2_PROBE_FLUSH=memset: an L2-sized buffer rewritten, which leaves
// the L2 full of dirty lines; gpubench's flush until 2026-11-30).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

enum Policy { kRo = 0, kCs = 1, kRoStcs = 2, kKeep = 3 };
enum DType { kF32 = 0, kF16 = 1, kBF16 = 2 };

// Four pairs of 16-bit values (T2 = half2 or __nv_bfloat162) added lane by lane.
template <typename T2>
__device__ __forceinline__ uint4 AddPairs(uint4 x, uint4 y) {
  uint4 o;
  const T2* px = reinterpret_cast<const T2*>(&x);
  const T2* py = reinterpret_cast<const T2*>(&y);
  T2* po = reinterpret_cast<T2*>(&o);
#pragma unroll
  for (int k = 0; k < 4; ++k) po[k] = __hadd2(px[k], py[k]);
  return o;
}
__device__ __forceinline__ uint4 AddF(uint4 x, uint4 y) {
  uint4 o;
  o.x = __float_as_uint(__uint_as_float(x.x) + __uint_as_float(y.x));
  o.y = __float_as_uint(__uint_as_float(x.y) + __uint_as_float(y.y));
  o.z = __float_as_uint(__uint_as_float(x.z) + __uint_as_float(y.z));
  o.w = __float_as_uint(__uint_as_float(x.w) + __uint_as_float(y.w));
  return o;
}
template <DType D>
__device__ __forceinline__ uint4 Add(uint4 x, uint4 y) {
  if constexpr (D == kF16) return AddPairs<half2>(x, y);
  if constexpr (D == kBF16) return AddPairs<__nv_bfloat162>(x, y);
  return AddF(x, y);
}

__device__ __forceinline__ uint64_t PolicyLast() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t PolicyFirst() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint4 LoadHint(const uint4* ptr, uint64_t pol) {
  uint4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr), "l"(pol));
  return v;
}
__device__ __forceinline__ void StoreHint(uint4* ptr, uint4 v, uint64_t pol) {
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" ::"l"(ptr), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol)
               : "memory");
}

template <Policy P>
__device__ __forceinline__ uint4 Load(const uint4* p, int64_t v, int64_t keep) {
  if constexpr (P == kCs) return __ldcs(p + v);
  if constexpr (P == kKeep) return LoadHint(p + v, v < keep ? PolicyLast() : PolicyFirst());
  return __ldg(p + v);
}
template <Policy P>
__device__ __forceinline__ void Store(uint4* p, int64_t v, uint4 x) {
  if constexpr (P == kRo) {
    p[v] = x;
  } else if constexpr (P == kKeep) {
    StoreHint(p + v, x, PolicyFirst());
  } else {
    __stcs(p + v, x);
  }
}

// One pass: block k owns packets [k*B*U, (k+1)*B*U), lane-interleaved (the catalog's tuned).
template <DType D, Policy P, int U>
__global__ void __launch_bounds__(1024) VecKernel(const uint4* __restrict__ a,
                                                  const uint4* __restrict__ b,
                                                  uint4* __restrict__ c, int64_t nvec,
                                                  int64_t keep) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  uint4 ra[U], rb[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t v = base + u * blockDim.x;
    if (v < nvec) {
      ra[u] = Load<P>(a, v, keep);
      rb[u] = Load<P>(b, v, keep);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t v = base + u * blockDim.x;
    if (v < nvec) Store<P>(c, v, Add<D>(ra[u], rb[u]));
  }
}

// Grid-stride over a resident grid, U packets per operand in flight.
template <DType D, Policy P, int U>
__global__ void __launch_bounds__(1024) GsKernel(const uint4* __restrict__ a,
                                                 const uint4* __restrict__ b,
                                                 uint4* __restrict__ c, int64_t nvec,
                                                 int64_t keep) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < nvec; i += U * stride) {
    uint4 ra[U], rb[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      ra[u] = Load<P>(a, i + u * stride, keep);
      rb[u] = Load<P>(b, i + u * stride, keep);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      Store<P>(c, i + u * stride, Add<D>(ra[u], rb[u]));
  }
  for (; i < nvec; i += stride) {
    const uint4 x = Load<P>(a, i, keep), y = Load<P>(b, i, keep);
    Store<P>(c, i, Add<D>(x, y));
  }
}

// The clean flush (a copy of kernels/cuda/timing_kernels.cu's, the probe shares no gpubench code).
__global__ void L2ReadFlushKernel(const uint4* __restrict__ buffer, uint64_t packets,
                                  uint32_t* sink) {
  uint32_t x = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < packets;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint4 v = buffer[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x != 0) *sink = x;
}

using KernelFn = void (*)(const uint4*, const uint4*, uint4*, int64_t, int64_t);

struct Variant {
  std::string name;
  KernelFn fn;
  int block;
  int unroll;
  int per_sm;          // > 0: grid-stride, this many blocks per SM
  double keep_frac;    // of L2, input bytes kept (kKeep)
  bool set_aside;      // persisting L2 set-aside at its maximum
  DType dtype;
};

template <DType H>
std::vector<Variant> Variants() {
  const char* d = H == kF16 ? "f16" : H == kBF16 ? "bf16" : "f32";
  std::vector<Variant> v = {
      {std::string(d) + "_ro_768x1", VecKernel<H, kRo, 1>, 768, 1, 0, 0, false, H},
      {std::string(d) + "_ro_256x1", VecKernel<H, kRo, 1>, 256, 1, 0, 0, false, H},
      {std::string(d) + "_ro_256x2", VecKernel<H, kRo, 2>, 256, 2, 0, 0, false, H},
      {std::string(d) + "_cs_768x1", VecKernel<H, kCs, 1>, 768, 1, 0, 0, false, H},
      {std::string(d) + "_cs_256x1", VecKernel<H, kCs, 1>, 256, 1, 0, 0, false, H},
      {std::string(d) + "_cs_256x2", VecKernel<H, kCs, 2>, 256, 2, 0, 0, false, H},
      {std::string(d) + "_cs_256x4", VecKernel<H, kCs, 4>, 256, 4, 0, 0, false, H},
      {std::string(d) + "_rostcs_768x1", VecKernel<H, kRoStcs, 1>, 768, 1, 0, 0, false, H},
      {std::string(d) + "_gs_256x4_4sm", GsKernel<H, kCs, 4>, 256, 4, 4, 0, false, H},
      {std::string(d) + "_gs_256x4_8sm", GsKernel<H, kCs, 4>, 256, 4, 8, 0, false, H},
      {std::string(d) + "_gs_512x2_4sm", GsKernel<H, kCs, 2>, 512, 2, 4, 0, false, H},
      {std::string(d) + "_keep0_768x1", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.0, false, H},
      {std::string(d) + "_keep12_768x1", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.125, false, H},
      {std::string(d) + "_keep25_768x1", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.25, false, H},
      {std::string(d) + "_keep37_768x1", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.375, false, H},
      {std::string(d) + "_keep50_768x1", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.50, false, H},
      {std::string(d) + "_keep75_768x1", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.75, false, H},
      {std::string(d) + "_keep50_256x2", VecKernel<H, kKeep, 2>, 256, 2, 0, 0.50, false, H},
      {std::string(d) + "_keep50_gs4", GsKernel<H, kKeep, 4>, 256, 4, 4, 0.50, false, H},
      {std::string(d) + "_keep50_768x1+sa", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.50, true, H},
      {std::string(d) + "_keep75_768x1+sa", VecKernel<H, kKeep, 1>, 768, 1, 0, 0.75, true, H},
  };
  return v;
}

struct Ctx {
  int sms = 0, l2 = 0, max_persist = 0;
  void* flush = nullptr;  // 2 x L2 bytes of zeros + a 16-byte sink
  size_t flush_bytes = 0;
  bool memset_flush = false;
  int flush_value = 0;
  cudaStream_t s = nullptr;
};

void Launch(const Ctx& x, const Variant& v, const uint4* a, const uint4* b, uint4* c,
            int64_t nvec, int64_t keep) {
  const int64_t per_block = int64_t{v.block} * v.unroll;
  int64_t grid = (nvec + per_block - 1) / per_block;
  if (v.per_sm > 0) grid = std::min<int64_t>(grid, int64_t{x.sms} * v.per_sm);
  v.fn<<<static_cast<unsigned>(std::max<int64_t>(grid, 1)), v.block, 0, x.s>>>(a, b, c, nvec, keep);
}

double Median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  Ctx x;
  CK(cudaDeviceGetAttribute(&x.sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&x.l2, cudaDevAttrL2CacheSize, 0));
  CK(cudaDeviceGetAttribute(&x.max_persist, cudaDevAttrMaxPersistingL2CacheSize, 0));
  CK(cudaStreamCreate(&x.s));
  x.flush_bytes = 2 * static_cast<size_t>(x.l2) / 16 * 16;
  CK(cudaMalloc(&x.flush, x.flush_bytes + 16));
  CK(cudaMemset(x.flush, 0, x.flush_bytes + 16));
  x.memset_flush = std::getenv("L2_PROBE_FLUSH") != nullptr &&
                   std::strcmp(std::getenv("L2_PROBE_FLUSH"), "memset") == 0;
  const int batch_env =
      std::getenv("L2_PROBE_BATCH") ? std::atoi(std::getenv("L2_PROBE_BATCH")) : 0;
  const bool ncu = argc > 1 && std::strcmp(argv[1], "--ncu") == 0;
  std::vector<int64_t> sizes = {1 << 20, 16 << 20, 256 << 20};
  if (argc > 1 + ncu) {
    sizes.clear();
    for (char* t = std::strtok(argv[1 + ncu], ","); t; t = std::strtok(nullptr, ","))
      sizes.push_back(std::atoll(t));
  }
  std::fprintf(stderr, "sms=%d l2=%d max_persisting_l2=%d\n", x.sms, x.l2, x.max_persist);
  std::printf("variant,elements,mode,median_us,tb_per_s,check\n");
  std::vector<Variant> all;
  const char* filter = std::getenv("L2_PROBE_FILTER");  // substring of the variant names to run
  for (const Variant& v : Variants<kF16>()) all.push_back(v);
  for (const Variant& v : Variants<kF32>()) all.push_back(v);
  // bf16 (since 2026-11-30, the add_bf16_l2keep comparison): the 768 x 1 one-pass variants only.
  for (const Variant& v : Variants<kBF16>()) {
    if (v.name.size() > 6 && v.name.compare(v.name.size() - 6, 6, "_768x1") == 0) all.push_back(v);
  }
  if (filter != nullptr) {
    std::vector<Variant> kept;
    for (const Variant& v : all) {
      if (v.name.find(filter) != std::string::npos) kept.push_back(v);
    }
    all = kept;
  }
  // L2_PROBE_ALLOC_BYTES: bytes per operand buffer (default: the largest f32 size + 64). gpubench
  // allocates exactly the operand's bytes; the default here is larger, which places the three
  // buffers differently in memory (the 16Mi hot f16 gap of bench/results/2026-11-30-h200-add-round2.md is measured both ways).
  int64_t max_bytes = sizes.back() * 4 + 64;
  if (const char* e = std::getenv("L2_PROBE_ALLOC_BYTES")) max_bytes = std::atoll(e);
  uint4 *a, *b, *c;
  CK(cudaMalloc(&a, max_bytes));
  CK(cudaMalloc(&b, max_bytes));
  CK(cudaMalloc(&c, max_bytes));
  {  // finite random inputs in both dtypes: small exponent bits
    std::vector<unsigned char> h(max_bytes);
    unsigned s = 1;
    for (auto& byte : h) byte = static_cast<unsigned char>((s = s * 1103515245u + 12345u) >> 16) & 0x3b;
    CK(cudaMemcpy(a, h.data(), max_bytes, cudaMemcpyHostToDevice));
    // L2_PROBE_DATA=distinct: b gets other values than a (gpubench's inputs differ).
    if (std::getenv("L2_PROBE_DATA") && std::strcmp(std::getenv("L2_PROBE_DATA"), "distinct") == 0) {
      for (auto& byte : h) byte = static_cast<unsigned char>((s = s * 1103515245u + 12345u) >> 16) & 0x3b;
    }
    CK(cudaMemcpy(b, h.data(), max_bytes, cudaMemcpyHostToDevice));
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int64_t n : sizes) {
    for (const Variant& v : all) {
      const int64_t bytes = n * (v.dtype == kF32 ? 4 : 2);
      const int64_t nvec = bytes / 16;
      const int64_t keep =
          static_cast<int64_t>(v.keep_frac * x.l2 / 2) / 16;  // packets of each input kept
      CK(cudaCtxResetPersistingL2Cache());
      CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, v.set_aside ? x.max_persist : 0));
      if (ncu) {
        for (int r = 0; r < 3; ++r) Launch(x, v, a, b, c, nvec, keep);
        CK(cudaStreamSynchronize(x.s));
        std::printf("%s,%lld,ncu,,,\n", v.name.c_str(), static_cast<long long>(n));
        continue;
      }
      // hot: batches of back-to-back launches on the same buffers
      for (int r = 0; r < 5; ++r) Launch(x, v, a, b, c, nvec, keep);
      const int batch = batch_env > 0 ? batch_env : n <= (1 << 20) ? 200 : n <= (16 << 20) ? 50 : 5;
      std::vector<double> hot, cold;
      for (int rep = 0; rep < 15; ++rep) {
        CK(cudaEventRecord(e0, x.s));
        for (int r = 0; r < batch; ++r) Launch(x, v, a, b, c, nvec, keep);
        CK(cudaEventRecord(e1, x.s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        hot.push_back(1e3 * ms / batch);
      }
      for (int rep = 0; rep < 30; ++rep) {
        CK(cudaCtxResetPersistingL2Cache());
        if (x.memset_flush) {
          CK(cudaMemsetAsync(x.flush, ++x.flush_value & 0xff, x.l2, x.s));
        } else {
          auto* bytes = static_cast<unsigned char*>(x.flush);
          L2ReadFlushKernel<<<1024, 256, 0, x.s>>>(
              static_cast<const uint4*>(x.flush), x.flush_bytes / 16,
              reinterpret_cast<uint32_t*>(bytes + x.flush_bytes));
        }
        CK(cudaEventRecord(e0, x.s));
        Launch(x, v, a, b, c, nvec, keep);
        CK(cudaEventRecord(e1, x.s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        cold.push_back(1e3 * ms);
      }
      CK(cudaGetLastError());
      // check one packet near the end against the host
      uint4 ha, hb, hc;
      CK(cudaMemcpy(&ha, a + nvec - 1, 16, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(&hb, b + nvec - 1, 16, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(&hc, c + nvec - 1, 16, cudaMemcpyDeviceToHost));
      bool ok;
      if (v.dtype == kBF16) {
        const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&ha);
        const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&hb);
        const __nv_bfloat162* pc = reinterpret_cast<const __nv_bfloat162*>(&hc);
        ok = __bfloat162float(__low2bfloat16(pc[0])) ==
             __bfloat162float(__float2bfloat16(__bfloat162float(__low2bfloat16(pa[0])) +
                                               __bfloat162float(__low2bfloat16(pb[0]))));
      } else if (v.dtype == kF16) {
        const half2* pa = reinterpret_cast<const half2*>(&ha);
        const half2* pb = reinterpret_cast<const half2*>(&hb);
        const half2* pc = reinterpret_cast<const half2*>(&hc);
        ok = __half2float(__low2half(pc[0])) ==
             __half2float(__float2half(__half2float(__low2half(pa[0])) +
                                       __half2float(__low2half(pb[0]))));
      } else {
        float fa, fb, fc;
        std::memcpy(&fa, &ha, 4);
        std::memcpy(&fb, &hb, 4);
        std::memcpy(&fc, &hc, 4);
        ok = fc == fa + fb;
      }
      for (auto [mode, t] : {std::pair{"hot", &hot}, std::pair{"cold", &cold}}) {
        const double us = Median(*t);
        std::printf("%s,%lld,%s,%.3f,%.3f,%s\n", v.name.c_str(), static_cast<long long>(n), mode,
                    us, 3.0 * bytes / (us * 1e-6) / 1e12, ok ? "ok" : "WRONG");
      }
      std::fflush(stdout);
    }
  }
  CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
  CK(cudaCtxResetPersistingL2Cache());
  return 0;
}
