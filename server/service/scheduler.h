// Scheduled runs: a plan (a RunSweepRequest in protobuf's JSON mapping — the same shape as a
// grpcurl RunSweep body) is run every interval through the same device queues as RPC work, so
// dashboards have fresh data without any client.
#ifndef GPUBENCH_SERVER_SERVICE_SCHEDULER_H_
#define GPUBENCH_SERVER_SERVICE_SCHEDULER_H_

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gpubench/v1/benchmark.pb.h"
#include "server/engine/engine.h"

namespace gpubench {

// Parses a plan file's JSON text. INVALID_ARGUMENT with the parser's message on bad JSON.
absl::StatusOr<v1::RunSweepRequest> ParsePlan(const std::string& json);

class Scheduler {
 public:
  // Validates the plan now (every item resolved), so a bad plan fails at start-up.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(Engine* engine,
                                                           const v1::RunSweepRequest& plan,
                                                           absl::Duration interval,
                                                           int max_items);
  ~Scheduler();  // Stop()

  void Start();  // first pass at once, then every interval
  void Stop();   // cancels the run in flight and joins; idempotent
  int completed_passes() const;

 private:
  Scheduler(Engine* engine, v1::RunSweepRequest plan, absl::Duration interval, int max_items)
      : engine_(engine), plan_(std::move(plan)), interval_(interval), max_items_(max_items) {}
  void Loop();

  Engine* engine_;
  const v1::RunSweepRequest plan_;
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
