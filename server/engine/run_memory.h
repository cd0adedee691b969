// Memory admission: what one run allocates on the host and on the device, and whether it fits.
#ifndef GPUBENCH_SERVER_ENGINE_RUN_MEMORY_H_
#define GPUBENCH_SERVER_ENGINE_RUN_MEMORY_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kernels/backend.h"
#include "kernels/buffer_cache.h"
#include "kernels/catalog.h"
#include "server/engine/run_spec.h"

namespace gpubench {

// Every buffer one run allocates: on the host (generated inputs, the read-back for verification,
// host-placed buffers) and on the device (the kernel's buffers and the cache flush buffer; host
// memory too on the CPU backend), where each device (or peer-device) buffer of at least
// kPlacementPadMinBytes counts `placement_pad_bytes` more: the pad the backend leaves after it
// (PlacementPadOn). The kernel's buffers count `placements` times (the copies cold samples rotate
// over, PlacementsOn), wherever they are placed.
struct RunMemory {
  int64_t host_bytes = 0;
  int64_t device_bytes = 0;  // includes flush_bytes
  int64_t flush_bytes = 0;  // the cache flush buffer, on the device (the host's on the CPU backend)
};
// Whether a run on a backend that generates inputs on the device (generates_inputs_on_device)
// makes no host copy of the inputs it generates there: where it verifies on the device too (the
// cross-check makes its sampled elements itself) or does not verify. MeasureRun and RunMemoryOf
// both follow it.
inline bool HostInputsUnneeded(bool generates_inputs_on_device, const KernelVariant& kernel,
                               bool verify) {
  return generates_inputs_on_device && (!verify || VerifiableOnDevice(kernel));
}

// The run's own buffers as a session allocates them (every placement copy, each device buffer's
// pad; host-placed buffers in host_bytes, device and peer-device ones in device_bytes): what a
// device's cache keeps between the runs of a sweep (Session::KeepBuffers). No flush buffer, host
// inputs or read-back.
RunMemory SessionBuffersOf(const KernelVariant& kernel, const RunShape& shape,
                           int64_t placement_pad_bytes, int placements);

// `on_device`: the backend generates inputs on the device (generates_inputs_on_device) and
// verifies there where the kernel allows it, so the host makes no copy of the inputs it generates
// there (where verification needs none) and reads no output back whole (MeasureRun skips both).
RunMemory RunMemoryOf(const KernelVariant& kernel, const RunShape& shape, bool verify,
                      int64_t placement_pad_bytes, int placements = 1, bool on_device = false);

// The placement pad a backend that can (`can`) allocates for a run that asks for
// `placement_pad_bytes`: all of it where it pads buffers, none where it ignores the pad.
inline int64_t PlacementPadOn(const BackendCapabilities& can, int64_t placement_pad_bytes) {
  return can.placement_pads ? placement_pad_bytes : 0;
}

// The copies of the device buffers a backend allocates for a run that asks for `placements`
// (0: one): all of them where it rotates copies, one where it ignores the option.
inline int PlacementsOn(const BackendCapabilities& can, int placements) {
  return !can.placement_copies || placements < 1 ? 1 : placements;
}

// The cache flush buffer a backend that can (`can`) allocates for a run on `device`: on a GPU always
// (allocated and zeroed at Open), 2x L2 for the "clean" read pass, 1x for memset, plus a 16-byte
// tail; on the CPU backend 2x the last-level cache (at least 4 MiB), written by cold samples
// only (a hot run never touches its pages, so they cost no memory).
int64_t FlushBytesOn(const BackendCapabilities& can, const DeviceInfo& device, CacheMode cache_mode,
                     L2Flush l2_flush);

// What `spec` allocates on a backend that can (`can`) for a run on `device`: the placement pad and
// copies as that backend applies them, and its flush buffer (the admission at resolve and the one
// at run start both count it this way). `reuses_kept_buffers`: the run takes the buffers its
// device kept from the previous run of its sweep chain (DeviceWorker); they are allocated already,
// so already out of the free memory the device and the host report, and are not counted again
// (SessionBuffersOf is left out).
RunMemory RunMemoryOf(const RunSpec& spec, const BackendCapabilities& can, const DeviceInfo& device,
                      bool reuses_kept_buffers = false);

// The BufferKey (kernels/buffer_cache.h) of `spec`'s buffers as a backend that can (`can`)
// allocates them: the placement pad and copies as it applies them. Two runs of one sweep chain
// with the same key can share their buffers.
BufferKey BufferKeyOf(const RunSpec& spec, const BackendCapabilities& can);

// Host memory kept free beyond what a run counts: 64 MiB plus 1/32 of the run's host bytes. What
// the count cannot see grows with the run: the page tables of what it touches, malloc's rounding
// and the thread pool's stacks, the result and its samples, socket buffers, and whatever the
// server and the other processes of the cgroup allocate between the check and the run's peak.
// Without it a run counted to fit just under the limit was OOM-killed (admission kept none).
int64_t HostHeadroomBytes(int64_t host_need_bytes);

// OK when a run needing `need` fits: host bytes (plus device bytes where the device is the host)
// and their HostHeadroomBytes within `host_available_bytes` (absent: unknown, not checked), device
// bytes within the device's free memory. RESOURCE_EXHAUSTED saying which budget is short, before
// anything is allocated.
absl::Status CheckRunMemoryFits(const RunMemory& need, const DeviceInfo& device,
                                bool device_is_host, std::optional<int64_t> host_available_bytes,
                                absl::string_view host_budget_description);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RUN_MEMORY_H_
