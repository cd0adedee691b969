#include "server/engine/engine.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/engine/measurement.h"

namespace gpubench {

void Job::Cancel() {
  if (cancelled_.exchange(true)) return;
  if (worker_ != nullptr) worker_->Remove(this);
}

DeviceWorker::DeviceWorker(int device_index, Backend* backend, int capacity,
                           const std::vector<RunObserver*>* observers,
                           const std::function<void(int, const absl::Status&)>* device_lost,
                           const NvmlMonitor* const* monitor, const ServerLimits* limits,
                           std::atomic<int64_t>* reserved_host_bytes,
                           DeviceRunner* const* runner)
    : device_index_(device_index),
      backend_(backend),
      capacity_(capacity),
      observers_(observers),
      device_lost_(device_lost),
      monitor_(monitor),
      limits_(limits),
      reserved_host_bytes_(reserved_host_bytes),
      runner_(runner),
      host_pool_(0),
      thread_([this] { Loop(); }) {}

DeviceWorker::~DeviceWorker() { Stop(); }

absl::Status DeviceWorker::Enqueue(RunSpec spec, std::shared_ptr<Job> job,
                                   JobCallbacks callbacks, int* position, bool continuation) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || draining_) {
      return absl::UnavailableError("server is shutting down; not accepting runs");
    }
    const int limit = continuation ? 2 * capacity_ : capacity_;
    if (static_cast<int>(queue_.size()) >= limit) {
      return absl::ResourceExhaustedError(
          absl::StrCat("device ", device_index_, " queue is full (", queue_.size(),
                       " runs waiting; flag --queue_capacity); retry later"));
    }
    const int ahead = static_cast<int>(queue_.size()) + (running_ ? 1 : 0);
    if (position != nullptr) *position = ahead;
    // Under the lock: the worker cannot take the run (and call on_start) before this returns.
    if (callbacks.on_queued) callbacks.on_queued(ahead);
    queue_.push_back(Item{std::move(spec), std::move(job), std::move(callbacks), absl::Now()});
  }
  cv_.notify_one();
  PublishDepth();
  return absl::OkStatus();
}

int DeviceWorker::depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size()) + (running_ ? 1 : 0);
}

void DeviceWorker::PublishDepth() {
  const int d = depth();
  for (RunObserver* o : *observers_) o->OnQueueDepth(device_index_, d);
}

void DeviceWorker::Remove(Job* job) {
  std::optional<Item> removed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->job.get() == job) {
        removed = std::move(*it);
        queue_.erase(it);
        break;
      }
    }
  }
  if (removed) {
    const absl::Status status = absl::Now() >= job->deadline()
                                    ? absl::DeadlineExceededError("deadline passed while queued")
                                    : absl::CancelledError("run cancelled while queued");
    // Logged and counted (gpubench_runs_total) as Execute counts a run it finds expired or
    // cancelled when it takes it: which of the two sees the run first is a race.
    Report(*removed, status, absl::ZeroDuration());
    removed->callbacks.on_done(status);
    PublishDepth();
  }
}

void DeviceWorker::Stop() {
  std::deque<Item> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
    if (current_) current_->cancelled_.store(true);
  }
  cv_.notify_all();
  for (Item& item : dropped) {
    item.callbacks.on_done(absl::UnavailableError("server shut down before the run started"));
  }
  Join();
}

void DeviceWorker::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  cv_.notify_all();
  Join();
}

void DeviceWorker::Join() {
  // Stop() and Drain() may race (a shutdown that times out); join exactly once, others wait.
  std::call_once(join_once_, [this] { thread_.join(); });
}

absl::Status DeviceWorker::AdmitMemory(const RunSpec& spec, const DeviceInfo& device,
                                       bool reuses_kept_buffers, int64_t* reserved) {
  *reserved = 0;
  if (limits_ == nullptr || reserved_host_bytes_ == nullptr) return absl::OkStatus();
  const BackendCapabilities can = backend_->capabilities();
  const bool device_is_host = can.device_is_host;
  // Kept buffers are allocated: the free memory just described is without them already, and
  // the host's (MemAvailable) too, where they are host memory. Counted once, by the reads.
  const RunMemory need = RunMemoryOf(spec, can, device, reuses_kept_buffers);
  const HostMemoryBudget host = ReadHostMemoryBudget(limits_->host_memory);
  std::optional<int64_t> available = host.available_bytes();
  // Runs in progress on other devices may not have allocated everything yet: count their
  // reservations too (conservative: what they did allocate is counted twice).
  const int64_t others = reserved_host_bytes_->load();
  if (available.has_value()) available = *available - others;
  RETURN_IF_ERROR(CheckRunMemoryFits(
      need, device, device_is_host, available,
      absl::StrCat(host.Describe(), others > 0 ? absl::StrCat(", ", others, " bytes reserved by "
                                                              "runs in progress")
                                               : "")));
  *reserved = need.host_bytes + (device_is_host ? need.device_bytes : 0);
  reserved_host_bytes_->fetch_add(*reserved);
  return absl::OkStatus();
}

bool DeviceWorker::ReusesKeptBuffers(const RunSpec& spec) const {
  return kept_.has_value() && spec.buffer_chain == kept_->chain &&
         BufferKeyOf(spec, backend_->capabilities()) == kept_->key;
}

void DeviceWorker::ReleaseKeptBuffers() {
  if (!kept_.has_value()) return;
  kept_.reset();
  backend_->ReleaseCachedBuffers(device_index_);  // the worker's, through WorkerBackend
}

void DeviceWorker::KeepOrRelease(const RunSpec& spec, const absl::StatusOr<RunResult>& result) {
  if (result.ok() && result->phases.buffers_kept) {
    kept_ =
        KeptBuffers{.chain = spec.buffer_chain, .key = BufferKeyOf(spec, backend_->capabilities())};
    return;
  }
  // A run that kept nothing either took the kept buffers and freed them with its session, or
  // ended before its Open (refused, cancelled, not admitted) with them still held: free them.
  ReleaseKeptBuffers();
}

bool DeviceWorker::Take(Item* item) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto ready = [&] { return stopping_ || draining_ || !queue_.empty(); };
  // A sweep queues its next item before this is reached (SweepRun submits it from on_done), a
  // scheduled plan a moment later. No run by then: the sweep ended early (cancelled, its next
  // item refused) or waits for its consumer; the buffers kept for it are freed meanwhile.
  if (kept_.has_value() && !cv_.wait_for(lock, kKeptBuffersIdle, ready)) {
    lock.unlock();
    ReleaseKeptBuffers();
    lock.lock();
  }
  cv_.wait(lock, ready);
  if (queue_.empty() || stopping_) return false;
  *item = std::move(queue_.front());
  queue_.pop_front();
  running_ = true;
  current_ = item->job;
  return true;
}

absl::StatusOr<RunResult> DeviceWorker::Execute(const Item& item) {
  const Job& job = *item.job;
  if (job.cancelled()) return absl::CancelledError("run cancelled while queued");
  if (absl::Now() >= job.deadline()) {
    return absl::DeadlineExceededError("deadline passed while the run was queued");
  }
  if (*monitor_ != nullptr && !item.spec.force) {
    RETURN_IF_ERROR((*monitor_)->CheckIdle(device_index_));  // shared node: a tenant uses it
  }
  if (item.callbacks.on_start) item.callbacks.on_start();
  absl::StatusOr<RunResult> result = Measure(item);
  // A client whose deadline passed also cancels its RPC: report the deadline, not the cancel.
  if (!result.ok() && result.status().code() == absl::StatusCode::kCancelled &&
      absl::Now() >= job.deadline()) {
    return absl::DeadlineExceededError("deadline passed while the run was measuring");
  }
  return result;
}

absl::StatusOr<RunResult> DeviceWorker::Measure(const Item& item) {
  // Kept buffers that are not this run's are freed before the device is described, so that this
  // run's admission sees their memory free.
  const bool reuses_kept_buffers = ReusesKeptBuffers(item.spec);
  if (!reuses_kept_buffers) ReleaseKeptBuffers();
  const Job* job = item.job.get();
  const CancelledFn cancelled = [job] {
    return job->cancelled() || absl::Now() >= job->deadline();
  };
  DeviceRunner* runner = runner_ != nullptr ? *runner_ : nullptr;
  if (runner != nullptr) RETURN_IF_ERROR(runner->Prepare(item.spec, cancelled));
  // The device, described once for this run: memory admission, the measurement and the result.
  ASSIGN_OR_RETURN(const DeviceInfo device, backend_->Describe(device_index_));
  int64_t reserved = 0;
  // Before anything is allocated.
  RETURN_IF_ERROR(AdmitMemory(item.spec, device, reuses_kept_buffers, &reserved));
  std::string no_watch = "NVML not loaded";
  std::unique_ptr<ClockEventWatch> watch =
      *monitor_ != nullptr ? (*monitor_)->WatchClockEvents(device_index_, &no_watch) : nullptr;
  absl::StatusOr<RunResult> result =
      runner != nullptr ? runner->Measure(item.spec, device, job->deadline(), cancelled)
                        : MeasureRun(*backend_, item.spec, device, cancelled, &host_pool_);
  if (reserved > 0) reserved_host_bytes_->fetch_sub(reserved);
  absl::StatusOr<std::vector<std::string>> reasons =
      watch ? watch->Stop()
            : absl::StatusOr<std::vector<std::string>>(absl::UnavailableError(no_watch));
  if (!result.ok()) return result;
  FinishRunResult({.queued_at = item.queued_at,
                   .copy_ceiling = &copy_ceiling_,
                   .clock_event_reasons = std::move(reasons)},
                  &*result);
  if (limits_ != nullptr && limits_->test_output_hash_xor != 0 && result->output_hash) {
    *result->output_hash ^= limits_->test_output_hash_xor;
  }
  // Peer copies: how NVML sees the two devices connected (NVLink or PCIe).
  if (item.spec.peer_device_index >= 0 && *monitor_ != nullptr &&
      !backend_->capabilities().device_is_host) {
    if (std::optional<std::string> path =
            (*monitor_)->PeerPath(device_index_, item.spec.peer_device_index)) {
      absl::StrAppend(&result->launch_report, result->launch_report.empty() ? "" : "; ", *path);
    }
  }
  return result;
}

void DeviceWorker::Report(const Item& item, const absl::StatusOr<RunResult>& result,
                          absl::Duration wall) {
  const RunSpec& spec = item.spec;
  if (result.ok()) {
    spdlog::info("run {} kernel={} n={} device={} mode={} median={:.3e}s bw={:.3e}B/s {}",
                 result->run_id, std::string(spec.kernel->name), spec.elements, spec.device_index,
                 CacheModeName(spec.cache_mode), result->stats.median_seconds,
                 result->bandwidth_bytes_per_second, RunOutcomeName(OutcomeOf(*result)));
  } else {
    spdlog::warn("run kernel={} n={} device={} failed: {}", std::string(spec.kernel->name),
                 spec.elements, spec.device_index, result.status().ToString());
  }
  for (RunObserver* o : *observers_) o->OnRunFinished(spec, result, wall);
  if (!result.ok() && IsDeviceLost(result.status()) && *device_lost_) {
    spdlog::critical("device {} lost: {}", device_index_, result.status().ToString());
    (*device_lost_)(device_index_, result.status());
  }
}

void DeviceWorker::Loop() {
  while (true) {
    Item item;  // released at the end of each iteration: the job and its callbacks
    if (!Take(&item)) {
      ReleaseKeptBuffers();
      return;
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<RunResult> result = Execute(item);
    KeepOrRelease(item.spec, result);
    Report(item, result, absl::Now() - start);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = false;
      current_.reset();
    }
    item.callbacks.on_done(std::move(result));
    PublishDepth();
  }
}

Engine::Engine(std::unique_ptr<Backend> backend, ServerLimits limits)
    : backend_(std::move(backend)), limits_(limits) {
  for (int d = 0; d < backend_->device_count(); ++d) {
    workers_.push_back(
        std::make_unique<DeviceWorker>(d, backend_.get(), limits_.queue_capacity, &observers_,
                                       &device_lost_, &monitor_, &limits_, &reserved_host_bytes_,
                                       &runner_));
  }
}

Engine::~Engine() {
  for (auto& w : workers_) w->Stop();
}

absl::StatusOr<RunSpec> Engine::Resolve(const RunRequest& request) const {
  return ResolveRunRequest(request, *backend_, limits_, &tuned_);
}

absl::StatusOr<std::shared_ptr<Job>> Engine::Submit(RunSpec spec, absl::Time deadline,
                                                    JobCallbacks callbacks, int* position,
                                                    bool continuation) {
  if (spec.device_index < 0 || spec.device_index >= static_cast<int>(workers_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("device_index ", spec.device_index,
                                                   " out of range"));
  }
  if (runner_ != nullptr) RETURN_IF_ERROR(runner_->Available(spec.device_index));
  auto job = std::make_shared<Job>(deadline, workers_[spec.device_index].get());
  const int device = spec.device_index;
  absl::Status s = workers_[device]->Enqueue(std::move(spec), job, std::move(callbacks), position,
                                             continuation);
  if (!s.ok()) return s;
  return job;
}

int Engine::QueueDepth(int device_index) const {
  return workers_.at(device_index)->depth();
}

void Engine::Shutdown(absl::Duration grace) {
  std::vector<std::future<void>> drains;
  for (auto& w : workers_) {
    drains.push_back(std::async(std::launch::async, [&w] { w->Drain(); }));
  }
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(absl::ToInt64Milliseconds(grace));
  std::vector<std::pair<size_t, std::future<void>>> stops;
  for (size_t i = 0; i < drains.size(); ++i) {
    if (drains[i].wait_until(until) != std::future_status::ready) {
      spdlog::warn("device {} did not drain within the grace period; cancelling", i);
      stops.emplace_back(i, std::async(std::launch::async, [this, i] { workers_[i]->Stop(); }));
    }
  }
  // A run stops at its next sample boundary; one still in setup (input generation, allocation)
  // or in a launch that never returns does not: after kAbandonAfter its worker is ended.
  constexpr auto kAbandonAfter = std::chrono::seconds(1);
  const auto abandon_at = std::chrono::steady_clock::now() + kAbandonAfter;
  for (auto& [device, stop] : stops) {
    if (stop.wait_until(abandon_at) == std::future_status::ready || runner_ == nullptr) continue;
    const std::string why = absl::StrCat(
        "the server is shutting down and the run was abandoned 1s after its shutdown grace (",
        absl::FormatDuration(grace),
        ") ran out, still in setup (input generation, allocation) or in a launch");
    spdlog::warn("device {}: {}", device, why);
    runner_->Abandon(static_cast<int>(device), why);
  }
  for (auto& f : drains) f.wait();
}

}  // namespace gpubench
