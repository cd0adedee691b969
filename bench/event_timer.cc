// An independent timing of catalog kernels with plain CUDA events, sharing none of the engine's
// measurement code (no stopping criteria; no blocking kernel unless asked; only the cold flush
// kernel of kernels/cuda/timing.h): the cross-check that the server's figures are right.
// Prints CSV: kernel,elements,mode,reps,median_seconds,bandwidth_bytes_per_second
//
//   event_timer KERNEL ELEMENTS cold|hot [REPS]
//
// Cold: the L2 is flushed before each launch with the server's clean flush (a read-only pass over
// 2 x L2 bytes of zeros, kernels/cuda/timing.h), or EVENT_TIMER_FLUSH=memset: 2 x L2 bytes written.
// Hot: EVENT_TIMER_BATCH launches (default 100) between the events. Knobs that reproduce the
// server's hot loop one piece at a time (probe vs server at 16Mi hot,
// bench/results/2026-11-30-h200-session4.md):
//   EVENT_TIMER_BLOCK=1  hold the stream with the server's blocking kernel while the events and
//                        launches are queued (as the server does), instead of plain events.
//   EVENT_TIMER_RESET=1  cudaCtxResetPersistingL2Cache() before every cold flush (the server does).
//   EVENT_TIMER_NONBLOCKING=1  a cudaStreamNonBlocking stream (the server's) instead of a default one.
// (1Mi cold: this program's launches ran 0.3-0.4 us faster than the server's,
// bench/results/2026-11-30-h200-session4.md.)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/catalog.h"
#include "kernels/cuda/timing.h"

namespace {

#define CHECK_CUDA(call)                                                              \
  do {                                                                                \
    cudaError_t e = (call);                                                           \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(e));                                            \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: event_timer KERNEL ELEMENTS cold|hot [REPS]\n");
    return 2;
  }
  auto kernel = gpubench::FindKernel(argv[1]);
  if (!kernel.ok() || (*kernel)->cuda == nullptr) {
    std::fprintf(stderr, "unknown kernel %s\n", argv[1]);
    return 2;
  }
  const gpubench::KernelVariant& k = **kernel;
  const int64_t n = std::atoll(argv[2]);
  const bool cold = std::string(argv[3]) == "cold";
  const int reps = argc > 4 ? std::atoi(argv[4]) : 100;
  const size_t bytes = static_cast<size_t>(n) * gpubench::DTypeSize(k.dtype);

  // Random bytes that are finite numbers in every dtype: exponent bits kept small.
  std::vector<unsigned char> host(bytes);
  std::mt19937 rng(1);
  for (size_t i = 0; i < bytes; i += 4) {  // four bytes per draw: 1 GiB in about a second
    const uint32_t r = static_cast<uint32_t>(rng());
    for (size_t j = i; j < std::min(bytes, i + 4); ++j) {
      host[j] = static_cast<unsigned char>((r >> (8 * (j - i))) & 0x3b);
    }
  }
  void *a, *b, *c, *flush;
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  // EVENT_TIMER_ALLOC_BYTES: allocate each operand this large (at least its bytes), as
  // bench/l2_probe does by default; the server allocates exactly the operand's bytes (does the
  // buffers' placement explain the probe's 16Mi hot lead? bench/results/2026-11-30-h200-session7.md).
  const size_t alloc_bytes =
      std::max(bytes, static_cast<size_t>(std::max(0LL, std::atoll(
                          std::getenv("EVENT_TIMER_ALLOC_BYTES") ? std::getenv("EVENT_TIMER_ALLOC_BYTES") : "0"))));
  // EVENT_TIMER_PAD_BYTES: this many bytes more per operand (the server's placement pad).
  const size_t pad_bytes = static_cast<size_t>(EnvInt("EVENT_TIMER_PAD_BYTES", 0));
  CHECK_CUDA(cudaMalloc(&a, alloc_bytes + pad_bytes));
  CHECK_CUDA(cudaMalloc(&b, alloc_bytes + pad_bytes));
  CHECK_CUDA(cudaMalloc(&c, alloc_bytes + pad_bytes));
  std::fprintf(stderr, "buffers a=%p b=%p c=%p (b-a=%lld c-b=%lld bytes)\n", a, b, c,
               static_cast<long long>(static_cast<char*>(b) - static_cast<char*>(a)),
               static_cast<long long>(static_cast<char*>(c) - static_cast<char*>(b)));
  const size_t flush_bytes = 2 * static_cast<size_t>(l2) / 16 * 16;
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes + 16));
  CHECK_CUDA(cudaMemset(flush, 0, flush_bytes + 16));
  const char* flush_env = std::getenv("EVENT_TIMER_FLUSH");
  const bool memset_flush = flush_env != nullptr && std::string(flush_env) == "memset";
  const bool block = EnvInt("EVENT_TIMER_BLOCK", 0) != 0;
  void* block_state = nullptr;  // the blocking kernel's state, host-mapped
  CHECK_CUDA(
      cudaHostAlloc(&block_state, sizeof(gpubench::cuda::BlockingState), cudaHostAllocMapped));
  auto* state = static_cast<volatile gpubench::cuda::BlockingState*>(block_state);
  void* device_state = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(&device_state, block_state, 0));
  CHECK_CUDA(cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, host.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(c, host.data(), bytes, cudaMemcpyHostToDevice));

  // The family's buffers in its order (add: a, b, c; SAXPY: x, y; copy: src, dst), n each.
  gpubench::KernelBuffers buffers;
  void* const pointers[] = {a, b, c};
  buffers.count = static_cast<int>(k.family->buffers.size());
  for (int i = 0; i < buffers.count && i < 3; ++i) {
    buffers.data[i] = pointers[i];
    buffers.elements[i] = n;
  }
  buffers.n = n;
  buffers.shape.elements = n;
  gpubench::LaunchGeometry g;
  // EVENT_TIMER_BLOCK_SIZE / EVENT_TIMER_ITEMS override the catalog's default launch policy.
  g.block_size = EnvInt("EVENT_TIMER_BLOCK_SIZE", k.default_policy.block_size);
  g.items_per_thread = EnvInt("EVENT_TIMER_ITEMS", k.default_policy.items_per_thread);
  g.dynamic_shared_bytes =
      static_cast<int>(gpubench::DynamicSharedBytes(k, g.block_size, g.items_per_thread));
  g.grid_size = (n + int64_t{g.block_size} * g.items_per_thread - 1) /
                (int64_t{g.block_size} * g.items_per_thread);
  if (k.default_policy.grid_stride) {  // the engine's resident grid (run_spec.cc)
    int sms = 0, per_sm = 0;
    const void* symbol = nullptr;
    k.cuda(buffers, g, nullptr, &symbol);
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, symbol, g.block_size, 0));
    if (k.default_policy.max_resident_blocks_per_sm > 0) {
      per_sm = std::min(per_sm, k.default_policy.max_resident_blocks_per_sm);
    }
    g.grid_size = std::max<int64_t>(1, std::min(g.grid_size, int64_t{sms} * per_sm));
  }
  cudaStream_t stream;
  if (EnvInt("EVENT_TIMER_NONBLOCKING", 0) != 0) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  } else {
    CHECK_CUDA(cudaStreamCreate(&stream));
  }
  const bool reset_persisting = EnvInt("EVENT_TIMER_RESET", 0) != 0;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 5; ++i) CHECK_CUDA(static_cast<cudaError_t>(k.cuda(buffers, g, stream, nullptr)));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  const int batch = cold ? 1 : std::max(1, EnvInt("EVENT_TIMER_BATCH", 100));
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    if (cold && reset_persisting) CHECK_CUDA(cudaCtxResetPersistingL2Cache());
    if (cold && memset_flush) {
      CHECK_CUDA(cudaMemsetAsync(flush, r & 0xff, flush_bytes, stream));
    } else if (cold) {
      auto* bytes = static_cast<unsigned char*>(flush);
      CHECK_CUDA(static_cast<cudaError_t>(gpubench::cuda::LaunchL2ReadFlush(
          bytes, flush_bytes, reinterpret_cast<uint32_t*>(bytes + flush_bytes), stream)));
    }
    if (block) {
      state->release = 0;
      state->timed_out = 0;
      CHECK_CUDA(static_cast<cudaError_t>(gpubench::cuda::LaunchBlockingKernel(
          static_cast<gpubench::cuda::BlockingState*>(device_state), 20'000, 2'000'000'000,
          stream)));
    }
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < batch; ++i) {
      CHECK_CUDA(static_cast<cudaError_t>(k.cuda(buffers, g, stream, nullptr)));
    }
    CHECK_CUDA(cudaEventRecord(stop, stream));
    state->release = 1;
    CHECK_CUDA(cudaEventSynchronize(stop));
    if (block && state->timed_out != 0) {
      std::fprintf(stderr, "the blocking kernel timed out\n");
      return 1;
    }
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    seconds.push_back(ms * 1e-3 / batch);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf("%s,%lld,%s,%d,%.9g,%.6g\n", argv[1], static_cast<long long>(n), cold ? "cold" : "hot",
              reps, median, static_cast<double>(n) * gpubench::BytesPerElement(k) / median);
  return 0;
}
