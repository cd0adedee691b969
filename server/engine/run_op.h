// Run: one request resolved and queued on its device. The RunBenchmark RPC, scheduled plans and
// tests use it; a run whose verification failed reaches callers as an error (RunStatus).
#ifndef GPUBENCH_SERVER_ENGINE_RUN_OP_H_
#define GPUBENCH_SERVER_ENGINE_RUN_OP_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/engine/engine.h"
#include "server/engine/run_result.h"
#include "server/engine/run_spec.h"

namespace gpubench {

using RunDoneFn = std::function<void(absl::StatusOr<RunResult>)>;

// Resolves `request` and queues it; `done` (exactly once, on any thread) gets the result, or the
// run's error, or INTERNAL when its verification failed. The resolve or queue error otherwise
// (then `done` is never called).
absl::StatusOr<std::shared_ptr<Job>> SubmitRun(Engine& engine, const RunRequest& request,
                                               absl::Time deadline, RunDoneFn done);

// Queues `spec` and waits for it: the result, or the error as SubmitRun's `done` gets it.
// `on_queued` (optional) receives the job once it is queued, so that another thread may cancel
// it. Do not call on a device worker's thread.
absl::StatusOr<RunResult> RunAndWait(
    Engine& engine, RunSpec spec, absl::Time deadline,
    const std::function<void(std::shared_ptr<Job>)>& on_queued = nullptr);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RUN_OP_H_
