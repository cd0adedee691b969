#include "server/service/benchmark_service.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/engine/autotune.h"
#include "server/engine/run_op.h"
#include "server/engine/sweep.h"
#include "server/service/convert.h"
#include "server/service/status_adapter.h"
#include "server/service/validate_enums.h"
#include "spdlog/spdlog.h"

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

// RunBenchmark: the Run operation; forwards cancellation.
class RunReactor final : public grpc::ServerUnaryReactor {
 public:
  // `slot`: the client's place among its user-kernel runs in flight (empty for catalog runs),
  // given back when the run ends.
  RunReactor(Engine* engine, grpc::CallbackServerContext* context,
             const v1::RunBenchmarkRequest* request, v1::RunBenchmarkResponse* response,
             ClientSlot slot)
      : response_(response), slot_(std::move(slot)) {
    absl::StatusOr<std::shared_ptr<Job>> job =
        SubmitRun(*engine, FromProto(*request), DeadlineOf(context),
                  [this](absl::StatusOr<RunResult> result) { Done(std::move(result)); });
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
    slot_.Release();
    if (!result.ok()) {
      Finish(ToGrpcStatus(result.status()));
      return;
    }
    ToProto(*result, response_->mutable_result());
    Finish(grpc::Status::OK);
  }

  v1::RunBenchmarkResponse* response_;
  ClientSlot slot_;
  CancellableJob job_;
};

// RunSweep: the Sweep operation (SweepRun), streamed: QUEUED/RUNNING progress and each result or
// per-item error, one write in flight at a time. Backpressure: gRPC completes a write only once
// HTTP/2 flow control lets it out, so a client that stops reading stops the writes; with
// kMaxBuffered messages waiting the sweep queues no further item (it stalls, holding no queue
// slot) until the client reads again. It is never cancelled for being slow: nothing is lost, and
// what a stalled stream holds is bounded; its deadline, cancellation or disconnection ends it.
class SweepReactor final : public grpc::ServerWriteReactor<v1::RunSweepResponse> {
 public:
  // Beyond these, at most the item in flight on each device and its progress messages
  // (docs/security.md: the sweep stream's bound).
  static constexpr int kMaxBuffered = 8;

  // `slot`: a user-kernel sweep's place among its client's user-kernel runs in flight (one for
  // the whole sweep: its items run one at a time per device), given back when the sweep ends.
  SweepReactor(Engine* engine, grpc::CallbackServerContext* context, std::vector<RunSpec> items,
               ClientSlot slot)
      : items_(items), slot_(std::move(slot)) {
    SweepCallbacks callbacks;
    callbacks.on_queued = [this](int index, int position) {
      Send(Progress(index, v1::SweepProgress::QUEUED, position));
    };
    callbacks.on_start = [this](int index) {
      Send(Progress(index, v1::SweepProgress::RUNNING, 0));
    };
    callbacks.on_item = [this](int index, absl::StatusOr<RunResult> result) {
      Send(ItemMessage(index, result));
    };
    callbacks.has_room = [this] { return buffered_.load() < kMaxBuffered; };
    callbacks.on_finished = [this](absl::Status status) {
      std::unique_lock<std::mutex> lock(mu_);
      slot_.Release();
      final_status_ = ToGrpcStatus(status);
      all_submitted_ = true;
      MaybeWriteOrFinishLocked(lock);
    };
    std::shared_ptr<SweepRun> run =
        SweepRun::Start(engine, std::move(items), DeadlineOf(context), std::move(callbacks));
    {
      std::lock_guard<std::mutex> lock(mu_);
      run_ = run;
    }
    // Writes that completed during Start could not resume a chain parked then.
    run->Resume();
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    --buffered_;
    if (!ok) {
      StopLocked(lock);  // the client is gone
      lock.lock();
    }
    std::shared_ptr<SweepRun> run = run_;
    const bool resume = !cancelled_ && !finished_ && run != nullptr;
    MaybeWriteOrFinishLocked(lock);  // may Finish: `this` is not touched after it
    if (lock.owns_lock()) lock.unlock();
    // Outside the lock: resuming queues items, whose progress comes back through Send.
    if (resume) run->Resume();
  }

  void OnCancel() override {
    std::unique_lock<std::mutex> lock(mu_);
    StopLocked(lock);
  }

  void OnDone() override { delete this; }

 private:
  // Drops what is not yet written and cancels the sweep; returns with the lock released.
  void StopLocked(std::unique_lock<std::mutex>& lock) {
    cancelled_ = true;
    buffered_ -= static_cast<int>(pending_.size());
    pending_.clear();
    std::shared_ptr<SweepRun> run = run_;
    lock.unlock();
    if (run) run->Cancel();
  }

  v1::RunSweepResponse ItemMessage(int index, const absl::StatusOr<RunResult>& result) const {
    v1::RunSweepResponse message;
    if (result.ok()) {
      ToProto(*result, message.mutable_result());
      return message;
    }
    const RunSpec& spec = items_[index];
    v1::SweepItemError* e = message.mutable_error();
    e->set_index(index + 1);
    e->set_kernel(std::string(spec.kernel->name));
    e->set_elements(spec.elements);
    e->set_block_size(spec.geometry.block_size);
    e->set_items_per_thread(spec.geometry.items_per_thread);
    e->set_device_index(spec.device_index);
    e->set_code(static_cast<int>(result.status().code()));
    e->set_message(std::string(result.status().message()));
    return message;
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
    ++buffered_;
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

  const std::vector<RunSpec> items_;
  ClientSlot slot_;  // under mu_

  std::mutex mu_;
  std::shared_ptr<SweepRun> run_;
  std::deque<v1::RunSweepResponse> pending_;
  v1::RunSweepResponse current_;
  std::atomic<int> buffered_{0};  // pending_ and the write in flight; read without mu_ by has_room
  bool writing_ = false;
  bool all_submitted_ = false;  // the sweep has finished: write what is left, then Finish
  bool finished_ = false;
  bool cancelled_ = false;
  grpc::Status final_status_ = grpc::Status::OK;
};

// Autotune: the Autotune operation, answering with its report; forwards cancellation.
class AutotuneReactor final : public grpc::ServerUnaryReactor {
 public:
  AutotuneReactor(Engine* engine, grpc::CallbackServerContext* context,
                  const v1::AutotuneRequest* request, v1::AutotuneResponse* response,
                  int max_items)
      : response_(response) {
    absl::StatusOr<AutotunePlan> plan = PlanAutotune(FromProto(*request), *engine, max_items);
    if (!plan.ok()) {
      Finish(ToGrpcStatus(plan.status()));
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    run_ = AutotuneRun::Start(engine, *std::move(plan), DeadlineOf(context),
                              [this](absl::StatusOr<AutotuneReport> report) {
                                Done(std::move(report));
                              });
  }

  void OnCancel() override {
    std::shared_ptr<AutotuneRun> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      run = run_;
    }
    if (run) run->Cancel();
  }

  void OnDone() override { delete this; }

 private:
  void Done(absl::StatusOr<AutotuneReport> report) {
    if (!report.ok()) {
      Finish(ToGrpcStatus(report.status()));
      return;
    }
    ToProto(*report, response_);
    Finish(grpc::Status::OK);
  }

  v1::AutotuneResponse* response_;
  std::mutex mu_;
  std::shared_ptr<AutotuneRun> run_;
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

// INVALID_ARGUMENT as a finished unary reactor when an enum field holds an undeclared value
// (proto3 keeps it; the engine would read 99 as its default), else null.
static grpc::ServerUnaryReactor* RefuseBadEnums(const google::protobuf::Message& request,
                                                grpc::CallbackServerContext* context) {
  const absl::Status s = ValidateEnums(request);
  if (s.ok()) return nullptr;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

grpc::ServerUnaryReactor* BenchmarkService::ListKernels(grpc::CallbackServerContext* context,
                                                        const v1::ListKernelsRequest*,
                                                        v1::ListKernelsResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  const BackendKind kind = engine_->backend().kind();
  for (const KernelVariant& k : AllKernels()) {
    ToProto(k, HasBinding(k, kind), response->add_kernels());
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
  if (auto* refused = RefuseBadEnums(*request, context)) return refused;
  ClientSlot slot;
  if (request->has_user_kernel()) {
    absl::StatusOr<ClientSlot> admitted =
        user_kernel_clients_.Admit(ClientIdentity(*context, options_.auth));
    if (!admitted.ok()) {
      grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
      reactor->Finish(ToGrpcStatus(admitted.status()));
      return reactor;
    }
    slot = *std::move(admitted);
  }
  return new RunReactor(engine_, context, request, response, std::move(slot));
}

grpc::ServerWriteReactor<v1::RunSweepResponse>* BenchmarkService::RunSweep(
    grpc::CallbackServerContext* context, const v1::RunSweepRequest* request) {
  // Authenticate, then validate every item before streaming anything: a bad sweep fails as a
  // whole, at once.
  absl::Status status = options_.auth ? options_.auth->Check(*context) : absl::OkStatus();
  absl::StatusOr<std::vector<RunSpec>> items = std::vector<RunSpec>();
  if (status.ok()) status = ValidateEnums(*request);
  ClientSlot slot;
  if (status.ok() && request->has_user_kernel()) {
    // Admitted before it is expanded: each item's resolve checks the code again, work a client
    // over its rate would otherwise still cause.
    absl::StatusOr<ClientSlot> admitted =
        user_kernel_clients_.Admit(ClientIdentity(*context, options_.auth));
    status = admitted.status();
    if (admitted.ok()) slot = *std::move(admitted);
  }
  if (status.ok()) {
    items = ExpandSweep(FromProto(*request), *engine_, options_.max_sweep_items);
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
  return new SweepReactor(engine_, context, *std::move(items), std::move(slot));
}

}  // namespace gpubench

namespace gpubench {

grpc::ServerUnaryReactor* BenchmarkService::Autotune(grpc::CallbackServerContext* context,
                                                     const v1::AutotuneRequest* request,
                                                     v1::AutotuneResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  if (auto* refused = RefuseBadEnums(*request, context)) return refused;
  return new AutotuneReactor(engine_, context, request, response, options_.max_sweep_items);
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
  l->set_allow_user_kernels(limits.user_kernels.allowed);
  l->set_max_user_kernel_bytes(limits.user_kernels.max_code_bytes);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* BenchmarkService::GetKernelContract(
    grpc::CallbackServerContext* context, const v1::GetKernelContractRequest* request,
    v1::GetKernelContractResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const std::string entry = request->entry().empty() ? "my_kernel" : request->entry();
  absl::Status valid = ValidateEntryName(entry, /*cxx=*/true);
  absl::StatusOr<UserKernelContract> contract =
      valid.ok() ? ContractFor(request->family(), request->dtype())
                 : absl::StatusOr<UserKernelContract>(valid);
  if (!contract.ok()) {
    reactor->Finish(ToGrpcStatus(contract.status()));
    return reactor;
  }
  ToProto(*contract, entry, response);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* BenchmarkService::GetHealth(grpc::CallbackServerContext* context,
                                                      const v1::GetHealthRequest* request,
                                                      v1::GetHealthResponse* response) {
  if (auto* rejected = RejectUnauthenticated(options_, context)) return rejected;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const Backend& backend = engine_->backend();
  std::vector<health::GpuHealth> gpus;
  if (options_.health != nullptr) {
    gpus = options_.health->Health();
  } else {
    for (int d = 0; d < backend.device_count(); ++d) {
      health::GpuHealth g;
      g.device_index = d;
      if (absl::StatusOr<DeviceInfo> info = backend.Describe(d); info.ok()) {
        g.gpu_uuid = info->uuid;
        g.gpu_model = info->name;
        if (response->node_name().empty()) response->set_node_name(info->node_name);
      }
      g.summary = "UNKNOWN: this server runs no health plan (--schedule_plan)";
      gpus.push_back(std::move(g));
    }
  }
  if (absl::StatusOr<DeviceInfo> info = backend.Describe(0); info.ok()) {
    response->set_node_name(info->node_name);
  }
  response->set_scheduled(options_.health != nullptr);
  // The node's verdict: FAIL, DEGRADED, UNKNOWN, PASS, the first any selected GPU has.
  auto rank = [](health::Verdict v) {
    return v == health::Verdict::kFail       ? 3
           : v == health::Verdict::kDegraded ? 2
           : v == health::Verdict::kUnknown  ? 1
                                             : 0;
  };
  health::Verdict node = health::Verdict::kPass;
  bool any = false;
  for (const health::GpuHealth& g : gpus) {
    const bool selected = !request->device_uuid().empty() ? g.gpu_uuid == request->device_uuid()
                          : request->has_device_index() ? g.device_index == request->device_index()
                                                        : true;
    if (!selected) continue;
    any = true;
    if (rank(g.verdict) > rank(node)) node = g.verdict;
    ToProto(g, response->add_gpus());
  }
  if (!any) {
    reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such device on this server"));
    return reactor;
  }
  response->set_verdict(ToProto(node));
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace gpubench
