#include "server/engine/sweep.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/echo.h"

namespace gpubench {

int64_t CountCombinations(std::initializer_list<int64_t> factors, int64_t limit) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (f <= 0) return 0;
    if (product > limit / f) return limit + 1;  // over the limit: stop before overflowing
    product *= f;
  }
  return product;
}

absl::StatusOr<std::vector<RunSpec>> ExpandSweep(const SweepPlan& plan, const Engine& engine,
                                                 int max_items) {
  const std::optional<UserKernelRequest>& user = plan.base.user_kernel;
  if (user.has_value()) {
    if (!plan.kernels.empty()) {
      return absl::InvalidArgumentError(
          "kernels and user_kernel are exclusive: a sweep of a user kernel leaves kernels empty "
          "(its items are its sizes, block sizes and items per thread)");
    }
    if (user->compare) {
      return absl::InvalidArgumentError(
          "user_kernel.compare is for RunBenchmark (gpubench run --compare); a sweep measures the "
          "user kernel alone");
    }
    if (plan.sizes.empty()) return absl::InvalidArgumentError("a sweep needs at least one size");
  } else if (plan.kernels.empty() || plan.sizes.empty()) {
    return absl::InvalidArgumentError("a sweep needs at least one kernel and one size");
  }
  // A user kernel's sweep is one kernel: its items are sizes x launches.
  const std::vector<std::string> kernels =
      user.has_value() ? std::vector<std::string>{std::string(kUserKernelName)} : plan.kernels;
  const int64_t count = CountCombinations(
      {static_cast<int64_t>(kernels.size()), static_cast<int64_t>(plan.sizes.size()),
       std::max<int64_t>(1, plan.block_sizes.size()),
       std::max<int64_t>(1, plan.items_per_thread.size())},
      max_items);
  if (count > max_items) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the sweep has more than ", max_items,
        " items (kernels x sizes x block sizes x items per thread), this server's limit "
        "(--max_sweep_items)"));
  }
  std::vector<int> blocks = plan.block_sizes;
  if (blocks.empty()) blocks.push_back(0);
  std::vector<int> items_list = plan.items_per_thread;
  if (items_list.empty()) items_list.push_back(0);
  std::vector<int> devices = {plan.base.device_index};
  if (plan.all_devices) {
    devices.clear();
    for (int d = 0; d < engine.backend().device_count(); ++d) devices.push_back(d);
  }
  if (CountCombinations({count, static_cast<int64_t>(devices.size())}, max_items) > max_items) {
    return absl::InvalidArgumentError(absl::StrCat("the sweep has ", count * devices.size(),
                                                   " items on all devices, over this server's "
                                                   "limit of ", max_items,
                                                   " (--max_sweep_items)"));
  }
  std::vector<RunSpec> items;
  // A user kernel's validated spec, one per launch: the items of a launch share it (and its code)
  // instead of holding a copy each.
  std::map<std::pair<int, int>, std::shared_ptr<const UserKernelSpec>> user_specs;
  for (int device : devices) {
    for (const std::string& kernel : kernels) {
      for (int64_t size : plan.sizes) {
        for (int block : blocks) {
          for (int items_per_thread : items_list) {
            RunRequest one = plan.base;
            one.elements = size;
            one.device_index = device;
            if (plan.all_devices) one.device_uuid.clear();
            if (user.has_value()) {
              // The lists replace the user kernel's own launch where given.
              if (block != 0) one.user_kernel->launch.block_size = block;
              if (items_per_thread != 0) {
                one.user_kernel->launch.items_per_thread = items_per_thread;
              }
            } else {
              one.kernel = kernel;
              one.block_size = block;
              one.items_per_thread = items_per_thread;
            }
            absl::StatusOr<RunSpec> spec = engine.Resolve(one);
            if (!spec.ok()) {
              return absl::Status(
                  spec.status().code(),
                  absl::StrCat(
                      "sweep item ",
                      user.has_value() ? absl::StrCat("user_kernel=", EchoForMessage(user->entry))
                                       : absl::StrCat("kernel=", EchoForMessage(kernel)),
                      " elements=", size, " block_size=", block,
                      " items_per_thread=", items_per_thread, ": ", spec.status().message()));
            }
            if (spec->user_kernel != nullptr) {
              auto [it, first] =
                  user_specs.emplace(std::make_pair(block, items_per_thread), spec->user_kernel);
              if (!first) {
                spec->user_kernel = it->second;
                spec->kernel = &it->second->variant;
              }
            }
            items.push_back(*std::move(spec));
          }
        }
      }
    }
  }
  return items;
}

bool SweepFitsDevices(const SweepPlan& plan, const Engine& engine) {
  return !plan.multi_device || engine.backend().device_count() >= 2;
}

absl::StatusOr<std::vector<RunSpec>> ExpandSweeps(std::span<const SweepPlan> plans,
                                                  const Engine& engine, int max_items) {
  std::vector<RunSpec> all;
  int sweeps = 0, multi_device_sweeps = 0;
  for (const SweepPlan& plan : plans) {
    const std::string which = plan.multi_device
                                  ? absl::StrCat("multi-device sweep ", ++multi_device_sweeps)
                                  : absl::StrCat("sweep ", ++sweeps);
    if (!SweepFitsDevices(plan, engine)) continue;
    absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, engine, max_items);
    if (!items.ok()) {
      return absl::Status(items.status().code(),
                          absl::StrCat(which, " of the plan: ", items.status().message()));
    }
    all.insert(all.end(), std::make_move_iterator(items->begin()),
               std::make_move_iterator(items->end()));
  }
  return all;
}

void MarkBufferReuse(std::span<RunSpec> items, const BackendCapabilities& can) {
  static std::atomic<uint64_t> next_chain{1};
  // Per device: its previous item, and that item's key.
  std::map<int, std::pair<size_t, BufferKey>> previous;
  for (size_t i = 0; i < items.size(); ++i) {
    RunSpec& spec = items[i];
    spec.keep_buffers = false;
    spec.buffer_chain = 0;
    if (spec.user_kernel != nullptr) {
      previous.erase(spec.device_index);
      continue;
    }
    BufferKey key = BufferKeyOf(spec, can);
    if (auto it = previous.find(spec.device_index);
        it != previous.end() && it->second.second == key) {
      RunSpec& before = items[it->second.first];
      before.keep_buffers = true;
      spec.buffer_chain = before.buffer_chain;
    } else {
      spec.buffer_chain = next_chain.fetch_add(1);
    }
    previous[spec.device_index] = {i, std::move(key)};
  }
}

SweepRun::SweepRun(Engine* engine, std::vector<RunSpec> items, absl::Time deadline,
                   SweepCallbacks callbacks)
    : engine_(engine),
      items_(std::move(items)),
      deadline_(deadline),
      callbacks_(std::move(callbacks)) {
  std::map<int, size_t> chain_of_device;
  for (size_t i = 0; i < items_.size(); ++i) {
    auto [it, inserted] = chain_of_device.emplace(items_[i].device_index, chains_.size());
    if (inserted) chains_.emplace_back();
    chains_[it->second].push_back(static_cast<int>(i));
  }
  next_.assign(chains_.size(), 0);
  jobs_.resize(chains_.size());
  done_.assign(items_.size(), false);
  active_chains_ = static_cast<int>(chains_.size());
}

std::shared_ptr<SweepRun> SweepRun::Start(Engine* engine, std::vector<RunSpec> items,
                                          absl::Time deadline, SweepCallbacks callbacks) {
  MarkBufferReuse(items, engine->backend().capabilities());
  std::shared_ptr<SweepRun> run(
      new SweepRun(engine, std::move(items), deadline, std::move(callbacks)));
  if (run->chains_.empty()) {
    run->callbacks_.on_finished(absl::OkStatus());
    return run;
  }
  for (size_t c = 0; c < run->chains_.size(); ++c) run->SubmitNext(c);
  return run;
}

void SweepRun::Cancel() {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    jobs = jobs_;
  }
  for (auto& job : jobs) {
    if (job) job->Cancel();
  }
  Resume();  // parked chains retire
}

void SweepRun::Resume() {
  std::vector<size_t> chains;
  {
    std::lock_guard<std::mutex> lock(mu_);
    chains.swap(parked_);
  }
  for (size_t c : chains) SubmitNext(c);
}

void SweepRun::RetireLocked(std::unique_lock<std::mutex>& lock) {
  if (--active_chains_ > 0) return;
  const absl::Status status = status_;
  lock.unlock();
  callbacks_.on_finished(status);
}

void SweepRun::SubmitNext(size_t c) {
  std::unique_lock<std::mutex> lock(mu_);
  if (cancelled_ || next_[c] >= chains_[c].size() || !status_.ok()) {
    if (cancelled_ && status_.ok()) status_ = absl::CancelledError("sweep cancelled");
    RetireLocked(lock);
    return;
  }
  // Asked under the lock: a Resume that follows the consumer's room then finds this chain parked.
  if (callbacks_.has_room && !callbacks_.has_room()) {
    parked_.push_back(c);
    return;
  }
  const bool continuation = next_[c] > 0;  // this chain already had an item admitted
  const int index = chains_[c][next_[c]++];
  lock.unlock();
  JobCallbacks callbacks;
  // on_queued is called from inside Submit, before the worker can start the run.
  callbacks.on_queued = [this, index](int position) {
    if (callbacks_.on_queued) callbacks_.on_queued(index, position);
  };
  callbacks.on_start = [this, index] {
    if (callbacks_.on_start) callbacks_.on_start(index);
  };
  callbacks.on_done = [self = shared_from_this(), c, index](absl::StatusOr<RunResult> result) {
    self->OnItemDone(c, index, std::move(result));
  };
  absl::StatusOr<std::shared_ptr<Job>> job =
      engine_->Submit(items_[index], deadline_, std::move(callbacks), nullptr, continuation);
  if (!job.ok()) {
    if (continuation && job.status().code() == absl::StatusCode::kResourceExhausted) {
      // An admitted sweep whose next item finds even the continuation allowance full: that
      // item is refused visibly, the rest still get their turn.
      OnItemDone(c, index, job.status());
      return;
    }
    // The first item found the queue full, or the server is stopping: the sweep ends with it.
    lock.lock();
    if (status_.ok()) status_ = job.status();
    RetireLocked(lock);
    return;
  }
  bool cancel = false;
  {
    std::lock_guard<std::mutex> guard(mu_);
    if (!done_[index]) jobs_[c] = *job;  // the item may already have finished
    cancel = cancelled_;
  }
  if (cancel) (*job)->Cancel();  // a cancel that came while this item was being queued
}

void SweepRun::OnItemDone(size_t c, int index, absl::StatusOr<RunResult> result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[c].reset();
    done_[index] = true;
  }
  if (absl::Status status = RunStatus(result); !status.ok()) result = status;
  callbacks_.on_item(index, std::move(result));
  SubmitNext(c);
}

}  // namespace gpubench
