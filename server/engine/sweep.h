// Sweep: kernels x sizes x block sizes x items per thread (x devices), expanded by the engine into
// validated RunSpecs (RunSweep RPCs and scheduled plans both come here), and run as per-device
// chains (SweepRun).
#ifndef GPUBENCH_SERVER_ENGINE_SWEEP_H_
#define GPUBENCH_SERVER_ENGINE_SWEEP_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/engine/engine.h"
#include "server/engine/run_result.h"
#include "server/engine/run_spec.h"

namespace gpubench {

struct SweepPlan {
  std::vector<std::string> kernels;
  std::vector<int64_t> sizes;
  std::vector<int> block_sizes;       // empty: each variant's default
  std::vector<int> items_per_thread;  // empty: each variant's default
  bool all_devices = false;           // every device, instead of base's device_index / device_uuid
  // What every item shares: device, cache mode, measurement, verify, seed, profile, force. Its
  // kernel, elements, block_size and items_per_thread are ignored.
  RunRequest base;
  // Needs two or more devices (peer copies: a plan's multi_device_sweeps). ExpandSweeps leaves it
  // out on a server with one device; ExpandSweep expands it regardless.
  bool multi_device = false;
};

// The product of `factors`, or limit + 1 as soon as it would exceed `limit` (never overflows);
// 0 when a factor is 0 or negative. Requests that multiply lists check this before building.
int64_t CountCombinations(std::initializer_list<int64_t> factors, int64_t limit);

// Expands `plan` into validated RunSpecs (device-major, then kernels, sizes, block sizes, items),
// failing as a whole on the first invalid item (its status names the item) or when it has more
// than `max_items` items. Thread-safe.
absl::StatusOr<std::vector<RunSpec>> ExpandSweep(const SweepPlan& plan, const Engine& engine,
                                                 int max_items);

// Whether `plan` fits this server's devices: every plan does except a multi_device one on a
// server with fewer than two devices (a one-GPU node runs the rest of a fleet plan). Thread-safe.
bool SweepFitsDevices(const SweepPlan& plan, const Engine& engine);

// Several sweeps (a scheduled plan) expanded in order into one list, each by ExpandSweep with its
// own `max_items`, leaving out those that do not fit this server's devices (SweepFitsDevices).
// Fails as a whole on the first failing sweep, named "sweep N of the plan" ("multi-device sweep
// N" for multi_device ones; N counts from 1 within each kind). Thread-safe.
absl::StatusOr<std::vector<RunSpec>> ExpandSweeps(std::span<const SweepPlan> plans,
                                                  const Engine& engine, int max_items);

// Marks buffer reuse (docs/measurement.md, "buffer reuse") in `items`, in the order each device
// runs them: on each device, every maximal run of consecutive items whose buffers have one
// BufferKey (as a backend that can, `can`, allocates them) gets a chain of its own
// (RunSpec::buffer_chain, unique in this process), and each of its items but the last
// keep_buffers, so that its worker keeps its buffers for the next instead of freeing them. User
// kernels are never marked (they neither take nor leave buffers). Any earlier marking is
// replaced. SweepRun::Start, autotune and the server's schedule mark what they run.
void MarkBufferReuse(std::span<RunSpec> items, const BackendCapabilities& can);

// What a running sweep reports. Each is called on some thread, never two at once for one item.
struct SweepCallbacks {
  // Item `index` (0-based) is queued behind `position` runs; always before its on_start.
  std::function<void(int index, int position)> on_queued;
  std::function<void(int index)> on_start;
  // Item `index` finished: its result, or its error (a failed verification is an error).
  std::function<void(int index, absl::StatusOr<RunResult> result)> on_item;
  // Exactly once, after the last on_item: OK, or why the sweep ended early (CANCELLED, or the
  // queue refusing a device's first item, or the server stopping).
  std::function<void(absl::Status status)> on_finished;
  // Backpressure: whether the consumer takes more now (absent: always). While it answers false,
  // each chain stops before queueing its next item (it holds no queue slot meanwhile) until
  // SweepRun::Resume; the item in flight still finishes and is reported.
  std::function<bool()> has_room;
};

// Runs expanded sweep items: one chain of items per device, each chain queueing its next item
// when the previous finishes (so other clients' runs interleave fairly), chains on different
// devices at once, buffer reuse marked (MarkBufferReuse). A chain's later items use the queue's
// continuation allowance; one that finds even that full is reported as that item's error and the
// chain goes on. Thread-safe; the run keeps itself alive until on_finished.
class SweepRun : public std::enable_shared_from_this<SweepRun> {
 public:
  static std::shared_ptr<SweepRun> Start(Engine* engine, std::vector<RunSpec> items,
                                         absl::Time deadline, SweepCallbacks callbacks);
  // Cancels the runs in progress and queues no more; on_finished then says CANCELLED.
  void Cancel();
  // Chains stopped by has_room go on (those it still refuses stop again). Call it whenever the
  // consumer has made room.
  void Resume();

 private:
  SweepRun(Engine* engine, std::vector<RunSpec> items, absl::Time deadline,
           SweepCallbacks callbacks);
  void SubmitNext(size_t chain);
  void OnItemDone(size_t chain, int index, absl::StatusOr<RunResult> result);
  // Retires `chain` (lock held); on_finished once the last chain is retired.
  void RetireLocked(std::unique_lock<std::mutex>& lock);

  Engine* const engine_;
  const std::vector<RunSpec> items_;
  const absl::Time deadline_;
  const SweepCallbacks callbacks_;
  std::vector<std::vector<int>> chains_;  // item indices per device, in plan order

  std::mutex mu_;
  std::vector<size_t> next_;                // per chain: the next position in it
  std::vector<std::shared_ptr<Job>> jobs_;  // per chain: the job in flight
  std::vector<bool> done_;                  // per item: finished
  std::vector<size_t> parked_;              // chains stopped by has_room, waiting for Resume
  int active_chains_ = 0;
  bool cancelled_ = false;
  absl::Status status_;  // why the sweep ended early
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_SWEEP_H_
