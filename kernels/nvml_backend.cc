#include "kernels/nvml_backend.h"

namespace gpubench {

std::unique_ptr<Backend> WithNvmlFacts(std::unique_ptr<Backend> inner,
                                       std::shared_ptr<const Nvml> nvml) {
  return WithDescribeAmendment(std::move(inner), [nvml = std::move(nvml)](DeviceInfo& info) {
    // Devices NVML does not know (the CPU backend's) keep the backend's facts.
    if (absl::StatusOr<NvmlDeviceFacts> facts = nvml->Describe(info.uuid); facts.ok()) {
      info.nvml_index = facts->index;
      if (!facts->pci_bus_id.empty()) info.pci_bus_id = facts->pci_bus_id;
      info.kernel_driver_version = nvml->driver_version();
    }
  });
}

}  // namespace gpubench
