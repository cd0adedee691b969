#include "server/service/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/engine/run_op.h"
#include "server/engine/sweep.h"
#include "server/service/convert.h"

namespace gpubench {

namespace {

// The plan's sweeps, then its multi-device sweeps (marked so: ExpandSweeps leaves them out on a
// one-device server).
std::vector<SweepPlan> SweepsOf(const v1::Plan& plan) {
  std::vector<SweepPlan> sweeps;
  for (const v1::RunSweepRequest& sweep : plan.sweeps()) sweeps.push_back(FromProto(sweep));
  for (const v1::RunSweepRequest& sweep : plan.multi_device_sweeps()) {
    sweeps.push_back(FromProto(sweep));
    sweeps.back().multi_device = true;
  }
  return sweeps;
}

}  // namespace

Scheduler::Scheduler(Engine* engine, const v1::Plan& plan, absl::Duration interval, int max_items)
    : engine_(engine), sweeps_(SweepsOf(plan)), interval_(interval), max_items_(max_items) {}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Engine* engine, const v1::Plan& plan,
                                                             absl::Duration interval,
                                                             int max_items) {
  if (interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the schedule interval must be positive");
  }
  // Refused, not run in the user-kernel worker: scheduled results are the device's health
  // evidence and its long-lived metrics, and a pass runs unattended with no client to count
  // against the per-client user-kernel limits or to read a user kernel's verdict.
  const auto refuse = [](const char* list, int index) {
    return absl::InvalidArgumentError(absl::StrCat(
        list, " ", index,
        " of the plan carries a user_kernel: scheduled plans run catalog kernels only (their "
        "results are the devices' health evidence); run user kernels with RunSweep or "
        "gpubench fleet --plan (docs/user-kernels.md)"));
  };
  for (int i = 0; i < plan.sweeps_size(); ++i) {
    if (plan.sweeps(i).has_user_kernel()) return refuse("sweep", i + 1);
  }
  for (int i = 0; i < plan.multi_device_sweeps_size(); ++i) {
    if (plan.multi_device_sweeps(i).has_user_kernel()) return refuse("multi-device sweep", i + 1);
  }
  std::unique_ptr<Scheduler> scheduler(new Scheduler(engine, plan, interval, max_items));
  if (absl::StatusOr<std::vector<RunSpec>> items = scheduler->Expand(); !items.ok()) {
    return items.status();
  }
  const auto left_out =
      std::count_if(scheduler->sweeps_.begin(), scheduler->sweeps_.end(),
                    [&](const SweepPlan& sweep) { return !SweepFitsDevices(sweep, *engine); });
  if (left_out > 0) {
    spdlog::info("scheduled plan: {} multi-device sweep(s) left out: this server has one device",
                 left_out);
  }
  return scheduler;
}

absl::StatusOr<std::vector<RunSpec>> Scheduler::Expand() const {
  return ExpandSweeps(sweeps_, *engine_, max_items_);
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() { thread_ = std::thread([this] { Loop(); }); }

void Scheduler::Stop() {
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    job = current_;
  }
  cv_.notify_all();
  if (job) job->Cancel();
  if (thread_.joinable()) thread_.join();
}

int Scheduler::completed_passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

bool Scheduler::RunItem(RunSpec spec, bool confirmation, int* ok, int* failed, int* busy) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return false;
  }
  bool queued = false;
  const std::string kernel(spec.kernel->name);
  const RunSpec copy = spec;
  absl::StatusOr<RunResult> result =
      RunAndWait(*engine_, std::move(spec), absl::Now() + interval_, [&](std::shared_ptr<Job> job) {
        queued = true;
        std::lock_guard<std::mutex> lock(mu_);
        current_ = job;
        if (stop_) job->Cancel();
      });
  if (!queued) {
    spdlog::warn("scheduled run of {} not queued: {}", kernel,
                 std::string(result.status().message()));
  }
  if (health_ != nullptr) health_->Observe(copy, result, confirmation);
  (result.ok() ? *ok : IsGpuBusy(result.status()) ? *busy : *failed)++;
  return true;
}

void Scheduler::Loop() {
  while (true) {
    // Re-resolved every pass: fresh random seeds unless the plan fixes one, fresh memory checks.
    absl::StatusOr<std::vector<RunSpec>> items = Expand();
    if (!items.ok()) {
      spdlog::warn("scheduled plan rejected this pass: {}", std::string(items.status().message()));
    } else {
      // Consecutive items with the same buffers share them; a confirmation re-run between two
      // ends the chain (its device frees what was kept before measuring it).
      MarkBufferReuse(*items, engine_->backend().capabilities());
      int ok = 0, failed = 0, busy = 0, confirmations = 0;
      int unused_ok = 0, unused_failed = 0, unused_busy = 0;
      auto confirm = [&]() -> std::optional<bool> {
        if (health_ == nullptr) return std::nullopt;
        std::optional<RunSpec> again = health_->NextConfirmation();
        if (!again) return std::nullopt;
        ++confirmations;
        return RunItem(*std::move(again), true, &unused_ok, &unused_failed, &unused_busy);
      };
      bool stopped = false;
      for (RunSpec& spec : *items) {
        spec.scheduled = true;
        if (!RunItem(std::move(spec), false, &ok, &failed, &busy)) return;
        // One confirmation re-run after each plan item: interleaved, never back to back.
        if (std::optional<bool> ran = confirm(); ran && !*ran) return;
      }
      // What is still wanted, at the pass's end.
      while (std::optional<bool> ran = confirm()) {
        if (!*ran) {
          stopped = true;
          break;
        }
      }
      if (stopped) return;
      spdlog::info("scheduled pass done: {} ok, {} failed, {} skipped (gpu_busy){}", ok, failed,
                   busy,
                   confirmations > 0 ? fmt::format("; {} confirmation re-run(s)", confirmations)
                                     : std::string());
      if (health_ != nullptr) {
        if (absl::Status saved = health_->EndPass(); !saved.ok()) {
          spdlog::warn("health state not saved: {}", std::string(saved.message()));
        }
      }
      if (on_pass_end_) on_pass_end_();
    }
    std::unique_lock<std::mutex> lock(mu_);
    current_.reset();
    ++passes_;
    if (cv_.wait_for(lock, std::chrono::milliseconds(absl::ToInt64Milliseconds(interval_)),
                     [&] { return stop_; })) {
      return;
    }
  }
}

}  // namespace gpubench
