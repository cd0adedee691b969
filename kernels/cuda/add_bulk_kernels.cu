// Elementwise add through Hopper's bulk-copy engine (cp.async.bulk, sm_90+), the technique of
// CUB's sm_90 DeviceTransform policy ("ublkcp"), written for this one operation.
//
// One block owns one tile of block_size x items_per_thread elements. One elected thread asks the
// copy engine for both input tiles (global -> shared, completing on an mbarrier), so the whole
// tile's bytes are in flight at once without holding registers; the other threads wait on the
// barrier, then every thread adds 16-byte packets out of shared memory and stores them with
// 16-byte streaming stores. Bytes in flight per SM = resident blocks x 2 x tile bytes, which the
// tile size (items per thread) tunes, independently of register pressure.
//
// Contract (checked by the launcher): a, b and c are 16-byte aligned (cudaMalloc gives 256), and
// block_size x items_per_thread x sizeof(T) is a multiple of 16, so every tile starts 16-byte
// aligned. The last tile's bulk copy covers its whole 16-byte packets; the at most 15 bytes past
// them are added straight from global memory. Dynamic shared memory: 2 x tile bytes.
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/launch_helpers.cuh"
#include "kernels/cuda/packed_add.cuh"

namespace gpubench::cuda {
namespace {

// kPdl (add_*_bulk_pdl): launched with programmatic dependent launch, like add_*_l2keep_pdl
// (add_kernels.cu), so back-to-back launches overlap the next grid's launch and block placement
// with this grid's last wave (WaitForPreviousGridThenReleaseNext says how stream order holds).
template <typename T, bool kPdl>
__global__ void __launch_bounds__(1024) AddBulkKernel(const T* __restrict__ a,
                                                      const T* __restrict__ b,
                                                      T* __restrict__ c, int64_t n,
                                                      int items_per_thread) {
  if constexpr (kPdl) WaitForPreviousGridThenReleaseNext();
  constexpr int kVec = 16 / sizeof(T);
  const int tile = static_cast<int>(blockDim.x) * items_per_thread;  // elements
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * tile;
  const int count = static_cast<int>(min(n - offset, static_cast<int64_t>(tile)));
  const int packets = count / kVec;  // whole 16-byte packets in this tile
  extern __shared__ __align__(128) unsigned char smem[];
  uint4* s_a = reinterpret_cast<uint4*>(smem);
  uint4* s_b = s_a + tile / kVec;
#if __CUDA_ARCH__ >= 900
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) {
    namespace ptx = ::cuda::ptx;
    ptx::mbarrier_init(&bar, 1);
    // The copy engine (async proxy) must see the initialised barrier.
    ptx::fence_proxy_async(ptx::space_shared);
    const uint32_t bytes = static_cast<uint32_t>(packets) * 16;
    if (bytes > 0) {
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, s_a, a + offset, bytes, &bar);
      ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, s_b, b + offset, bytes, &bar);
    }
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar,
                                   2 * bytes);
  }
  __syncthreads();  // the barrier is initialised before anyone waits on it
  while (!::cuda::ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
#else
  // Never launched below sm_90 (the catalog requires compute capability 9.0 and the server
  // refuses the run with FAILED_PRECONDITION), so this body has never run; it exists so the fat
  // binary's older architectures compile to plain loads staged through shared memory rather than
  // to a trap.
  const uint4* a4 = reinterpret_cast<const uint4*>(a + offset);
  const uint4* b4 = reinterpret_cast<const uint4*>(b + offset);
  for (int v = threadIdx.x; v < packets; v += blockDim.x) {
    s_a[v] = a4[v];
    s_b[v] = b4[v];
  }
  __syncthreads();
#endif
  // Streaming stores (st.global.cs: evict-first in L2): the output is not read again by this
  // kernel. H200, 2026-11-30, add_f32 256Mi in one process beside CUB (bench/add_same_process.py
  // large, 5 rounds): hot 726.2 us against 728.1 with plain stores (CUB 727.9), cold 723.8
  // against 724.2 (bench/results/2026-11-30-h200-session7.md).
  uint4* c4 = reinterpret_cast<uint4*>(c + offset);
  for (int v = threadIdx.x; v < packets; v += blockDim.x) {
    __stcs(c4 + v, AddPacked<T>(s_a[v], s_b[v]));
  }
  // The tile's last count mod kVec elements (only the grid's last tile has any).
  const int tail = packets * kVec + static_cast<int>(threadIdx.x);
  if (tail < count) c[offset + tail] = ScalarAdd(a[offset + tail], b[offset + tail]);
}

template <typename T, bool kPdl>
int LaunchAddBulk(const KernelBuffers& buffers, const LaunchGeometry& g, void* stream,
                  const void** symbol) {
  auto kernel = &AddBulkKernel<T, kPdl>;
  // Above 48 KiB a kernel's dynamic shared memory must be opted into, per function.
  constexpr int kDefaultDynamicSharedLimit = 48 * 1024;
  if (g.dynamic_shared_bytes > kDefaultDynamicSharedLimit) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             g.dynamic_shared_bytes);
        e != cudaSuccess) {
      return e;
    }
  }
  if (symbol == nullptr) {
    const int64_t tile_bytes = int64_t{g.block_size} * g.items_per_thread * int64_t{sizeof(T)};
    const auto misaligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 != 0; };
    if (tile_bytes % 16 != 0 || 2 * tile_bytes > g.dynamic_shared_bytes ||
        misaligned(buffers.data[0]) || misaligned(buffers.data[1]) || misaligned(buffers.data[2])) {
      return cudaErrorInvalidValue;
    }
  }
  return LaunchOrReport<kPdl>(kernel, g, stream, symbol, buffers.at<const T>(0),
                        buffers.at<const T>(1), buffers.at<T>(2),
                        buffers.n, g.items_per_thread);
}

}  // namespace

#define GPUBENCH_ADD_BULK_LAUNCHER(name, T, pdl)                                            \
  int name(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym) { \
    return LaunchAddBulk<T, pdl>(b, g, s, sym);                                          \
  }
GPUBENCH_ADD_BULK_LAUNCHER(LaunchAddF32Bulk, float, false)
GPUBENCH_ADD_BULK_LAUNCHER(LaunchAddF16Bulk, half, false)
GPUBENCH_ADD_BULK_LAUNCHER(LaunchAddBF16Bulk, __nv_bfloat16, false)
GPUBENCH_ADD_BULK_LAUNCHER(LaunchAddF32BulkPdl, float, true)
GPUBENCH_ADD_BULK_LAUNCHER(LaunchAddF16BulkPdl, half, true)
GPUBENCH_ADD_BULK_LAUNCHER(LaunchAddBF16BulkPdl, __nv_bfloat16, true)
#undef GPUBENCH_ADD_BULK_LAUNCHER

}  // namespace gpubench::cuda
