// The CPU backend: executes every catalog variant's exact semantics on host memory with a pool of
// threads, so the whole service runs end to end without a GPU (CI). It can present several
// simulated devices that share the host, to exercise per-device workers.
#ifndef GPUBENCH_KERNELS_CPU_BACKEND_H_
#define GPUBENCH_KERNELS_CPU_BACKEND_H_

#include <cstdint>
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

// How a cold sample empties the host's caches of the run's data.
enum class CpuColdFlush {
  // Every cache line of the run's buffers written back and invalidated (clflushopt / dc civac):
  // exactly what a previous launch could have left, at one instruction per line.
  kEvictBuffers,
  // A write pass over 2x the last-level cache (the flush before 2026-12): evicts everything.
  kWriteTwiceLlc,
};

// kEvictBuffers where the launch touches only its buffers (no setup state, whose extent is
// unknown), they total at most 2x `llc_bytes` (beyond that evicting them costs more than the
// write pass) and the host has an eviction instruction; kWriteTwiceLlc otherwise.
CpuColdFlush ChooseCpuColdFlush(int64_t working_set_bytes, int64_t llc_bytes, bool has_state);

// The UUID of simulated device `device` under `seed` (see CpuBackendOptions::uuid_seed).
std::string SimulatedDeviceUuid(const std::string& seed, int device);

// The CPU form of a sticky device error (a CUDA trap or illegal address leaves the context
// unusable): from this call on, every launch of every session in this process fails with a
// device-lost status (IsDeviceLost), as every call in a poisoned CUDA context fails, and the
// worker exits to drop it. For CPU kernels that emulate such faults (kernels/test_faults.cc);
// `what` must outlive the process (a literal). Thread-safe.
void RaiseCpuStickyError(const char* what);

// Thread-safe in the sense of Backend: Describe from any thread; Open from one thread per device.
std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_CPU_BACKEND_H_
