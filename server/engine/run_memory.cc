#include "server/engine/run_memory.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"

namespace gpubench {

RunMemory SessionBuffersOf(const KernelVariant& kernel, const RunShape& shape,
                           int64_t placement_pad_bytes, int placements) {
  RunMemory held;
  const std::span<const BufferSpec> buffers = kernel.family->buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int64_t bytes = BufferBytes(kernel, shape, static_cast<int>(i));
    // On a device or (pinned / pageable) on the host; every copy allocates its own.
    const Placement p = buffers[i].placement;
    if (p == Placement::kDevice || p == Placement::kPeerDevice) {
      held.device_bytes += std::max(placements, 1) *
                           (bytes + (bytes >= kPlacementPadMinBytes ? placement_pad_bytes : 0));
    } else {
      held.host_bytes += std::max(placements, 1) * bytes;
    }
  }
  return held;
}

RunMemory RunMemoryOf(const KernelVariant& kernel, const RunShape& shape, bool verify,
                      int64_t placement_pad_bytes, int placements, bool on_device) {
  RunMemory need = SessionBuffersOf(kernel, shape, placement_pad_bytes, placements);
  const std::span<const BufferSpec> buffers = kernel.family->buffers;
  // The device check instead of a whole read-back.
  const bool verified_on_device = on_device && verify && VerifiableOnDevice(kernel);
  const bool host_inputs_unneeded = HostInputsUnneeded(on_device, kernel, verify);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int64_t bytes = BufferBytes(kernel, shape, static_cast<int>(i));
    // GenerateHostData: inputs and in-outs; the read-back of outputs and in-outs when verifying.
    if (buffers[i].role != BufferRole::kOutput &&
        !(host_inputs_unneeded && GeneratedOnDevice(buffers[i]))) {
      need.host_bytes += bytes;
    }
    if (verify && IsVerified(buffers[i]) && !verified_on_device) need.host_bytes += bytes;
  }
  return need;
}

int64_t FlushBytesOn(const BackendCapabilities& can, const DeviceInfo& device, CacheMode cache_mode,
                     L2Flush l2_flush) {
  if (can.device_is_host) {
    if (cache_mode != CacheMode::kCold) return 0;
    return 2 * std::max({device.l3_cache_bytes, device.l2_cache_bytes, int64_t{4} << 20});
  }
  const int64_t l2 = std::max<int64_t>(device.l2_cache_bytes, 1 << 20) / 16 * 16;
  return (l2_flush == L2Flush::kClean ? 2 * l2 : l2) + 16;
}

RunMemory RunMemoryOf(const RunSpec& spec, const BackendCapabilities& can, const DeviceInfo& device,
                      bool reuses_kept_buffers) {
  const int64_t pad = PlacementPadOn(can, spec.measurement.placement_pad_bytes);
  const int placements = PlacementsOn(can, spec.measurement.placements);
  RunMemory need = RunMemoryOf(*spec.kernel, spec.shape, spec.verify, pad, placements,
                               can.generates_inputs_on_device);
  if (reuses_kept_buffers) {
    const RunMemory kept = SessionBuffersOf(*spec.kernel, spec.shape, pad, placements);
    need.host_bytes -= kept.host_bytes;
    need.device_bytes -= kept.device_bytes;
  }
  // The flush buffer is the session's own, never kept: allocated anew by every run.
  need.flush_bytes = FlushBytesOn(can, device, spec.cache_mode,
                                  spec.measurement.l2_flush.value_or(L2Flush::kClean));
  need.device_bytes += need.flush_bytes;
  return need;
}

BufferKey BufferKeyOf(const RunSpec& spec, const BackendCapabilities& can) {
  return BufferKeyOf(*spec.kernel, spec.shape, spec.device_index, spec.peer_device_index,
                     PlacementPadOn(can, spec.measurement.placement_pad_bytes),
                     PlacementsOn(can, spec.measurement.placements));
}

int64_t HostHeadroomBytes(int64_t host_need_bytes) {
  return (int64_t{64} << 20) + std::max<int64_t>(0, host_need_bytes) / 32;
}

absl::Status CheckRunMemoryFits(const RunMemory& need, const DeviceInfo& device,
                                bool device_is_host, std::optional<int64_t> host_available_bytes,
                                absl::string_view host_budget_description) {
  const int64_t host_need = need.host_bytes + (device_is_host ? need.device_bytes : 0);
  const int64_t headroom = HostHeadroomBytes(host_need);
  if (host_available_bytes.has_value() && host_need + headroom > *host_available_bytes) {
    const int64_t flush = device_is_host ? need.flush_bytes : 0;
    return absl::ResourceExhaustedError(absl::StrCat(
        "this run needs ", host_need, " bytes of host memory (",
        device_is_host
            ? absl::StrCat("inputs and read-back ", need.host_bytes, ", the cpu backend's buffers ",
                           need.device_bytes - flush, ", the cache flush buffer ", flush)
            : absl::StrCat("inputs, read-back and host-placed buffers ", host_need),
        ") plus ", headroom, " headroom; the host can give ", *host_available_bytes, " (",
        host_budget_description, "); use fewer elements"));
  }
  if (!device_is_host && device.free_memory_bytes > 0 &&
      need.device_bytes > device.free_memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this run needs ", need.device_bytes, " bytes of device memory (the cache flush buffer ",
        need.flush_bytes, " of them); device ", device.index, " has ", device.free_memory_bytes,
        " bytes free; use fewer elements"));
  }
  return absl::OkStatus();
}

}  // namespace gpubench
