// An independent timing of catalog kernels with plain CUDA events, sharing none of the engine's
// measurement code (no blocking kernel, no stopping criteria): the cross-check that the server's
// figures are right. Prints CSV: kernel,elements,mode,reps,median_seconds,bandwidth_bytes_per_second
//
//   event_timer KERNEL ELEMENTS cold|hot [REPS]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/catalog.h"

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
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(rng() & 0x3b);
  void *a, *b, *c, *flush;
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  CHECK_CUDA(cudaMalloc(&flush, 2 * static_cast<size_t>(l2)));
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
  g.block_size = k.default_policy.block_size;
  g.items_per_thread = k.default_policy.items_per_thread;
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
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 5; ++i) CHECK_CUDA(static_cast<cudaError_t>(k.cuda(buffers, g, stream, nullptr)));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  const int batch = cold ? 1 : 100;
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    if (cold) CHECK_CUDA(cudaMemsetAsync(flush, r & 0xff, 2 * static_cast<size_t>(l2), stream));
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < batch; ++i) {
      CHECK_CUDA(static_cast<cudaError_t>(k.cuda(buffers, g, stream, nullptr)));
    }
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
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
