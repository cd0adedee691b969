// NVML (the driver's management library) loaded at run time with dlopen("libnvidia-ml.so.1"),
// which every NVIDIA driver installs; the CUDA toolkit ships no nvml.h, so the few functions used
// are declared by hand in nvml.cc. Absent library or driver: Load() says why and callers carry on
// without NVML facts. Host-only; no CUDA needed.
#ifndef GPUBENCH_KERNELS_NVML_H_
#define GPUBENCH_KERNELS_NVML_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpubench {

// NVML's view of one GPU, in the forms dcgm-exporter labels its series with.
struct NvmlDeviceFacts {
  int index = -1;          // NVML index (dcgm-exporter's `gpu` label); not the CUDA ordinal
  std::string pci_bus_id;  // NVML's format, e.g. "00000000:19:00.0" (dcgm-exporter's `pci_bus_id`)
  std::string name;        // e.g. "NVIDIA H200" (dcgm-exporter's `modelName`)
};

// The GPU's PCIe link as NVML reports it; 0 where a reading is unavailable (old driver, vGPU).
struct NvmlPcieLink {
  int current_generation = 0;
  int current_width = 0;
  int max_generation = 0;  // the most the GPU and the system (slot) support together
  int max_width = 0;
};

// How two GPUs reach each other, as NVML reports it.
struct NvmlPeerLink {
  bool nvlink = false;          // nvmlDeviceGetP2PStatus(NVLINK) says OK
  std::string nvlink_status;    // the P2P status in words ("ok", "not supported", ...)
  int active_nvlinks = 0;       // the first GPU's NVLinks in the active state (any peer or switch)
};

// A process holding a context on a GPU.
struct NvmlProcess {
  uint32_t pid = 0;  // in the host's PID namespace
  int64_t used_memory_bytes = -1;  // -1 when NVML cannot say (e.g. without hostPID)
  std::string kind;  // "compute" or "graphics"
};

class Nvml {
 public:
  // dlopens `library` (default libnvidia-ml.so.1) and initializes NVML. UNAVAILABLE with the
  // reason when the library, a required function or the driver is missing.
  static absl::StatusOr<std::shared_ptr<Nvml>> Load(
      const std::string& library = "libnvidia-ml.so.1");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // The kernel driver's version, e.g. "580.159.04" (not the CUDA driver API version).
  const std::string& driver_version() const { return driver_version_; }

  // All calls below are thread-safe (NVML is). `uuid` is "GPU-xxxxxxxx-...", as CUDA reports it.
  absl::StatusOr<NvmlDeviceFacts> Describe(absl::string_view uuid) const;
  // Compute and graphics processes with a context on the GPU (this process included).
  absl::StatusOr<std::vector<NvmlProcess>> RunningProcesses(absl::string_view uuid) const;
  // The current clock-event (throttle) reasons bitmask (nvmlClocksEventReason*).
  absl::StatusOr<uint64_t> ClockEventReasons(absl::string_view uuid) const;
  // The PCIe link's generation and width, current and maximum. UNAVAILABLE only when the library
  // has none of the four queries; a single failed reading is 0.
  absl::StatusOr<NvmlPcieLink> PcieLink(absl::string_view uuid) const;
  // Whether `uuid` reaches `peer_uuid` over NVLink, and its active NVLink count. UNAVAILABLE when
  // the library has no nvmlDeviceGetP2PStatus.
  absl::StatusOr<NvmlPeerLink> PeerLink(absl::string_view uuid, absl::string_view peer_uuid) const;

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  absl::StatusOr<void*> Handle(absl::string_view uuid) const;
  std::unique_ptr<Api> api_;
  std::string driver_version_;
};

// Names of the bits set in an NVML clock-event reasons mask, e.g. {"sw_power_cap",
// "hw_thermal_slowdown"}; unknown bits as "0x...".
std::vector<std::string> ClockEventReasonNames(uint64_t mask);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_NVML_H_
