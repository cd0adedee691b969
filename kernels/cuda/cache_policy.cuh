// L2 cache policies of the 16-byte elementwise-add kernels: how each packet is loaded and stored.
//
//   kReadOnly   read-only loads (LDG.E.128.CONSTANT), plain stores: the add_*_tuned kernels.
//   kStreaming  __ldcs / __stcs (ld/st .cs: evict-first in L1 and L2): nothing the kernel touches
//               pushes other lines out ahead of it (add_*_stream).
//   kL2Keep     the first keep_packets packets of each input are loaded with an L2 evict_last
//               cache policy, the rest evict_first; stores evict_first (createpolicy +
//               .L2::cache_hint, sm_80+): the kept part is the last to leave L2 and the output
//               the first (add_*_l2keep). The persisting lines go back to normal
//               with cudaCtxResetPersistingL2Cache, which the CUDA backend calls before every
//               cold-mode flush of the variants marked KernelVariant::l2_evict_last and when
//               a session closes.
#ifndef GPUBENCH_KERNELS_CUDA_CACHE_POLICY_CUH_
#define GPUBENCH_KERNELS_CUDA_CACHE_POLICY_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace gpubench::cuda {

enum class CachePolicy { kReadOnly, kStreaming, kL2Keep };

// Cache-policy PTX (createpolicy, .L2::cache_hint) needs sm_80. The fat binary also carries
// sm_75 code, where kL2Keep compiles to the plain (kReadOnly) path: the catalog gives the
// add_*_l2keep variants minimum compute capability 8.0, so the server never launches that body.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GPUBENCH_HAS_L2_CACHE_HINTS 1
#else
#define GPUBENCH_HAS_L2_CACHE_HINTS 0
#endif

#if GPUBENCH_HAS_L2_CACHE_HINTS
// volatile, as bench/l2_probe.cu's: one createpolicy per load and store, where the load or store
// is, never merged or hoisted (the sm_90 code of add_*_l2keep and the probe's keep kernels is the
// same: bench/results/2026-11-30-l2keep-codegen.md).
__device__ __forceinline__ uint64_t L2EvictLastPolicy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint64_t L2EvictFirstPolicy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
#endif

// Packet v of p (the packet index decides kL2Keep's policy).
template <CachePolicy P>
__device__ __forceinline__ uint4 LoadPacket(const uint4* __restrict__ p, int64_t v,
                                            int64_t keep_packets) {
  if constexpr (P == CachePolicy::kStreaming) {
    return __ldcs(p + v);
  } else if constexpr (P == CachePolicy::kL2Keep && GPUBENCH_HAS_L2_CACHE_HINTS) {
#if GPUBENCH_HAS_L2_CACHE_HINTS
    const uint64_t policy = v < keep_packets ? L2EvictLastPolicy() : L2EvictFirstPolicy();
    uint4 r;
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p + v), "l"(policy));
    return r;
#endif
  } else {
    return p[v];  // const __restrict__: the compiler emits the read-only (non-coherent) load
  }
}

template <CachePolicy P>
__device__ __forceinline__ void StorePacket(uint4* __restrict__ p, int64_t v, uint4 x) {
  if constexpr (P == CachePolicy::kStreaming) {
    __stcs(p + v, x);
  } else if constexpr (P == CachePolicy::kL2Keep && GPUBENCH_HAS_L2_CACHE_HINTS) {
#if GPUBENCH_HAS_L2_CACHE_HINTS
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 :
                 : "l"(p + v), "r"(x.x), "r"(x.y), "r"(x.z), "r"(x.w), "l"(L2EvictFirstPolicy())
                 : "memory");
#endif
  } else {
    p[v] = x;
  }
}

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_CACHE_POLICY_CUH_
