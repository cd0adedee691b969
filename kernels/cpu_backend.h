// The CPU backend: executes every catalog variant's exact semantics on host memory with a pool of
// threads, so the whole service runs end to end without a GPU (CI). It can present several
// simulated devices that share the host, to exercise per-device workers.
#ifndef GPUBENCH_KERNELS_CPU_BACKEND_H_
#define GPUBENCH_KERNELS_CPU_BACKEND_H_

#include <memory>
#include <string>

#include "kernels/backend.h"

namespace gpubench {

struct CpuBackendOptions {
  int devices = 1;             // simulated devices, each with its own thread pool
  int threads_per_device = 0;  // 0: all hardware threads
  // The simulated devices' model name (DeviceInfo.name); empty: the host CPU's model.
  std::string device_name{};
  // Stable identities: with a seed, device i's UUID is "CPU-" + the RFC 4122 name-based (SHA-1,
  // version 5) UUID of "<seed>/<i>", the same on every start with the same seed (a restarted
  // simulated node is the same hardware). Empty: "cpu-<i>".
  std::string uuid_seed{};
  // Every launch takes at least this long (the device sleeps the rest after the work): a
  // simulated device model of a fixed speed, so that fleet tests on a shared CPU see differences
  // between models and a throttled node that stand clear of the host's timing noise. 0: off.
  double min_launch_seconds = 0;
  // The most operations (OperationsOf: FLOP for GEMM) one launch may do: the emulation does
  // O(n^3) work for a GEMM of size n, so a size a GPU runs in milliseconds would hold the CPU for
  // hours. Larger runs are refused with RESOURCE_EXHAUSTED at Open. 2^31: a 1024^3 GEMM, about a
  // second on two cores.
  int64_t max_operations_per_launch = int64_t{1} << 31;
};

// The UUID of simulated device `device` under `seed` (see CpuBackendOptions::uuid_seed).
std::string SimulatedDeviceUuid(const std::string& seed, int device);

// Thread-safe in the sense of Backend: Describe from any thread; Open from one thread per device.
std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_CPU_BACKEND_H_
