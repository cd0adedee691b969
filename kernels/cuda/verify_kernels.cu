// The sample gather, the output hash's chunk hashes and the placement copies' comparison of
// on-device verification (kernels/cuda/verify_kernels.h).
#include <cuda_runtime.h>

#include <algorithm>

#include "common/splitmix64.h"
#include "kernels/cuda/verify_kernels.h"

namespace gpubench::cuda {
namespace {

// kernels/reference.cc's OutputHash chunk (kOutputHashChunkBytes there).
constexpr int64_t kChunkBytes = int64_t{1} << 20;

__global__ void GatherKernel(const unsigned char* __restrict__ in, int element_bytes,
                             const int64_t* __restrict__ indices, int count,
                             unsigned char* __restrict__ out) {
  const int j = static_cast<int>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const unsigned char* from = in + indices[j] * element_bytes;
  for (int k = 0; k < element_bytes; ++k) out[j * element_bytes + k] = from[k];
}

// One chunk per thread, as the host hashes it: the words in order, a dependent chain, then the
// zero-extended little-endian tail. The loads of a group are issued before the chain uses them.
__global__ void ChunkHashKernel(const unsigned char* __restrict__ data, int64_t bytes,
                                int64_t chunks, uint64_t* __restrict__ out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= chunks) return;
  const int64_t from = c * kChunkBytes;
  const int64_t to = min(bytes, from + kChunkBytes);
  uint64_t h = SplitMix64Hash(static_cast<uint64_t>(c));
  const auto* words = reinterpret_cast<const unsigned long long*>(data + from);
  const int64_t full = (to - from) / 8;
  constexpr int kGroup = 16;
  int64_t w = 0;
  for (; w + kGroup <= full; w += kGroup) {
    unsigned long long v[kGroup];
#pragma unroll
    for (int k = 0; k < kGroup; ++k) v[k] = __ldg(words + w + k);
#pragma unroll
    for (int k = 0; k < kGroup; ++k) h = SplitMix64Mix(h ^ v[k]) + kSplitMix64Gamma;
  }
  for (; w < full; ++w) h = SplitMix64Mix(h ^ __ldg(words + w)) + kSplitMix64Gamma;
  const int64_t at = from + full * 8;
  uint64_t tail = 0;
  for (int64_t k = 0; k < to - at; ++k) tail |= static_cast<uint64_t>(data[at + k]) << (8 * k);
  out[c] = SplitMix64Mix(h ^ tail ^ static_cast<uint64_t>(to - at));
}

__global__ void CountDifferencesKernel(const unsigned char* __restrict__ a,
                                       const unsigned char* __restrict__ b, int64_t bytes,
                                       unsigned long long* count) {
  const int64_t words = bytes / 8;
  const auto* wa = reinterpret_cast<const unsigned long long*>(a);
  const auto* wb = reinterpret_cast<const unsigned long long*>(b);
  unsigned long long differ = 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < words; i += step) differ += wa[i] != wb[i];
  for (int64_t i = words * 8 + first; i < bytes; i += step) differ += a[i] != b[i];
  if (differ > 0) atomicAdd(count, differ);
}

}  // namespace

int LaunchGather(const void* in, int element_bytes, const int64_t* indices, int count, void* out,
                 void* stream) {
  if (count <= 0) return cudaSuccess;
  GatherKernel<<<(count + 127) / 128, 128, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(in), element_bytes, indices, count,
      static_cast<unsigned char*>(out));
  return cudaGetLastError();
}

int LaunchChunkHashes(const void* data, int64_t bytes, uint64_t* out, void* stream) {
  const int64_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  if (chunks <= 0) return cudaSuccess;
  // Small blocks: a chunk's chain is long and serial, so spread the chunks over many SMs.
  constexpr int kBlock = 32;
  ChunkHashKernel<<<static_cast<unsigned>((chunks + kBlock - 1) / kBlock), kBlock, 0,
                    static_cast<cudaStream_t>(stream)>>>(static_cast<const unsigned char*>(data),
                                                         bytes, chunks, out);
  return cudaGetLastError();
}

int LaunchCountDifferences(const void* a, const void* b, int64_t bytes, unsigned long long* count,
                           void* stream) {
  if (bytes <= 0) return cudaSuccess;
  const int64_t blocks = std::clamp<int64_t>((bytes / 8 + 255) / 256, 1, 8192);
  CountDifferencesKernel<<<static_cast<unsigned>(blocks), 256, 0,
                           static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), bytes, count);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
