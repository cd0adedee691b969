// Buffers kept from one run for the next run of the same sweep on the same device (HostData::
// reuse_chain): an allocation cache of one entry per device, which both backends use. Host-only
// header, inline: the CUDA backend is a library below the kernels library.
#ifndef GPUBENCH_KERNELS_BUFFER_CACHE_H_
#define GPUBENCH_KERNELS_BUFFER_CACHE_H_

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "kernels/catalog.h"

namespace gpubench {

// What makes two runs' buffers interchangeable: per buffer its placement, bytes and the device
// whose memory holds it, the placement pad and the number of placement copies, as the backend
// applies them. Roles, dtypes and generators are not in it: every run refills its inputs and
// in-outs and poisons its outputs (kernels/backend.h, Session), whatever the memory held before.
struct BufferKey {
  struct Buffer {
    Placement placement = Placement::kDevice;
    int64_t bytes = 0;
    int owner = -1;  // the device whose memory holds it; -1: the host
    bool operator==(const Buffer&) const = default;
  };
  std::vector<Buffer> buffers;
  int64_t placement_pad_bytes = 0;  // 0 where no buffer gets a pad
  int copies = 1;
  bool operator==(const BufferKey&) const = default;
};

// The key of a run of `variant` at `shape` on `device` (a peer buffer's memory on
// `peer_device`) with `placement_pad_bytes` and `copies` as the backend applies them (the CPU
// backend: 0 and 1).
inline BufferKey BufferKeyOf(const KernelVariant& variant, const RunShape& shape, int device,
                             int peer_device, int64_t placement_pad_bytes, int copies) {
  BufferKey key;
  key.copies = std::max(copies, 1);
  bool padded = false;
  const KernelFamily& family = *variant.family;
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    const Placement p = family.buffers[i].placement;
    const int64_t bytes = BufferBytes(variant, shape, static_cast<int>(i));
    const bool on_device = p == Placement::kDevice || p == Placement::kPeerDevice;
    padded = padded || (on_device && bytes >= kPlacementPadMinBytes);
    key.buffers.push_back({.placement = p,
                           .bytes = bytes,
                           .owner = p == Placement::kPeerDevice ? peer_device
                                    : on_device                 ? device
                                                                : -1});
  }
  key.placement_pad_bytes = padded ? placement_pad_bytes : 0;
  return key;
}

// One device's kept buffers: at most one run's, tagged with its chain and key. `Buffers` frees
// itself when destroyed (the backend's allocations). Thread-safe: the device's run thread takes
// and puts; a release may come from another thread (the worker's reader).
template <typename Buffers>
class BufferCache {
 public:
  // The buffers kept for `chain` (0: none) where `key` matches. Otherwise whatever is kept is
  // freed first, so that a run that does not match never finds memory held for another.
  std::optional<Buffers> Take(uint64_t chain, const BufferKey& key) {
    std::optional<Buffers> taken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      taken.swap(buffers_);
      if (taken.has_value() && chain != 0 && chain == chain_ && key == key_) return taken;
    }
    taken.reset();  // freed outside the lock: cudaFree synchronizes with the device
    return std::nullopt;
  }

  // Keeps `buffers` for the next run of `chain` with `key`, freeing what was kept before.
  void Put(uint64_t chain, BufferKey key, Buffers buffers) {
    std::optional<Buffers> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      old.swap(buffers_);
      chain_ = chain;
      key_ = std::move(key);
      buffers_.emplace(std::move(buffers));
    }
  }

  // Frees whatever is kept. True when something was.
  bool Release() {
    std::optional<Buffers> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      old.swap(buffers_);
    }
    return old.has_value();
  }

  bool holds() const {
    std::lock_guard<std::mutex> lock(mu_);
    return buffers_.has_value();
  }

 private:
  mutable std::mutex mu_;
  uint64_t chain_ = 0;
  BufferKey key_;
  std::optional<Buffers> buffers_;
};

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_BUFFER_CACHE_H_
