#include "server/service/benchmark_service.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"
#include "server/service/convert.h"
#include "server/service/status_adapter.h"

namespace gpubench {
namespace {

absl::Time DeadlineOf(grpc::CallbackServerContext* context) {
  const auto deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// The job a unary reactor waits on, and the client's cancellation, which may arrive before the
// job exists (then the job is cancelled as soon as it is set). Thread-safe.
class CancellableJob {
 public:
  void Set(std::shared_ptr<Job> job) {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
    if (cancelled_) job_->Cancel();
  }
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    job_.reset();
  }
  void Cancel() {
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      job = job_;
    }
    if (job) job->Cancel();
  }

 private:
  std::mutex mu_;
  std::shared_ptr<Job> job_;
  bool cancelled_ = false;
};

// RunBenchmark: waits for the job, maps verification failures to errors, forwards cancellation.
class RunReactor final : public grpc::ServerUnaryReactor {
 public:
  RunReactor(Engine* engine, grpc::CallbackServerContext* context,
             const v1::RunBenchmarkRequest* request, v1::RunBenchmarkResponse* response)
      : response_(response) {
    absl::StatusOr<RunSpec> spec = engine->Resolve(FromProto(*request));
    if (!spec.ok()) {
      Finish(ToGrpcStatus(spec.status()));
      return;
    }
    JobCallbacks callbacks;
    callbacks.on_done = [this](absl::StatusOr<RunResult> result) { Done(std::move(result)); };
    absl::StatusOr<std::shared_ptr<Job>> job =
        engine->Submit(*std::move(spec), DeadlineOf(context), std::move(callbacks), nullptr);
    if (!job.ok()) {
      Finish(ToGrpcStatus(job.status()));
      return;
    }
    job_.Set(*std::move(job));
  }

  void OnCancel() override { job_.Cancel(); }

  void OnDone() override { delete this; }

 private:
  void Done(absl::StatusOr<RunResult> result) {
    if (!result.ok()) {
      Finish(ToGrpcStatus(result.status()));
      return;
    }
    if (absl::Status v = VerificationStatus(*result); !v.ok()) {
      Finish(ToGrpcStatus(v));
      return;
    }
    ToProto(*result, response_->mutable_result());
    Finish(grpc::Status::OK);
  }

  v1::RunBenchmarkResponse* response_;
  CancellableJob job_;
};

// RunSweep: one chain of items per device; each chain submits its next item when the previous
// finishes (so other clients' runs interleave fairly), and chains on different devices run
// concurrently (all_devices). Streams QUEUED/RUNNING progress and each result or per-item error;
// one write in flight at a time.
class SweepReactor final : public grpc::ServerWriteReactor<v1::RunSweepResponse> {
 public:
  SweepReactor(Engine* engine, grpc::CallbackServerContext* context, std::vector<RunSpec> items)
      : engine_(engine), deadline_(DeadlineOf(context)), items_(std::move(items)) {
    std::map<int, size_t> chain_of_device;
    for (size_t i = 0; i < items_.size(); ++i) {
      auto [it, inserted] = chain_of_device.emplace(items_[i].device_index, chains_.size());
      if (inserted) chains_.emplace_back();
      chains_[it->second].push_back(static_cast<int>(i));
    }
    next_.assign(chains_.size(), 0);
    jobs_.resize(chains_.size());
    active_chains_ = static_cast<int>(chains_.size());
    for (size_t c = 0; c < chains_.size(); ++c) SubmitNext(c);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      cancelled_ = true;
      pending_.clear();
    }
    MaybeWriteOrFinishLocked(lock);
  }

  void OnCancel() override {
    std::vector<std::shared_ptr<Job>> jobs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      pending_.clear();
      jobs = jobs_;
    }
    for (auto& job : jobs) {
      if (job) job->Cancel();
    }
  }

  void OnDone() override { delete this; }

 private:
  // Submits chain `c`'s next item, or retires the chain. Called by the constructor and by the
  // chain's previous item's on_done (never concurrently for one chain).
  void SubmitNext(size_t c) {
    std::unique_lock<std::mutex> lock(mu_);
    if (cancelled_ || next_[c] >= chains_[c].size() || !final_status_.ok()) {
      if (cancelled_ && final_status_.ok()) {
        final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "sweep cancelled");
      }
      if (--active_chains_ == 0) all_submitted_ = true;
      MaybeWriteOrFinishLocked(lock);
      return;
    }
    const bool continuation = next_[c] > 0;  // this chain already had an item admitted
    const int index = chains_[c][next_[c]++];
    lock.unlock();
    JobCallbacks callbacks;
    // QUEUED is sent from inside Submit, before the worker can start the run: RUNNING follows it.
    callbacks.on_queued = [this, index](int position) {
      Send(Progress(index, v1::SweepProgress::QUEUED, position));
    };
    callbacks.on_start = [this, index] { Send(Progress(index, v1::SweepProgress::RUNNING, 0)); };
    callbacks.on_done = [this, c, index](absl::StatusOr<RunResult> result) {
      OnItemDone(c, index, std::move(result));
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
      // The first item found the queue full, or the server is stopping: end the stream with it.
      lock.lock();
      if (final_status_.ok()) final_status_ = ToGrpcStatus(job.status());
      if (--active_chains_ == 0) all_submitted_ = true;
      MaybeWriteOrFinishLocked(lock);
      return;
    }
    {
      std::lock_guard<std::mutex> guard(mu_);
      if (last_done_.count(index) == 0) jobs_[c] = *job;  // the item may already have finished
    }
  }

  void OnItemDone(size_t c, int index, absl::StatusOr<RunResult> result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_[c].reset();
      last_done_.insert(index);
    }
    absl::Status status = result.ok() ? VerificationStatus(*result) : result.status();
    v1::RunSweepResponse message;
    if (status.ok()) {
      ToProto(*result, message.mutable_result());
    } else {
      const RunSpec& spec = items_[index];
      v1::SweepItemError* e = message.mutable_error();
      e->set_index(index + 1);
      e->set_kernel(std::string(spec.kernel->name));
      e->set_elements(spec.elements);
      e->set_block_size(spec.geometry.block_size);
      e->set_items_per_thread(spec.geometry.items_per_thread);
      e->set_device_index(spec.device_index);
      e->set_code(static_cast<int>(status.code()));
      e->set_message(std::string(status.message()));
    }
    Send(std::move(message));
    SubmitNext(c);
  }

  v1::RunSweepResponse Progress(int index, v1::SweepProgress::State state, int position) const {
    v1::RunSweepResponse message;
    v1::SweepProgress* p = message.mutable_progress();
    p->set_state(state);
    p->set_index(index + 1);
    p->set_total(static_cast<int>(items_.size()));
    p->set_queue_position(position);
    p->set_kernel(std::string(items_[index].kernel->name));
    p->set_elements(items_[index].elements);
    p->set_block_size(items_[index].geometry.block_size);
    p->set_items_per_thread(items_[index].geometry.items_per_thread);
    p->set_device_index(items_[index].device_index);
    return message;
  }

  void Send(v1::RunSweepResponse message) {
    std::unique_lock<std::mutex> lock(mu_);
    if (cancelled_) return;
    pending_.push_back(std::move(message));
    MaybeWriteOrFinishLocked(lock);
  }

  // Starts the next write, or finishes once everything is written. Finish is the last action:
  // OnDone may delete `this` right after it, so the lock is released first.
  void MaybeWriteOrFinishLocked(std::unique_lock<std::mutex>& lock) {
    if (writing_ || finished_) return;
    if (!pending_.empty()) {
      writing_ = true;
      current_ = std::move(pending_.front());
      pending_.pop_front();
      StartWrite(&current_);
      return;
    }
    if (all_submitted_) {
      finished_ = true;
      const grpc::Status status = final_status_;
      lock.unlock();
      Finish(status);
    }
  }

  Engine* engine_;
  const absl::Time deadline_;
  const std::vector<RunSpec> items_;
  std::vector<std::vector<int>> chains_;  // item indices per device, in request order

  std::mutex mu_;
  std::vector<size_t> next_;
  std::vector<std::shared_ptr<Job>> jobs_;  // the job in flight per chain
  std::set<int> last_done_;
  int active_chains_ = 0;
  std::deque<v1::RunSweepResponse> pending_;
  v1::RunSweepResponse current_;
  bool writing_ = false;
  bool all_submitted_ = false;
  bool finished_ = false;
  bool cancelled_ = false;
  grpc::Status final_status_ = grpc::Status::OK;
};

// Autotune: runs the kernel at each block size x items per thread, one after another through the
// device queue, then answers with the table and the fastest; with apply, records it as the
// device's default.
class AutotuneReactor final : public grpc::ServerUnaryReactor {
 public:
  AutotuneReactor(Engine* engine, grpc::CallbackServerContext* context,
                  const v1::AutotuneRequest* request, v1::AutotuneResponse* response,
                  int max_items, TunedDefaultsStore* store)
      : engine_(engine), deadline_(DeadlineOf(context)), response_(response),
        apply_(request->apply()), store_(store) {
    absl::StatusOr<const KernelVariant*> kernel = FindKernel(request->kernel());
    if (!kernel.ok()) {
      Finish(ToGrpcStatus(kernel.status()));
      return;
    }
    const KernelVariant& k = **kernel;
    if (!k.default_policy.block_size_tunable) {
      Finish(ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
          "kernel ", request->kernel(), " picks its own launch configuration; nothing to tune"))));
      return;
    }
    std::vector<int32_t> blocks = ToVector(request->block_sizes());
    if (blocks.empty()) blocks = {32, 64, 128, 256, 512, 1024};
    std::vector<int32_t> items = ToVector(request->items_per_thread());
    if (items.empty()) {
      const std::vector<int> candidates = ItemsPerThreadCandidates(k);
      items.assign(candidates.begin(), candidates.end());
    }
    // Count before building anything: the lists come from the client.
    if (CountCombinations({static_cast<int64_t>(blocks.size()), static_cast<int64_t>(items.size())},
                          max_items) > max_items) {
      Finish(ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
          "more than ", max_items, " configurations (", blocks.size(), " block sizes x ",
          items.size(), " items per thread), over the limit of --max_sweep_items"))));
      return;
    }
    catalog_ = {k.default_policy.block_size, k.default_policy.items_per_thread};
    // Tiles whose shared memory the device cannot give one block are listed as skipped, not
    // run: the default grid of block sizes x items crosses that limit for the bulk kernels.
    const absl::StatusOr<DeviceInfo> device = engine_->backend().Describe(request->device_index());
    std::vector<std::pair<int32_t, int32_t>> configs;
    for (int32_t block : blocks) {
      for (int32_t i : items) {
        if (device.ok()) {
          if (absl::Status fits = CheckSharedMemoryFits(k, block, i, *device); !fits.ok()) {
            response_->add_skipped(std::string(fits.message()));
            continue;
          }
        }
        configs.emplace_back(block, i);
      }
    }
    if (std::find(configs.begin(), configs.end(), catalog_) == configs.end()) {
      configs.push_back(catalog_);  // measured too, for the speedup figure
    }
    if (static_cast<int>(configs.size()) > max_items) {
      Finish(ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrCat(configs.size(), " configurations (block sizes x items per thread), over "
                       "the limit of ", max_items, " (--max_sweep_items)"))));
      return;
    }
    for (const auto& [block, i] : configs) {
      v1::RunBenchmarkRequest one;
      one.set_kernel(request->kernel());
      one.set_elements(request->elements());
      one.set_device_index(request->device_index());
      one.set_block_size(block);
      // The catalog's items are sent as 0: variants with fixed items reject an explicit value.
      one.set_items_per_thread(ItemsPerThreadTunable(k) ? i : 0);
      *one.mutable_measurement() = request->measurement();
      absl::StatusOr<RunSpec> spec = engine_->Resolve(FromProto(one));
      if (!spec.ok()) {
        Finish(ToGrpcStatus(absl::Status(
            spec.status().code(), absl::StrCat("block_size ", block, ", items_per_thread ", i,
                                               ": ", spec.status().message()))));
        return;
      }
      items_.push_back(*std::move(spec));
    }
    response_->set_kernel(request->kernel());
    response_->set_device_index(items_[0].device_index);
    Next();
  }

  void OnCancel() override { job_.Cancel(); }

  void OnDone() override { delete this; }

 private:
  void Next() {
    if (next_ == items_.size()) {
      Complete();
      return;
    }
    const RunSpec& spec = items_[next_++];
    JobCallbacks callbacks;
    callbacks.on_done = [this](absl::StatusOr<RunResult> result) {
      job_.Reset();
      absl::Status status = result.ok() ? VerificationStatus(*result) : result.status();
      if (!status.ok()) {
        Finish(ToGrpcStatus(status));
        return;
      }
      v1::AutotuneRow* row = response_->add_rows();
      row->set_block_size(result->spec.geometry.block_size);
      row->set_items_per_thread(result->spec.geometry.items_per_thread);
      row->set_median_seconds(result->stats.median_seconds);
      row->set_bandwidth_bytes_per_second(result->bandwidth_bytes_per_second);
      row->set_relative_noise(result->stats.relative_noise);
      if (result->occupancy) row->set_theoretical_occupancy(result->occupancy->theoretical_occupancy);
      Next();
    };
    absl::StatusOr<std::shared_ptr<Job>> job =
        engine_->Submit(spec, deadline_, std::move(callbacks), nullptr);
    if (!job.ok()) {
      Finish(ToGrpcStatus(job.status()));
      return;
    }
    job_.Set(*std::move(job));
  }

  void Complete() {
    const v1::AutotuneRow* best = nullptr;
    const v1::AutotuneRow* catalog = nullptr;
    for (const v1::AutotuneRow& row : response_->rows()) {
      if (best == nullptr || row.median_seconds() < best->median_seconds()) best = &row;
      if (std::make_pair(row.block_size(), row.items_per_thread()) == catalog_) catalog = &row;
    }
    response_->set_best_block_size(best->block_size());
    response_->set_best_items_per_thread(best->items_per_thread());
    if (catalog != nullptr) {
      response_->set_speedup_over_catalog_default(catalog->median_seconds() / best->median_seconds());
    }
    if (apply_) {
      const KernelVariant& k = *items_[0].kernel;
      const TunedLaunch launch{best->block_size(),
                               ItemsPerThreadTunable(k) ? best->items_per_thread() : 0};
      if (store_ != nullptr) {
        const absl::Status saved = store_->Apply(items_[0].device_index, k, launch,
                                                 items_[0].elements,
                                                 best->bandwidth_bytes_per_second());
        if (!saved.ok()) {
          spdlog::warn("autotune {}: applied in memory, not persisted: {}", std::string(k.name),
                       saved.ToString());
        }
        response_->set_persisted(saved.ok());
      } else {
        engine_->tuned_defaults().Set(items_[0].device_index, k.name, launch);
      }
      response_->set_applied(true);
    }
    Finish(grpc::Status::OK);
  }

  Engine* engine_;
  const absl::Time deadline_;
  v1::AutotuneResponse* response_;
  const bool apply_;
  TunedDefaultsStore* const store_;
  std::pair<int32_t, int32_t> catalog_;  // (block size, items per thread) of the catalog
  std::vector<RunSpec> items_;
  size_t next_ = 0;  // touched by the constructor, then by one on_done at a time
  CancellableJob job_;
};

}  // namespace

// UNAUTHENTICATED as a finished unary reactor, or null when the call may proceed.
static grpc::ServerUnaryReactor* RejectUnauthenticated(const ServiceOptions& options,
                                                grpc::CallbackServerContext* context) {
  if (options.auth == nullptr) return nullptr;
  const absl::Status s = options.auth->Check(*context);
  if (s.ok()) return nullptr;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

grpc::ServerUnaryReactor* BenchmarkService::ListKernels(grpc::CallbackServerContext* context,
                                                        const v1::ListKernelsRequest*,
                                                        v1::ListKernelsResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  const bool cuda = engine_->backend().name() == "cuda";
  for (const KernelVariant& k : AllKernels()) {
    ToProto(k, cuda ? k.cuda != nullptr : k.cpu != nullptr, response->add_kernels());
  }
  response->set_backend(std::string(engine_->backend().name()));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* BenchmarkService::ListDevices(grpc::CallbackServerContext* context,
                                                        const v1::ListDevicesRequest*,
                                                        v1::ListDevicesResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const Backend& backend = engine_->backend();
  response->set_backend(std::string(backend.name()));
  for (int d = 0; d < backend.device_count(); ++d) {
    absl::StatusOr<DeviceInfo> info = backend.Describe(d);
    if (!info.ok()) {
      reactor->Finish(ToGrpcStatus(info.status()));
      return reactor;
    }
    ToProto(*info, response->add_devices());
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* BenchmarkService::RunBenchmark(grpc::CallbackServerContext* context,
                                                         const v1::RunBenchmarkRequest* request,
                                                         v1::RunBenchmarkResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  return new RunReactor(engine_, context, request, response);
}

grpc::ServerWriteReactor<v1::RunSweepResponse>* BenchmarkService::RunSweep(
    grpc::CallbackServerContext* context, const v1::RunSweepRequest* request) {
  // Authenticate, then validate every item before streaming anything: a bad sweep fails as a
  // whole, at once.
  absl::Status status = options_.auth ? options_.auth->Check(*context) : absl::OkStatus();
  absl::StatusOr<std::vector<RunSpec>> items = std::vector<RunSpec>();
  if (status.ok()) {
    items = ExpandSweep(*request, *engine_, options_.max_sweep_items);
    status = items.status();
  }
  if (!status.ok()) {
    class FailedReactor final : public grpc::ServerWriteReactor<v1::RunSweepResponse> {
     public:
      explicit FailedReactor(const grpc::Status& status) { Finish(status); }
      void OnDone() override { delete this; }
    };
    return new FailedReactor(ToGrpcStatus(status));
  }
  return new SweepReactor(engine_, context, *std::move(items));
}

}  // namespace gpubench

namespace gpubench {

grpc::ServerUnaryReactor* BenchmarkService::Autotune(grpc::CallbackServerContext* context,
                                                     const v1::AutotuneRequest* request,
                                                     v1::AutotuneResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  return new AutotuneReactor(engine_, context, request, response, options_.max_sweep_items,
                             options_.tuned_store);
}

grpc::ServerUnaryReactor* BenchmarkService::GetServerInfo(grpc::CallbackServerContext* context,
                                                          const v1::GetServerInfoRequest*,
                                                          v1::GetServerInfoResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  *response = options_.server_info;
  response->set_backend(std::string(engine_->backend().name()));
  response->set_device_count(engine_->backend().device_count());
  response->set_authentication_required(options_.auth != nullptr && options_.auth->enabled());
  const ServerLimits& limits = engine_->limits();
  v1::ServerLimitsInfo* l = response->mutable_limits();
  l->set_max_elements(limits.max_elements);
  l->set_queue_capacity(limits.queue_capacity);
  l->set_max_sweep_items(options_.max_sweep_items);
  l->set_max_warmup_launches(limits.max_warmup_launches);
  l->set_max_samples(limits.max_samples_limit);
  l->set_max_min_time_seconds(limits.max_min_time_seconds);
  l->set_max_timeout_seconds(limits.max_timeout_seconds);
  l->set_allow_profiling(limits.allow_profiling);
  l->set_max_warmup_seconds(limits.max_warmup_seconds);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace gpubench
