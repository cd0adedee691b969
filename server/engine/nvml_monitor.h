// What the engine asks NVML around each run: is another process using the GPU (shared-node mode,
// --gpu_sharing=shared), and which clock-event (throttle) reasons were active while it measured.
#ifndef GPUBENCH_SERVER_ENGINE_NVML_MONITOR_H_
#define GPUBENCH_SERVER_ENGINE_NVML_MONITOR_H_

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/nvml.h"

namespace gpubench {

// exclusive: the pod owns its GPUs (requested nvidia.com/gpu, or a drained node); no busy check.
// shared: the node's GPUs belong to tenants; a run starts only while no other process uses the GPU.
enum class GpuSharing { kExclusive, kShared };
absl::StatusOr<GpuSharing> ParseGpuSharing(absl::string_view text);

// Payload marking the FAILED_PRECONDITION of a run refused because another process uses the GPU.
inline constexpr char kGpuBusyPayload[] = "type.gpubench.dev/gpu-busy";
inline bool IsGpuBusy(const absl::Status& status) {
  return status.GetPayload(kGpuBusyPayload).has_value();
}

// The union of clock-event reasons seen by a background poll (every 50 ms, and once more at
// Stop) while a run measures. Stop returns as soon as that last poll is done: a poll thread that
// slept its interval out added up to 50 ms to every run (NvmlTest.ClockEventWatchStops...).
class ClockEventWatch {
 public:
  ClockEventWatch(std::shared_ptr<const Nvml> nvml, std::string uuid);  // starts polling
  ~ClockEventWatch();
  // Stops polling. The reason names seen (possibly none), or why NVML could not say. Call once,
  // from the thread that constructed it.
  absl::StatusOr<std::vector<std::string>> Stop();

 private:
  void Poll();
  void Join();
  std::shared_ptr<const Nvml> nvml_;
  const std::string uuid_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;   // guarded by mu_
  uint64_t mask_ = 0;   // poll thread until joined
  absl::Status error_;  // poll thread until joined
  std::thread thread_;
};

// Thread-safe after construction.
class NvmlMonitor {
 public:
  // `uuids[d]` is the UUID of the engine's device d. `nvml` may be null (NVML absent): then there
  // is no busy check (and `sharing` shared fails at start-up, see main) and no clock-event watch.
  NvmlMonitor(std::shared_ptr<const Nvml> nvml, std::vector<std::string> uuids,
              GpuSharing sharing);

  GpuSharing sharing() const { return sharing_; }

  // The server's worker processes (server/engine/worker_pool.h), which hold the GPUs' contexts:
  // the busy check counts them as this server, not as tenants. Set before the first CheckIdle.
  void SetWorkerPids(std::function<std::set<pid_t>()> pids) { worker_pids_ = std::move(pids); }

  // OK in exclusive mode and for devices NVML does not know (the CPU backend's). In shared mode:
  // OK when no process other than this one has a context on the GPU; FAILED_PRECONDITION (with
  // kGpuBusyPayload) naming the GPU and the processes when one has; UNAVAILABLE when NVML cannot
  // list them (an unknown state is not idle).
  absl::Status CheckIdle(int device) const;

  // A running watch of `device`'s clock-event reasons, or null where NVML cannot watch it (with
  // the reason in *why).
  std::unique_ptr<ClockEventWatch> WatchClockEvents(int device, std::string* why) const;

  // How `device` reaches `peer` (a peer copy's path), as NVML says: "peer path: nvlink (...)",
  // "peer path: pcie (...)", or "peer path: unknown (why)" where NVML is absent or cannot say;
  // nullopt for devices NVML does not know (the CPU backend's, whose setup names the path).
  std::optional<std::string> PeerPath(int device, int peer) const;

 private:
  std::shared_ptr<const Nvml> nvml_;
  const std::vector<std::string> uuids_;
  const GpuSharing sharing_;
  std::set<uint32_t> own_pids_;  // this process in every PID namespace /proc shows
  std::function<std::set<pid_t>()> worker_pids_;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_NVML_MONITOR_H_
