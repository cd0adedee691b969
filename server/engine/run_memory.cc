#include "server/engine/run_memory.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"

namespace gpubench {

RunMemory RunMemoryOf(const KernelVariant& kernel, const RunShape& shape, bool verify,
                      int64_t placement_pad_bytes, int placements) {
  RunMemory need;
  const std::span<const BufferSpec> buffers = kernel.family->buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int64_t bytes = BufferBytes(kernel, shape, static_cast<int>(i));
    // GenerateHostData: inputs and in-outs; the read-back of outputs and in-outs when verifying.
    if (buffers[i].role != BufferRole::kOutput) need.host_bytes += bytes;
    if (verify && IsVerified(buffers[i])) need.host_bytes += bytes;
    // The session's own buffer, on a device or (pinned / pageable) on the host.
    const Placement p = buffers[i].placement;
    if (p == Placement::kDevice || p == Placement::kPeerDevice) {
      need.device_bytes += std::max(placements, 1) *
                           (bytes + (bytes >= kPlacementPadMinBytes ? placement_pad_bytes : 0));
    } else {
      need.host_bytes += bytes;
    }
  }
  return need;
}

absl::Status CheckRunMemoryFits(const RunMemory& need, const DeviceInfo& device,
                                bool device_is_host, std::optional<int64_t> host_available_bytes,
                                absl::string_view host_budget_description) {
  const int64_t host_need = need.host_bytes + (device_is_host ? need.device_bytes : 0);
  if (host_available_bytes.has_value() && host_need > *host_available_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this run needs ", host_need, " bytes of host memory (",
        device_is_host ? "inputs, the cpu backend's buffers and the read-back"
                       : "inputs and the read-back",
        "); the host can give ", *host_available_bytes, " (", host_budget_description,
        "); use fewer elements"));
  }
  if (!device_is_host && device.free_memory_bytes > 0 &&
      need.device_bytes > device.free_memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this run needs ", need.device_bytes, " bytes of device memory; device ", device.index,
        " has ", device.free_memory_bytes, " bytes free; use fewer elements"));
  }
  return absl::OkStatus();
}

}  // namespace gpubench
