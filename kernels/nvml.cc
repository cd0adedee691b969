#include "kernels/nvml.h"

#include <dlfcn.h>

#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace gpubench {
namespace {

// The subset of nvml.h used here (NVML's C ABI, stable across drivers since r450).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorNotFound = 6;
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

struct nvmlPciInfo_t {  // nvmlPciInfo_st, as returned by nvmlDeviceGetPciInfo_v3
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t, as filled by the *_v3 process queries
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// nvmlGpuP2PCapsIndex_t and nvmlGpuP2PStatus_t; NVML_NVLINK_MAX_LINKS.
constexpr int kP2PCapsIndexNvlink = 2;
constexpr const char* kP2PStatusNames[] = {"ok", "chipset not supported", "GPU not supported",
                                           "IOH topology not supported", "disabled by regkey",
                                           "not supported", "unknown"};
constexpr unsigned int kNvlinkMaxLinks = 18;

using ProcessQuery = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);

constexpr struct {
  uint64_t bit;
  const char* name;
} kReasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};

}  // namespace

struct Nvml::Api {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*handle_by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*index)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  ProcessQuery compute_processes = nullptr;
  ProcessQuery graphics_processes = nullptr;
  nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  // Optional (absent: the fact is unknown, NVML still loads).
  nvmlReturn_t (*pcie_current_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_max_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_current_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_max_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int*) = nullptr;

  std::string Error(const char* call, nvmlReturn_t r) const {
    return absl::StrCat(call, ": ", error_string != nullptr ? error_string(r) : "error", " (",
                        r, ")");
  }
};

absl::StatusOr<std::shared_ptr<Nvml>> Nvml::Load(const std::string& library) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->lib == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "NVML not loaded: ", dlerror(),
        " (the NVIDIA driver installs libnvidia-ml.so.1; in a container the NVIDIA runtime mounts "
        "it)"));
  }
  auto sym = [&](auto* fn, std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (void* p = dlsym(api->lib, n)) {
        *fn = reinterpret_cast<std::remove_reference_t<decltype(*fn)>>(p);
        return true;
      }
    }
    return false;
  };
  std::string missing;
  auto need = [&](auto* fn, std::initializer_list<const char*> names) {
    if (!sym(fn, names) && missing.empty()) missing = *names.begin();
  };
  need(&api->init, {"nvmlInit_v2"});
  need(&api->shutdown, {"nvmlShutdown"});
  need(&api->error_string, {"nvmlErrorString"});
  need(&api->driver_version, {"nvmlSystemGetDriverVersion"});
  need(&api->handle_by_uuid, {"nvmlDeviceGetHandleByUUID"});
  need(&api->index, {"nvmlDeviceGetIndex"});
  need(&api->name, {"nvmlDeviceGetName"});
  need(&api->pci_info, {"nvmlDeviceGetPciInfo_v3"});
  need(&api->compute_processes, {"nvmlDeviceGetComputeRunningProcesses_v3"});
  need(&api->graphics_processes, {"nvmlDeviceGetGraphicsRunningProcesses_v3"});
  // Renamed in r535 (throttle -> clocks event); the old name stays exported.
  need(&api->clock_reasons,
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  sym(&api->pcie_current_generation, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  sym(&api->pcie_max_generation, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  sym(&api->pcie_current_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
  sym(&api->pcie_max_width, {"nvmlDeviceGetMaxPcieLinkWidth"});
  sym(&api->p2p_status, {"nvmlDeviceGetP2PStatus"});
  sym(&api->nvlink_state, {"nvmlDeviceGetNvLinkState"});
  if (!missing.empty()) {
    dlclose(api->lib);
    return absl::UnavailableError(
        absl::StrCat("NVML not usable: ", library, " has no ", missing, " (driver too old)"));
  }
  if (nvmlReturn_t r = api->init(); r != kNvmlSuccess) {
    std::string error = api->Error("nvmlInit_v2", r);
    dlclose(api->lib);
    return absl::UnavailableError(absl::StrCat("NVML not usable: ", error));
  }
  auto nvml = std::shared_ptr<Nvml>(new Nvml(std::move(api)));
  char version[96] = {0};
  if (nvml->api_->driver_version(version, sizeof(version)) == kNvmlSuccess) {
    nvml->driver_version_ = version;
  }
  return nvml;
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(api_->lib);
}

absl::StatusOr<void*> Nvml::Handle(absl::string_view uuid) const {
  const std::string id(uuid);
  nvmlDevice_t device = nullptr;
  nvmlReturn_t r = api_->handle_by_uuid(id.c_str(), &device);
  if (r == kNvmlErrorNotFound) {
    return absl::NotFoundError(absl::StrCat("NVML knows no GPU ", id));
  }
  if (r != kNvmlSuccess) return absl::UnavailableError(api_->Error("nvmlDeviceGetHandleByUUID", r));
  return device;
}

absl::StatusOr<NvmlDeviceFacts> Nvml::Describe(absl::string_view uuid) const {
  absl::StatusOr<void*> device = Handle(uuid);
  if (!device.ok()) return device.status();
  NvmlDeviceFacts facts;
  unsigned int index = 0;
  if (nvmlReturn_t r = api_->index(*device, &index); r != kNvmlSuccess) {
    return absl::UnavailableError(api_->Error("nvmlDeviceGetIndex", r));
  }
  facts.index = static_cast<int>(index);
  nvmlPciInfo_t pci{};
  if (nvmlReturn_t r = api_->pci_info(*device, &pci); r != kNvmlSuccess) {
    return absl::UnavailableError(api_->Error("nvmlDeviceGetPciInfo_v3", r));
  }
  facts.pci_bus_id.assign(pci.busId, strnlen(pci.busId, sizeof(pci.busId)));
  char name[96] = {0};
  if (api_->name(*device, name, sizeof(name)) == kNvmlSuccess) facts.name = name;
  return facts;
}

absl::StatusOr<std::vector<NvmlProcess>> Nvml::RunningProcesses(absl::string_view uuid) const {
  absl::StatusOr<void*> device = Handle(uuid);
  if (!device.ok()) return device.status();
  std::vector<NvmlProcess> out;
  for (const auto& [query, kind, call] :
       {std::tuple{api_->compute_processes, "compute", "nvmlDeviceGetComputeRunningProcesses_v3"},
        std::tuple{api_->graphics_processes, "graphics",
                   "nvmlDeviceGetGraphicsRunningProcesses_v3"}}) {
    std::vector<nvmlProcessInfo_t> infos(16);
    nvmlReturn_t r = kNvmlErrorInsufficientSize;
    unsigned int count = 0;
    // The list can grow between the size query and the read: retry with room to spare.
    for (int attempt = 0; attempt < 4 && r == kNvmlErrorInsufficientSize; ++attempt) {
      count = static_cast<unsigned int>(infos.size());
      r = query(*device, &count, infos.data());
      if (r == kNvmlErrorInsufficientSize) infos.resize(2 * std::max<size_t>(count, infos.size()));
    }
    if (r != kNvmlSuccess) return absl::UnavailableError(api_->Error(call, r));
    for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
      out.push_back({infos[i].pid,
                     infos[i].usedGpuMemory == kNvmlValueNotAvailable
                         ? -1
                         : static_cast<int64_t>(infos[i].usedGpuMemory),
                     kind});
    }
  }
  return out;
}

absl::StatusOr<uint64_t> Nvml::ClockEventReasons(absl::string_view uuid) const {
  absl::StatusOr<void*> device = Handle(uuid);
  if (!device.ok()) return device.status();
  unsigned long long mask = 0;
  if (nvmlReturn_t r = api_->clock_reasons(*device, &mask); r != kNvmlSuccess) {
    return absl::UnavailableError(api_->Error("nvmlDeviceGetCurrentClocksEventReasons", r));
  }
  return static_cast<uint64_t>(mask);
}

absl::StatusOr<NvmlPcieLink> Nvml::PcieLink(absl::string_view uuid) const {
  if (api_->pcie_current_generation == nullptr && api_->pcie_max_generation == nullptr &&
      api_->pcie_current_width == nullptr && api_->pcie_max_width == nullptr) {
    return absl::UnavailableError("this NVML has no PCIe link queries");
  }
  absl::StatusOr<void*> device = Handle(uuid);
  if (!device.ok()) return device.status();
  auto read = [&](nvmlReturn_t (*query)(nvmlDevice_t, unsigned int*)) {
    unsigned int value = 0;
    return query != nullptr && query(*device, &value) == kNvmlSuccess ? static_cast<int>(value)
                                                                      : 0;
  };
  return NvmlPcieLink{.current_generation = read(api_->pcie_current_generation),
                      .current_width = read(api_->pcie_current_width),
                      .max_generation = read(api_->pcie_max_generation),
                      .max_width = read(api_->pcie_max_width)};
}

absl::StatusOr<NvmlPeerLink> Nvml::PeerLink(absl::string_view uuid,
                                            absl::string_view peer_uuid) const {
  if (api_->p2p_status == nullptr) {
    return absl::UnavailableError("this NVML has no nvmlDeviceGetP2PStatus");
  }
  absl::StatusOr<void*> device = Handle(uuid);
  if (!device.ok()) return device.status();
  absl::StatusOr<void*> peer = Handle(peer_uuid);
  if (!peer.ok()) return peer.status();
  NvmlPeerLink link;
  int status = 0;
  if (nvmlReturn_t r = api_->p2p_status(*device, *peer, kP2PCapsIndexNvlink, &status);
      r != kNvmlSuccess) {
    return absl::UnavailableError(api_->Error("nvmlDeviceGetP2PStatus", r));
  }
  link.nvlink = status == 0;
  link.nvlink_status = status >= 0 && status < static_cast<int>(std::size(kP2PStatusNames))
                           ? kP2PStatusNames[status]
                           : absl::StrCat("status ", status);
  if (api_->nvlink_state != nullptr) {
    for (unsigned int l = 0; l < kNvlinkMaxLinks; ++l) {
      int active = 0;  // nvmlEnableState_t
      if (api_->nvlink_state(*device, l, &active) == kNvmlSuccess && active != 0) {
        ++link.active_nvlinks;
      }
    }
  }
  return link;
}

std::vector<std::string> ClockEventReasonNames(uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& [bit, name] : kReasons) {
    if (mask & bit) {
      names.push_back(name);
      mask &= ~bit;
    }
  }
  if (mask != 0) names.push_back(absl::StrCat("0x", absl::Hex(mask)));
  return names;
}

}  // namespace gpubench
