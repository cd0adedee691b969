// Scheduled runs: a plan (gpubench/v1/plan.proto: one RunSweepRequest in protobuf's JSON mapping
// — the same shape as a grpcurl RunSweep body — or several, {"sweeps": [...]}; proto/plan_json.h
// parses it) is run every interval through the same device queues as RPC work, so dashboards have
// fresh data without any client.
#ifndef GPUBENCH_SERVER_SERVICE_SCHEDULER_H_
#define GPUBENCH_SERVER_SERVICE_SCHEDULER_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gpubench/v1/plan.pb.h"
#include "server/engine/engine.h"
#include "server/engine/sweep.h"
#include "server/health/health_monitor.h"

namespace gpubench {

class Scheduler {
 public:
  // Validates the plan now (every item of every sweep resolved), so a bad plan fails at start-up.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(Engine* engine, const v1::Plan& plan,
                                                           absl::Duration interval,
                                                           int max_items);
  ~Scheduler();  // Stop()

  // Every scheduled result goes to `monitor`, which may ask for confirmation re-runs: one runs
  // after each plan item (so re-runs interleave with the plan's other items), the rest at the
  // pass's end; `on_pass_end` (optional) is called after each pass. Call before Start. Not owned.
  void SetHealth(health::HealthMonitor* monitor, std::function<void()> on_pass_end) {
    health_ = monitor;
    on_pass_end_ = std::move(on_pass_end);
  }

  void Start();  // first pass at once, then every interval
  void Stop();   // cancels the run in flight and joins; idempotent
  int completed_passes() const;

 private:
  Scheduler(Engine* engine, const v1::Plan& plan, absl::Duration interval, int max_items);
  void Loop();
  // Every item of every sweep, in order (ExpandSweeps: multi-device sweeps only with two or more
  // devices); the first failing sweep's error otherwise.
  absl::StatusOr<std::vector<RunSpec>> Expand() const;

  // Runs `spec` (a plan item or a confirmation) and hands its result to the health monitor.
  // False when the scheduler is stopping.
  bool RunItem(RunSpec spec, bool confirmation, int* ok, int* failed, int* busy);

  Engine* engine_;
  health::HealthMonitor* health_ = nullptr;
  std::function<void()> on_pass_end_;
  const std::vector<SweepPlan> sweeps_;  // the plan's sweeps, then its multi-device sweeps
  const absl::Duration interval_;
  const int max_items_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int passes_ = 0;
  std::shared_ptr<Job> current_;
  std::thread thread_;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_SCHEDULER_H_
