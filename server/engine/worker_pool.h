// The server as a supervisor of per-device worker processes (docs/workers.md): each device's runs
// are measured in its own gpubench_worker, which owns that device's context. A worker that dies
// (a signal, an exit, a sticky device error) or hangs (past its run's deadline + grace, no
// progress, missed heartbeats, over its memory limit) is killed and restarted, with backoff where
// it keeps dying without a run; the run in flight fails UNAVAILABLE saying what happened; queued
// runs go on in the new worker; other devices never notice. After max_faults faults in
// fault_window the device is marked unhealthy: its runs answer UNAVAILABLE at once until a later
// start succeeds.
//
// With user kernels allowed, each device has a second worker, of role kUser, for user kernels
// (and --compare's built-ins): the same binary in a CUDA context of its own, so user code never
// runs in the context that measures catalog runs and scheduled plans. It is started by the first
// run that needs it and stopped after user_worker_idle without one, so it holds no GPU memory
// while unused; its faults restart it (on demand) and never count toward the device's health.
// The device's queue still serializes both workers' runs: the GPU measures one run at a time.
#ifndef GPUBENCH_SERVER_ENGINE_WORKER_POOL_H_
#define GPUBENCH_SERVER_ENGINE_WORKER_POOL_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kernels/backend.h"
#include "server/engine/engine.h"

namespace gpubench {

struct WorkerOptions {
  std::string binary;             // the gpubench_worker executable
  std::vector<std::string> args;  // flags every worker gets (backend, CPU devices, ...)
  absl::Duration start_timeout = absl::Seconds(60);  // spawn to Hello (CUDA init included)
  absl::Duration heartbeat_timeout = absl::Seconds(10);
  // A run in flight is hung when its progress (samples, phases) stops for this long, or when it
  // is still running deadline_grace after its deadline.
  absl::Duration stall_timeout = absl::Seconds(60);
  absl::Duration deadline_grace = absl::Seconds(5);
  int max_faults = 5;  // in fault_window: then the device is unhealthy
  absl::Duration fault_window = absl::Minutes(10);
  // A worker that a run broke is restarted at once; one that died idle or failed to start after
  // 0.5 s, doubling per recent fault up to this.
  absl::Duration max_backoff = absl::Seconds(30);
  // An unhealthy device's worker is started again this long after it was marked (0: never).
  absl::Duration unhealthy_retry = absl::Minutes(10);
  int64_t max_memory_bytes = 0;  // a worker's resident memory limit (0: none)
  // A user kernel's compile (the run's first phase) that runs longer ends the worker.
  absl::Duration user_kernel_compile_limit = absl::Seconds(30);
  // Each device gets a user-kernel worker (--allow_user_kernels), started with `args` and
  // `user_args`; the catalog workers get `args` only, so they refuse user kernels themselves.
  bool user_kernels = false;
  std::vector<std::string> user_args;
  // A user-kernel worker without a run for this long is stopped (its context, its GPU memory and
  // its compile cache go); the next run that needs it starts it again.
  absl::Duration user_worker_idle = absl::Minutes(5);
};

// Which of a device's workers measures a run. The catalog worker: catalog runs, sweeps and
// scheduled plans; its faults are the device's health. The user-kernel worker: user kernels and
// the built-ins --compare measures beside them (RunSpec::user_context), in a context of their own.
enum class WorkerRole { kCatalog, kUser };
const char* WorkerRoleName(WorkerRole role);  // "catalog", "user"
WorkerRole RoleFor(const RunSpec& spec);

// What a device's worker is doing, for observers (metrics, the health service). kIdle: a
// user-kernel worker with no process (not yet started, stopped when idle, or ended by a fault);
// the next run that needs it starts it.
enum class WorkerState { kStarting, kReady, kRestarting, kUnhealthy, kStopped, kIdle };
const char* WorkerStateName(WorkerState state);

// A worker's change of state. `fault` names what ended the previous worker ("signal", "exit",
// "device_lost", "hang", "stall", "heartbeat", "memory", "start", and "user_kernel" for any end a
// user kernel's run caused, which never counts toward the unhealthy verdict); empty when none.
// Events of the user-kernel worker (role kUser) never say anything about the device's health.
struct WorkerEvent {
  int device = 0;
  WorkerRole role = WorkerRole::kCatalog;
  WorkerState state = WorkerState::kStarting;
  std::string fault;
  std::string reason;  // in words, for logs
};

class WorkerProcess;

// Every device's worker. Thread-safe. Destruction stops every worker (closes its channel, then
// SIGKILL after a second).
class WorkerPool final : public DeviceRunner {
 public:
  // Starts the worker of device 0, which says how many devices there are and which backend it
  // opened, then the others. `on_event` (optional) is called on the pool's threads and must not
  // block. An error when the first worker cannot start (its message says why).
  static absl::StatusOr<std::unique_ptr<WorkerPool>> Start(
      WorkerOptions options, std::function<void(const WorkerEvent&)> on_event);
  ~WorkerPool() override;

  // A Backend for the supervisor's side: kind, devices, descriptions, occupancy and launch-size
  // checks answered by the workers (a description from the last answer while a worker is down);
  // Open fails (runs go through Measure).
  std::unique_ptr<Backend> MakeBackend();

  int device_count() const { return static_cast<int>(workers_.size()); }
  // The pids of the live workers of both roles (the NVML busy check counts them as this server).
  std::set<pid_t> Pids() const;
  // The pid of `device`'s worker of `role`; -1 when it has no process (a user-kernel worker that
  // is idle, or user kernels off).
  pid_t Pid(int device, WorkerRole role) const;
  // Ready or restarting (the device takes runs); false once it is unhealthy. The catalog
  // worker's: the user-kernel worker never makes a device unhealthy.
  bool Healthy(int device) const;

  // DeviceRunner.
  absl::Status Available(int device) const override;
  // A run for the user-kernel worker starts it when it is idle.
  absl::Status Prepare(const RunSpec& spec, const CancelledFn& cancelled) override;
  absl::StatusOr<RunResult> Measure(const RunSpec& spec, const DeviceInfo& device,
                                    absl::Time deadline, const CancelledFn& cancelled) override;
  // Kills the device's workers for good (no fault counted, no restart): the run in flight fails
  // with UNAVAILABLE "... was killed: <why>".
  void Abandon(int device, const std::string& why) override;

  void Stop();

 private:
  WorkerPool() = default;
  friend class WorkerBackend;
  WorkerOptions options_;
  std::string backend_name_;
  BackendCapabilities capabilities_;  // the first worker's Hello
  std::vector<std::unique_ptr<WorkerProcess>> workers_;       // catalog, one per device
  std::vector<std::unique_ptr<WorkerProcess>> user_workers_;  // empty unless user_kernels
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_WORKER_POOL_H_
