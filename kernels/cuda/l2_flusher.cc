#include "kernels/cuda/l2_flusher.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/timing.h"

namespace gpubench::cuda {

void ResetPersistingL2Lines() {
  if (cudaCtxResetPersistingL2Cache() != cudaSuccess) cudaGetLastError();
}

absl::StatusOr<std::unique_ptr<L2Flusher>> L2Flusher::Create(int64_t l2_cache_bytes, L2Flush mode,
                                                             bool reset_persisting,
                                                             cudaStream_t stream) {
  const size_t l2_bytes = static_cast<size_t>(std::max<int64_t>(l2_cache_bytes, 1 << 20)) / 16 * 16;
  // Reading just L2's size can leave lines of the run resident (set conflicts): read twice that.
  const size_t bytes = mode == L2Flush::kClean ? 2 * l2_bytes : l2_bytes;
  std::unique_ptr<L2Flusher> flusher(new L2Flusher(mode, reset_persisting, bytes));
  // Zeros, plus a 16-byte tail outside the flushed bytes for the read pass's never-taken store.
  const cudaError_t e = cudaMalloc(&flusher->buffer_, bytes + 16);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it
    return absl::ResourceExhaustedError(
        absl::StrCat("cudaMalloc of the ", bytes + 16, "-byte L2 flush buffer: out of memory"));
  }
  CUDA_RETURN_IF_ERROR(e);
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flusher->buffer_, 0, bytes + 16, stream));
  return flusher;
}

L2Flusher::~L2Flusher() {
  if (buffer_ != nullptr) cudaFree(buffer_);
}

// Lines a kernel marked evict_last can survive the flush: those variants first return them to
// normal (a context-wide call). Other variants skip the reset, which slowed the next launch.
absl::Status L2Flusher::Flush(cudaStream_t stream) {
  if (reset_persisting_) ResetPersistingL2Lines();
  if (mode_ == L2Flush::kMemset) {
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(buffer_, ++value_ & 0xff, bytes_, stream));
  } else {
    auto* bytes = static_cast<unsigned char*>(buffer_);
    CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(
        LaunchL2ReadFlush(bytes, bytes_, reinterpret_cast<uint32_t*>(bytes + bytes_), stream)));
  }
  return absl::OkStatus();
}

}  // namespace gpubench::cuda
