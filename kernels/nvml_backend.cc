#include "kernels/nvml_backend.h"

namespace gpubench {
namespace {

class NvmlFactsBackend final : public Backend {
 public:
  NvmlFactsBackend(std::unique_ptr<Backend> inner, std::shared_ptr<const Nvml> nvml)
      : inner_(std::move(inner)), nvml_(std::move(nvml)) {}

  absl::string_view name() const override { return inner_->name(); }
  int device_count() const override { return inner_->device_count(); }

  absl::StatusOr<DeviceInfo> Describe(int device) const override {
    absl::StatusOr<DeviceInfo> info = inner_->Describe(device);
    if (!info.ok()) return info;
    // Devices NVML does not know (the CPU backend's) keep the backend's facts.
    if (absl::StatusOr<NvmlDeviceFacts> facts = nvml_->Describe(info->uuid); facts.ok()) {
      info->nvml_index = facts->index;
      if (!facts->pci_bus_id.empty()) info->pci_bus_id = facts->pci_bus_id;
      info->kernel_driver_version = nvml_->driver_version();
    }
    return info;
  }

  int MaxActiveBlocksPerMultiprocessor(const KernelVariant& variant, int device,
                                       int block_size) const override {
    return inner_->MaxActiveBlocksPerMultiprocessor(variant, device, block_size);
  }

  absl::StatusOr<std::unique_ptr<Session>> Open(int device, const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) override {
    return inner_->Open(device, variant, geometry, data);
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::shared_ptr<const Nvml> nvml_;
};

}  // namespace

std::unique_ptr<Backend> WithNvmlFacts(std::unique_ptr<Backend> inner,
                                       std::shared_ptr<const Nvml> nvml) {
  return std::make_unique<NvmlFactsBackend>(std::move(inner), std::move(nvml));
}

}  // namespace gpubench
