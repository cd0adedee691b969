// The buffers of one CUDA run: each buffer of the family where its declaration places it (device,
// pinned or pageable host memory, the peer device), the placement copies that cold samples rotate
// over, their generated contents, and the poison written before a verified launch. Host-only
// header. Not thread-safe: one session's, used by its device's worker thread.
#ifndef GPUBENCH_KERNELS_CUDA_DEVICE_BUFFERS_H_
#define GPUBENCH_KERNELS_CUDA_DEVICE_BUFFERS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "kernels/backend.h"
#include "kernels/buffer_cache.h"
#include "kernels/catalog.h"
#include "kernels/launch.h"

namespace gpubench::cuda {

// One buffer of a run, where its family's declaration places it. Frees itself.
//
// A device buffer of kPlacementPadMinBytes or more gets the run's placement pad (HostData::
// placement_pad_bytes) of unused space after it, so that a run's buffers do not sit exactly one
// buffer size apart (L2 set aliasing between operands: bench/results/2026-11-30-h200-session5.md).
// No pad by default: an application's allocator places buffers back to back, as cudaMalloc does.
// Memory admission (server/engine/run_memory.h) counts the pad.
class PlacedBuffer {
 public:
  PlacedBuffer() = default;
  PlacedBuffer(const PlacedBuffer&) = delete;
  PlacedBuffer& operator=(const PlacedBuffer&) = delete;
  ~PlacedBuffer() { Free(); }

  // Allocates `bytes` (at least 256) at `placement`; `device` owns device memory (the run's or
  // its peer). Leaves `run_device` current. RESOURCE_EXHAUSTED when out of memory.
  absl::Status Allocate(Placement placement, size_t bytes, int device, int run_device,
                        size_t placement_pad_bytes);

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool on_host() const {
    return placement_ == Placement::kHostPinned || placement_ == Placement::kHostPageable;
  }
  int owner() const { return owner_; }

 private:
  void Free();

  Placement placement_ = Placement::kDevice;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  int owner_ = -1;
};

// Every copy's allocation of every buffer: [copy][buffer].
using Allocations = std::vector<std::vector<std::unique_ptr<PlacedBuffer>>>;
// Allocations kept between the runs of a sweep on one device (HostData::reuse_chain).
using DeviceBufferCache = BufferCache<Allocations>;

class RunBuffers {
 public:
  // `variant` and `data` must outlive this object; nothing is allocated yet.
  RunBuffers(int device, const KernelVariant& variant, const HostData& data);

  // Allocates every copy (HostData::placements) of every buffer, or takes `kept` (a previous
  // run's allocations with this run's key()) instead, fills the inputs of every copy (generated
  // on the device where GeneratedOnDevice, else uploaded), resets the outputs of every copy and
  // selects copy 0. Peer access is enabled first where the family has a peer buffer. Complete
  // (synchronized) on return. Kept allocations are filled exactly as new ones: whatever the
  // previous run's kernel left in them is overwritten before any launch of this run.
  absl::Status Allocate(cudaStream_t stream, std::optional<Allocations> kept = std::nullopt);

  // What makes this run's allocations interchangeable with another's (kernels/buffer_cache.h).
  const BufferKey& key() const { return key_; }
  // Whether Allocate took kept allocations.
  bool reused() const { return reused_; }
  // The allocations, for the device's cache; nothing is selected or launchable afterwards.
  Allocations TakeAllocations() { return std::move(copies_); }

  // What a launch gets: the selected copy's pointers, the elements, the setup's state.
  KernelBuffers& launch_buffers() { return buffers_; }
  const KernelBuffers& launch_buffers() const { return buffers_; }

  // Placement copies, and which one launches use (0: the first allocation).
  size_t copies() const { return copies_.size(); }
  void Select(size_t copy);
  // The copy the next cold sample runs on: 0, 1, ..., copies() - 1, 0, ...
  void SelectNextCold() { Select(next_cold_copy_++ % copies()); }

  // In-out buffers from their generated contents (SAXPY's y); outputs all-ones bytes (NaN in
  // every floating dtype), so an element a kernel never writes fails verification. The selected
  // copy, on `stream` (a host or peer output synchronously).
  absl::Status ResetOutputs(cudaStream_t stream);

  // Every input and in-out of the selected copy generated on the device from `seed` instead of
  // the run's (the timed-sample check's fresh inputs, and their restoration), on `stream`.
  // FAILED_PRECONDITION where a buffer is not GeneratedOnDevice.
  absl::Status Regenerate(uint64_t seed, cudaStream_t stream);

  // Copies the selected copy's outputs and in-outs into (*out)[i]; inputs stay empty.
  absl::Status ReadVerified(cudaStream_t stream, BufferContents* out);

  // Buffer `i` of copy `copy`.
  const PlacedBuffer& buffer(size_t copy, size_t i) const { return *copies_[copy][i]; }

 private:
  absl::Status AllocateCopy(cudaStream_t stream, std::vector<std::unique_ptr<PlacedBuffer>>* copy);
  absl::Status FillInputs(cudaStream_t stream,
                          const std::vector<std::unique_ptr<PlacedBuffer>>& copy);
  absl::Status Fill(int buffer, void* data, cudaStream_t stream, bool async);
  absl::Status EnablePeerAccess();

  const int device_;
  const KernelVariant& variant_;
  const HostData& data_;
  const BufferKey key_;
  Allocations copies_;  // [copy][buffer]
  bool reused_ = false;
  size_t selected_ = 0;
  size_t next_cold_copy_ = 0;
  KernelBuffers buffers_;
};

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_DEVICE_BUFFERS_H_
