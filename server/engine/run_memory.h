// Memory admission: what one run allocates on the host and on the device, and whether it fits.
#ifndef GPUBENCH_SERVER_ENGINE_RUN_MEMORY_H_
#define GPUBENCH_SERVER_ENGINE_RUN_MEMORY_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "server/engine/run_spec.h"

namespace gpubench {

// Every buffer one run allocates: on the host (generated inputs, the read-back for verification)
// and on the device (the kernel's buffers; host memory too on the CPU backend), where each device
// (or peer-device) buffer of at least kPlacementPadMinBytes counts `placement_pad_bytes` more: the
// pad the backend leaves after it (PlacementPadOn). Device buffers count `placements` times (the
// copies cold samples rotate over, PlacementsOn).
struct RunMemory {
  int64_t host_bytes = 0;
  int64_t device_bytes = 0;
};
RunMemory RunMemoryOf(const KernelVariant& kernel, const RunShape& shape, bool verify,
                      int64_t placement_pad_bytes, int placements = 1);

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

// What `spec` allocates on a backend that can (`can`), the placement pad and copies as that
// backend applies them (the admission at resolve and the one at run start both count it so).
inline RunMemory RunMemoryOf(const RunSpec& spec, const BackendCapabilities& can) {
  return RunMemoryOf(*spec.kernel, spec.shape, spec.verify,
                     PlacementPadOn(can, spec.measurement.placement_pad_bytes),
                     PlacementsOn(can, spec.measurement.placements));
}

// OK when a run needing `need` fits: host bytes (plus device bytes where the device is the host)
// within `host_available_bytes` (absent: unknown, not checked), device bytes within the device's
// free memory. RESOURCE_EXHAUSTED saying which budget is short, before anything is allocated.
absl::Status CheckRunMemoryFits(const RunMemory& need, const DeviceInfo& device,
                                bool device_is_host, std::optional<int64_t> host_available_bytes,
                                absl::string_view host_budget_description);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RUN_MEMORY_H_
