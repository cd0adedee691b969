#include "server/engine/run_op.h"

#include <future>
#include <utility>

#include "common/status_macros.h"
#include "server/engine/compare_user_kernel.h"

namespace gpubench {
namespace {

// `done` with a failed verification turned into its error.
std::function<void(absl::StatusOr<RunResult>)> ReportingFailedVerification(RunDoneFn done) {
  return [done = std::move(done)](absl::StatusOr<RunResult> result) {
    if (absl::Status status = RunStatus(result); !status.ok()) {
      done(status);
      return;
    }
    done(std::move(result));
  };
}

}  // namespace

absl::StatusOr<std::shared_ptr<Job>> SubmitRun(Engine& engine, const RunRequest& request,
                                               absl::Time deadline, RunDoneFn done) {
  ASSIGN_OR_RETURN(RunSpec spec, engine.Resolve(request));
  if (request.user_kernel.has_value() && request.user_kernel->compare) {
    done = ComparingUserKernel(engine, spec, deadline, std::move(done));
  }
  JobCallbacks callbacks;
  callbacks.on_done = ReportingFailedVerification(std::move(done));
  return engine.Submit(std::move(spec), deadline, std::move(callbacks), nullptr);
}

absl::StatusOr<RunResult> RunAndWait(
    Engine& engine, RunSpec spec, absl::Time deadline,
    const std::function<void(std::shared_ptr<Job>)>& on_queued) {
  std::promise<absl::StatusOr<RunResult>> promise;
  std::future<absl::StatusOr<RunResult>> future = promise.get_future();
  JobCallbacks callbacks;
  callbacks.on_done = ReportingFailedVerification(
      [&promise](absl::StatusOr<RunResult> result) { promise.set_value(std::move(result)); });
  ASSIGN_OR_RETURN(std::shared_ptr<Job> job,
                   engine.Submit(std::move(spec), deadline, std::move(callbacks), nullptr));
  if (on_queued) on_queued(std::move(job));
  return future.get();
}

}  // namespace gpubench
