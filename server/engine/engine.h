// The engine: one DeviceWorker per device, each with a bounded FIFO queue that runs one
// measurement at a time; cheap queries (devices, catalog) never touch the queues.
#ifndef GPUBENCH_SERVER_ENGINE_ENGINE_H_
#define GPUBENCH_SERVER_ENGINE_ENGINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/parallel.h"
#include "kernels/backend.h"
#include "server/engine/measurement.h"
#include "server/engine/nvml_monitor.h"
#include "server/engine/resolve.h"
#include "server/engine/run_memory.h"
#include "server/engine/run_result.h"
#include "server/engine/run_spec.h"
#include "server/engine/tuned_defaults.h"

namespace gpubench {

// Consumers of results and queue events (metrics, logs). Called on worker threads (and on the
// thread that cancels a queued run); must be thread-safe and must not block.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnRunFinished(const RunSpec& spec, const absl::StatusOr<RunResult>& result,
                             absl::Duration wall_time) = 0;
  virtual void OnQueueDepth(int device_index, int depth) = 0;
};

struct JobCallbacks {
  // Optional; called inside Submit once the run is queued, with the runs ahead of it, before the
  // worker can start it (so it always precedes on_start). Must not call into the engine.
  std::function<void(int position)> on_queued;
  std::function<void()> on_start;                               // optional; worker thread
  std::function<void(absl::StatusOr<RunResult>)> on_done;       // exactly once; any thread
};

class DeviceWorker;

// How long a device queue holds buffers kept for the next run of a sweep (docs/measurement.md,
// "buffer reuse") while no run is queued: a scheduled plan queues its next item well within it
// (a sweep before the queue looks); then they are freed.
inline constexpr std::chrono::milliseconds kKeptBuffersIdle{500};

// Where a device queue's runs are measured when not in this process: the device's worker process
// (server/engine/worker_pool.h). Thread-safe.
class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  // OK when `device` takes runs; UNAVAILABLE saying why not (its worker was marked unhealthy).
  virtual absl::Status Available(int device) const = 0;
  // Called before the run's device description and memory admission: readies the process that
  // will measure `spec` (a user-kernel worker is started on demand), so that what it holds (a
  // CUDA context, host memory) is already counted by the admission. An error fails the run.
  virtual absl::Status Prepare(const RunSpec& spec, const CancelledFn& cancelled) {
    (void)spec, (void)cancelled;
    return absl::OkStatus();
  }
  // Measures `spec` (MeasureRun's contract); UNAVAILABLE when the worker dies or hangs on it.
  virtual absl::StatusOr<RunResult> Measure(const RunSpec& spec, const DeviceInfo& device,
                                            absl::Time deadline, const CancelledFn& cancelled) = 0;
  // Shutdown only: the run in flight on `device` ignored its cancellation (it was generating
  // inputs, allocating, or in a launch that does not return): end it now, failing it with `why`,
  // and start nothing more there. A runner that cannot (none here) leaves it running.
  virtual void Abandon(int device, const std::string& why) { (void)device, (void)why; }
};

// A submitted run. Cancel() is thread-safe and idempotent: a queued run leaves the queue at once
// (on_done gets CANCELLED); a running one stops at the next sample boundary.
class Job {
 public:
  Job(absl::Time deadline, DeviceWorker* worker) : deadline_(deadline), worker_(worker) {}
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  absl::Time deadline() const { return deadline_; }

 private:
  friend class DeviceWorker;
  std::atomic<bool> cancelled_{false};
  const absl::Time deadline_;
  DeviceWorker* const worker_;
};

class DeviceWorker {
 public:
  DeviceWorker(int device_index, Backend* backend, int capacity,
               const std::vector<RunObserver*>* observers,
               const std::function<void(int, const absl::Status&)>* device_lost,
               const NvmlMonitor* const* monitor, const ServerLimits* limits = nullptr,
               std::atomic<int64_t>* reserved_host_bytes = nullptr,
               DeviceRunner* const* runner = nullptr);
  ~DeviceWorker();  // stops: cancels queued runs, finishes the running one

  // Enqueues `job` (created with this worker). RESOURCE_EXHAUSTED when the queue is full, UNAVAILABLE after Stop().
  // `position` receives the number of runs ahead of this one (including a running one).
  // A `continuation` (the next item of an already admitted sweep) may use a second allowance of
  // `capacity` runs, so a sweep once started is not cut off by others filling the queue.
  absl::Status Enqueue(RunSpec spec, std::shared_ptr<Job> job, JobCallbacks callbacks,
                       int* position, bool continuation = false);
  int depth() const;  // queued + running
  void Stop();        // no more intake; cancels queued runs and the running one; joins
  void Drain();       // no more intake; waits for the queue to empty; joins

 private:
  struct Item {
    RunSpec spec;
    std::shared_ptr<Job> job;
    JobCallbacks callbacks;
    absl::Time queued_at;
  };
  friend class Job;
  void Remove(Job* job);
  void Loop();
  void Join();
  void PublishDepth();
  // The loop's steps: take the next item (false: stop), run it, report it to the log and the
  // observers.
  bool Take(Item* item);
  absl::StatusOr<RunResult> Execute(const Item& item);
  absl::StatusOr<RunResult> Measure(const Item& item);
  void Report(const Item& item, const absl::StatusOr<RunResult>& result, absl::Duration wall);
  // RESOURCE_EXHAUSTED when the run's buffers do not fit in the host (and device) memory left now,
  // counting what runs on other devices have reserved; otherwise reserves its host bytes in
  // *reserved (released by the caller). `reuses_kept_buffers`: the run takes the buffers kept for
  // it, which are not counted again (RunMemoryOf).
  absl::Status AdmitMemory(const RunSpec& spec, const DeviceInfo& device, bool reuses_kept_buffers,
                           int64_t* reserved);

  // Buffer reuse within a sweep (docs/measurement.md, "buffer reuse"). What the device's backend
  // may hold for the next run of a sweep chain, as this queue knows it from the results: set by a
  // result whose buffers were kept (RunPhases::buffers_kept), cleared by a release. A worker
  // restarted between two runs of a chain holds nothing: the next run allocates anew, admitted
  // as if its buffers were held (their memory, freed by the restart, is in the free figure), and
  // if it does not fit it fails at allocation (RESOURCE_EXHAUSTED) instead of before it.
  struct KeptBuffers {
    uint64_t chain = 0;
    BufferKey key;
  };
  // Whether `spec` is the run the kept buffers were kept for: the next run of their chain, with
  // their key.
  bool ReusesKeptBuffers(const RunSpec& spec) const;
  // Has the backend free what it keeps, where it may keep anything.
  void ReleaseKeptBuffers();
  // After a run: what it kept, or nothing (anything the backend may still hold is freed).
  void KeepOrRelease(const RunSpec& spec, const absl::StatusOr<RunResult>& result);

  const int device_index_;
  Backend* backend_;
  const int capacity_;
  const std::vector<RunObserver*>* observers_;
  const std::function<void(int, const absl::Status&)>* device_lost_;
  const NvmlMonitor* const* monitor_;  // the engine's; null when none
  const ServerLimits* limits_;
  std::atomic<int64_t>* reserved_host_bytes_;
  DeviceRunner* const* runner_;  // the engine's; null (or pointing to null): in this process
  ParallelPool host_pool_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool running_ = false;
  bool stopping_ = false;
  bool draining_ = false;
  std::shared_ptr<Job> current_;
  CopyCeiling copy_ceiling_;  // worker thread only
  std::optional<KeptBuffers> kept_;  // worker thread only
  std::once_flag join_once_;
  std::thread thread_;
};

class Engine {
 public:
  Engine(std::unique_ptr<Backend> backend, ServerLimits limits);
  ~Engine();

  const Backend& backend() const { return *backend_; }
  const ServerLimits& limits() const { return limits_; }

  // Called (on a worker thread) when a run fails with a device-lost error (IsDeviceLost): the
  // process cannot measure on that device again. Set before any Submit.
  void SetDeviceLostHandler(std::function<void(int device, const absl::Status&)> handler) {
    device_lost_ = std::move(handler);
  }

  // NVML around each run: the shared-node busy check (unless the spec forces) and the clock-event
  // watch. Optional; set before any Submit. Not owned.
  void SetMonitor(const NvmlMonitor* monitor) { monitor_ = monitor; }

  // Runs measured by `runner` (the device workers) instead of MeasureRun on backend() in this
  // process. Optional; set before any Submit. Not owned.
  void SetRunner(DeviceRunner* runner) { runner_ = runner; }

  // Registers an observer; call before any Submit. Not owned.
  void AddObserver(RunObserver* observer) { observers_.push_back(observer); }

  // See ResolveRunRequest (with this engine's tuned defaults). Thread-safe.
  absl::StatusOr<RunSpec> Resolve(const RunRequest& request) const;

  // Block sizes chosen by Autotune; used when a request names none. Thread-safe.
  TunedDefaults& tuned_defaults() { return tuned_; }

  // Enqueues `spec` on its device's queue. The job is cancelled when `deadline` passes.
  // `continuation`: see DeviceWorker::Enqueue.
  absl::StatusOr<std::shared_ptr<Job>> Submit(RunSpec spec, absl::Time deadline,
                                              JobCallbacks callbacks, int* position,
                                              bool continuation = false);

  int QueueDepth(int device_index) const;

  // Stops intake and waits up to `grace` for queued and running work, then cancels what is left.
  void Shutdown(absl::Duration grace);

 private:
  std::unique_ptr<Backend> backend_;
  const ServerLimits limits_;
  std::vector<RunObserver*> observers_;
  std::function<void(int, const absl::Status&)> device_lost_;
  const NvmlMonitor* monitor_ = nullptr;
  DeviceRunner* runner_ = nullptr;
  std::atomic<int64_t> reserved_host_bytes_{0};  // host bytes of the runs in progress
  TunedDefaults tuned_;
  std::vector<std::unique_ptr<DeviceWorker>> workers_;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_ENGINE_H_
