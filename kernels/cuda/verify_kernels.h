// Device helpers of on-device verification (kernels/cuda/device_verify.h) besides the families'
// references: gathering the host cross-check's sample, the output hash's per-chunk hashes and
// the placement copies' byte comparison. Host-only header, no CUDA types; each returns the
// launch's cudaError_t as an int and enqueues on `stream` (a cudaStream_t).
#ifndef GPUBENCH_KERNELS_CUDA_VERIFY_KERNELS_H_
#define GPUBENCH_KERNELS_CUDA_VERIFY_KERNELS_H_

#include <cstdint>

namespace gpubench::cuda {

// out[j] = element indices[j] of `in` (elements of `element_bytes` bytes), j < count. `indices`
// and `out` are device memory.
int LaunchGather(const void* in, int element_bytes, const int64_t* indices, int count, void* out,
                 void* stream);

// The OutputHash chunk hashes (kernels/reference.h, kOutputHashChunkBytes chunks) of `bytes`
// bytes at `data` (8-byte aligned device memory) into out[0, chunks).
int LaunchChunkHashes(const void* data, int64_t bytes, uint64_t* out, void* stream);

// Adds to *count (device memory) the number of 8-byte words (and tail bytes) in which `a` and `b`
// differ over `bytes` bytes.
int LaunchCountDifferences(const void* a, const void* b, int64_t bytes, unsigned long long* count,
                           void* stream);

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_VERIFY_KERNELS_H_
