#include "kernels/nvml_backend.h"

#include "kernels/pcie.h"

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
    if (absl::StatusOr<NvmlPcieLink> link = nvml->PcieLink(info.uuid); link.ok()) {
      const PcieLinkFacts rate = ChoosePcieRate(link->current_generation, link->current_width,
                                                link->max_generation, link->max_width);
      info.pcie_link_current_generation = rate.current_generation;
      info.pcie_link_current_width = rate.current_width;
      info.pcie_link_max_generation = rate.max_generation;
      info.pcie_link_max_width = rate.max_width;
      info.pcie_link_bytes_per_second = rate.bytes_per_second;
      info.pcie_link_rate_source = rate.rate_source;
    }
  });
}

}  // namespace gpubench
