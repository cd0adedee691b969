// Empties the L2 of a run's data before a cold sample (L2Flush). Host-only header. Not
// thread-safe: one session's.
#ifndef GPUBENCH_KERNELS_CUDA_L2_FLUSHER_H_
#define GPUBENCH_KERNELS_CUDA_L2_FLUSHER_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace gpubench::cuda {

// Returns L2 lines marked persisting (evict_last) to normal. Best effort: where the driver
// refuses, the error is cleared so that the next launch check does not report it, and a cold
// sample relies on the flush alone.
void ResetPersistingL2Lines();

class L2Flusher {
 public:
  // A flusher for a device with `l2_cache_bytes` of L2 (at least 1 MiB is assumed), its buffer
  // allocated on the current device and zeroed on `stream`. `reset_persisting`: the run's kernel
  // marks lines evict_last (KernelVariant::l2_evict_last), so every flush first resets them.
  static absl::StatusOr<std::unique_ptr<L2Flusher>> Create(int64_t l2_cache_bytes, L2Flush mode,
                                                           bool reset_persisting,
                                                           cudaStream_t stream);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;

  // Enqueues the flush on `stream`. By default (kClean) a read of 2 x L2 of zeros, which writes
  // back every dirty line before the timed window and leaves only clean lines; kMemset writes an
  // L2-sized buffer, a new value each time (nvbench's flush).
  absl::Status Flush(cudaStream_t stream);

 private:
  L2Flusher(L2Flush mode, bool reset_persisting, size_t bytes)
      : mode_(mode), reset_persisting_(reset_persisting), bytes_(bytes) {}

  const L2Flush mode_;
  const bool reset_persisting_;
  const size_t bytes_;  // flushed per call; the buffer has a 16-byte sink after them
  void* buffer_ = nullptr;
  int value_ = 0;
};

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_L2_FLUSHER_H_
