// libgpubench_add_probe.so: gpubench's elementwise-add launchers, its blocking kernel and its L2
// flush, callable from Python (ctypes), so that bench/add_same_process.py can time them and
// torch.add in ONE process, on the SAME buffers, under the same stream hold and flush (the 1Mi
// cold rows moved ~0.1 us between servers while Nsight Compute found the kernels equal:
// bench/results/2026-11-30-h200-session6.md).
//
// The catalog's kernels are reached through the very launchers the server calls
// (kernels/cuda/add_kernels.cu, add_bulk_kernels.cu, cub_kernels.cu are compiled into this
// library), so what is timed here is the server's code. The probe-only kernels below
// (`probe_*`) are bulk-copy experiments for the 256Mi rows; they are not in the catalog.
//
// Every function returns a cudaError_t as an int (0 = success) unless it says otherwise. Not
// thread-safe: one Python thread drives it.
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "kernels/cuda/launch_helpers.cuh"
#include "kernels/cuda/packed_add.cuh"
#include "kernels/cuda/timing.h"
#include "kernels/launch.h"

namespace gpubench::cuda {
// The server's launchers (kernels/cuda/*.cu); declared in the catalog's CUDA bindings.
#define GPUBENCH_PROBE_DECLARE(name) \
  int name(const KernelBuffers& b, const LaunchGeometry& g, void* s, const void** sym);
GPUBENCH_PROBE_DECLARE(LaunchAddF32Tuned)
GPUBENCH_PROBE_DECLARE(LaunchAddF16Tuned)
GPUBENCH_PROBE_DECLARE(LaunchAddBF16Tuned)
GPUBENCH_PROBE_DECLARE(LaunchAddF32L2KeepPdl)
GPUBENCH_PROBE_DECLARE(LaunchAddF16L2KeepPdl)
GPUBENCH_PROBE_DECLARE(LaunchAddBF16L2KeepPdl)
GPUBENCH_PROBE_DECLARE(LaunchAddF32x4)
GPUBENCH_PROBE_DECLARE(LaunchAddF32Bulk)
GPUBENCH_PROBE_DECLARE(LaunchAddF32BulkPdl)
GPUBENCH_PROBE_DECLARE(LaunchAddF16BulkPdl)
GPUBENCH_PROBE_DECLARE(LaunchAddBF16BulkPdl)
GPUBENCH_PROBE_DECLARE(LaunchCubAddF32)
GPUBENCH_PROBE_DECLARE(LaunchCubAddF16)
GPUBENCH_PROBE_DECLARE(LaunchCubAddBF16)
#undef GPUBENCH_PROBE_DECLARE

namespace {

// ---- probe-only bulk-copy variants ------------------------------------------------------------
// Each is AddBulkKernel<T, true> (add_bulk_kernels.cu: one tile of block x items per block, both
// input tiles fetched by cp.async.bulk onto one mbarrier, PDL) with one change:
//   kPlainStores: plain 16-byte stores, the catalog kernel before session 7 (before/after).
//   kLateTrigger: griddepcontrol.launch_dependents after the tile's (streaming) stores, not at
//                 the start.
//   kEvictFirstLoads: the bulk loads carry an L2 evict_first policy (session 7, call 1: 4% slower
//                 at 256Mi f32, hot and cold; kept so the figure can be reproduced).
//   kBulkStore: the sums go back to shared memory and one thread stores the tile with one
//               cp.async.bulk shared -> global.
enum class ProbeBulk { kPlainStores, kLateTrigger, kEvictFirstLoads, kBulkStore };

template <typename T, ProbeBulk kKind>
__global__ void __launch_bounds__(1024) ProbeBulkKernel(const T* __restrict__ a,
                                                        const T* __restrict__ b,
                                                        T* __restrict__ c, int64_t n,
                                                        int items_per_thread) {
#if __CUDA_ARCH__ >= 900
  namespace ptx = ::cuda::ptx;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if constexpr (kKind != ProbeBulk::kLateTrigger) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  constexpr int kVec = 16 / sizeof(T);
  const int tile = static_cast<int>(blockDim.x) * items_per_thread;
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * tile;
  const int count = static_cast<int>(min(n - offset, static_cast<int64_t>(tile)));
  const int packets = count / kVec;
  extern __shared__ __align__(128) unsigned char smem[];
  uint4* s_a = reinterpret_cast<uint4*>(smem);
  uint4* s_b = s_a + tile / kVec;
  __shared__ uint64_t bar;
  const uint32_t bytes = static_cast<uint32_t>(packets) * 16;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_proxy_async(ptx::space_shared);
    if (bytes > 0) {
      if constexpr (kKind == ProbeBulk::kEvictFirstLoads) {
        uint64_t policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        const uint32_t bar_addr = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
            "[%0], [%1], %2, [%3], %4;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(s_a))),
            "l"(a + offset), "r"(bytes), "r"(bar_addr), "l"(policy)
            : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
            "[%0], [%1], %2, [%3], %4;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(s_b))),
            "l"(b + offset), "r"(bytes), "r"(bar_addr), "l"(policy)
            : "memory");
      } else {
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, s_a, a + offset, bytes, &bar);
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, s_b, b + offset, bytes, &bar);
      }
    }
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar,
                                   2 * bytes);
  }
  __syncthreads();
  while (!ptx::mbarrier_try_wait_parity(&bar, 0)) {
  }
  uint4* c4 = reinterpret_cast<uint4*>(c + offset);
  if constexpr (kKind == ProbeBulk::kBulkStore) {
    for (int v = threadIdx.x; v < packets; v += blockDim.x) {
      s_a[v] = AddPacked<T>(s_a[v], s_b[v]);
    }
    ptx::fence_proxy_async(ptx::space_shared);  // the copy engine must see the generic writes
    __syncthreads();
    if (threadIdx.x == 0 && bytes > 0) {
      ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, c4, s_a, bytes);
      ptx::cp_async_bulk_commit_group();
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});  // shared memory stays until read
    }
  } else if constexpr (kKind == ProbeBulk::kPlainStores || kKind == ProbeBulk::kEvictFirstLoads) {
    for (int v = threadIdx.x; v < packets; v += blockDim.x) c4[v] = AddPacked<T>(s_a[v], s_b[v]);
  } else {
    for (int v = threadIdx.x; v < packets; v += blockDim.x) {
      __stcs(c4 + v, AddPacked<T>(s_a[v], s_b[v]));
    }
  }
  const int tail = packets * kVec + static_cast<int>(threadIdx.x);
  if (tail < count) c[offset + tail] = ScalarAdd(a[offset + tail], b[offset + tail]);
  if constexpr (kKind == ProbeBulk::kLateTrigger) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
#endif
}

template <typename T, ProbeBulk kKind>
int LaunchProbeBulk(const KernelBuffers& buffers, const LaunchGeometry& g, void* stream,
                    const void**) {
  auto kernel = &ProbeBulkKernel<T, kKind>;
  if (g.dynamic_shared_bytes > 48 * 1024) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             g.dynamic_shared_bytes);
        e != cudaSuccess) {
      return e;
    }
  }
  return LaunchOrReport<true>(kernel, g, stream, nullptr, buffers.at<const T>(0),
                              buffers.at<const T>(1), buffers.at<T>(2), buffers.n,
                              g.items_per_thread);
}

using Launcher = int (*)(const KernelBuffers&, const LaunchGeometry&, void*, const void**);

struct Entry {
  const char* name;
  Launcher launch;
  int element_bytes;
  bool bulk;  // dynamic shared memory = 2 x tile bytes
};

// The names are the catalog's where the launcher is the catalog's.
constexpr Entry kEntries[] = {
    {"add_f32_tuned", &LaunchAddF32Tuned, 4, false},
    {"add_f16_tuned", &LaunchAddF16Tuned, 2, false},
    {"add_bf16_tuned", &LaunchAddBF16Tuned, 2, false},
    {"add_f32_l2keep_pdl", &LaunchAddF32L2KeepPdl, 4, false},
    {"add_f16_l2keep_pdl", &LaunchAddF16L2KeepPdl, 2, false},
    {"add_bf16_l2keep_pdl", &LaunchAddBF16L2KeepPdl, 2, false},
    {"add_f32x4", &LaunchAddF32x4, 4, false},
    {"add_f32_bulk", &LaunchAddF32Bulk, 4, true},
    {"add_f32_bulk_pdl", &LaunchAddF32BulkPdl, 4, true},
    {"add_f16_bulk_pdl", &LaunchAddF16BulkPdl, 2, true},
    {"add_bf16_bulk_pdl", &LaunchAddBF16BulkPdl, 2, true},
    {"cub_add_f32", &LaunchCubAddF32, 4, false},
    {"cub_add_f16", &LaunchCubAddF16, 2, false},
    {"cub_add_bf16", &LaunchCubAddBF16, 2, false},
    {"probe_f32_bulk_plain_stores", &LaunchProbeBulk<float, ProbeBulk::kPlainStores>, 4, true},
    {"probe_f16_bulk_plain_stores", &LaunchProbeBulk<half, ProbeBulk::kPlainStores>, 2, true},
    {"probe_bf16_bulk_plain_stores", &LaunchProbeBulk<__nv_bfloat16, ProbeBulk::kPlainStores>, 2,
     true},
    {"probe_f32_bulk_late_trigger", &LaunchProbeBulk<float, ProbeBulk::kLateTrigger>, 4, true},
    {"probe_f32_bulk_evict_first_loads", &LaunchProbeBulk<float, ProbeBulk::kEvictFirstLoads>, 4,
     true},
    {"probe_f32_bulk_store", &LaunchProbeBulk<float, ProbeBulk::kBulkStore>, 4, true},
};

const Entry* Find(const char* name) {
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, name) == 0) return &e;
  }
  return nullptr;
}

BlockingState* g_state = nullptr;         // host view (pinned, mapped)
BlockingState* g_device_state = nullptr;  // device view
// The server's constants (kernels/cuda/cuda_backend.cc): 20 us least hold, 2 s timeout.
constexpr uint64_t kClockWindowNs = 20'000;
constexpr uint64_t kBlockingTimeoutNs = 2'000'000'000;

}  // namespace
}  // namespace gpubench::cuda

using gpubench::KernelBuffers;
using gpubench::LaunchGeometry;
namespace gc = gpubench::cuda;

extern "C" {

// Launches catalog (or probe) kernel `name` on `stream` as the server would for geometry
// block x items (grid = ceil(n / (block x items)); bulk kernels get 2 x tile bytes of dynamic
// shared memory; CUB picks its own). Returns -1 for an unknown name.
int gpubench_probe_launch(const char* name, void* a, void* b, void* c, long long n, int block,
                          int items, void* stream) {
  const gc::Entry* e = gc::Find(name);
  if (e == nullptr) return -1;
  KernelBuffers buffers;
  buffers.data[0] = a;
  buffers.data[1] = b;
  buffers.data[2] = c;
  buffers.count = 3;
  buffers.n = n;
  LaunchGeometry g;
  g.block_size = block;
  g.items_per_thread = items;
  const long long per_block = static_cast<long long>(block) * items;
  g.grid_size = (n + per_block - 1) / per_block;
  g.dynamic_shared_bytes = e->bulk ? static_cast<int>(2 * per_block * e->element_bytes) : 0;
  return e->launch(buffers, g, stream, nullptr);
}

// A stream made with cudaStreamCreateWithFlags(flags) (the server's: cudaStreamNonBlocking = 1),
// as an integer handle; 0 on failure.
void* gpubench_probe_stream_create(int flags) {
  cudaStream_t s = nullptr;
  return cudaStreamCreateWithFlags(&s, static_cast<unsigned>(flags)) == cudaSuccess ? s : nullptr;
}

// cudaMalloc / cudaFree for buffers outside torch's caching allocator.
void* gpubench_probe_malloc(long long bytes) {
  void* p = nullptr;
  return cudaMalloc(&p, static_cast<size_t>(bytes)) == cudaSuccess ? p : nullptr;
}
int gpubench_probe_free(void* p) { return cudaFree(p); }

// Queues the server's blocking kernel on `stream` (state in pinned mapped memory, made once).
int gpubench_probe_hold(void* stream) {
  if (gc::g_state == nullptr) {
    if (cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&gc::g_state),
                                      sizeof(gc::BlockingState), cudaHostAllocMapped);
        e != cudaSuccess) {
      return e;
    }
    if (cudaError_t e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&gc::g_device_state),
                                                 gc::g_state, 0);
        e != cudaSuccess) {
      return e;
    }
  }
  volatile gc::BlockingState* s = gc::g_state;
  s->release = 0;
  s->timed_out = 0;
  s->clock_cycles = 0;
  s->clock_ns = 0;
  return gc::LaunchBlockingKernel(gc::g_device_state, gc::kClockWindowNs, gc::kBlockingTimeoutNs,
                                  stream);
}

// Releases the blocking kernel. Call after queuing the timed work.
void gpubench_probe_release() {
  if (gc::g_state != nullptr) static_cast<volatile gc::BlockingState*>(gc::g_state)->release = 1;
}

// After the sample completed: the SM clock the blocking kernel measured, in Hz (0: none).
double gpubench_probe_clock_hz() {
  if (gc::g_state == nullptr || gc::g_state->clock_ns == 0) return 0;
  return static_cast<double>(gc::g_state->clock_cycles) /
         static_cast<double>(gc::g_state->clock_ns) * 1e9;
}

// The server's clean L2 flush: a read-only pass over `bytes` of `zeros` (zero-filled by the
// caller), `sink` a 4-byte word outside them.
int gpubench_probe_flush(const void* zeros, long long bytes, void* sink, void* stream) {
  return gc::LaunchL2ReadFlush(zeros, static_cast<uint64_t>(bytes), static_cast<uint32_t*>(sink),
                               stream);
}

}  // extern "C"
