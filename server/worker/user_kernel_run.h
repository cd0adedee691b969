// One run of a user kernel in its device's worker (docs/user-kernels.md): compiled (or taken from
// the compile cache), refused after the compile checks where no CUDA device can run it, else
// loaded, measured and verified exactly as a catalog variant (MeasureRun), then held to the
// physical floor; the result carries the user_kernel report. The worker calls it; tests call it
// directly with a backend of their own.
#ifndef GPUBENCH_SERVER_WORKER_USER_KERNEL_RUN_H_
#define GPUBENCH_SERVER_WORKER_USER_KERNEL_RUN_H_

#include <functional>

#include "absl/status/statusor.h"
#include "common/parallel.h"
#include "kernels/backend.h"
#include "server/engine/measurement.h"
#include "server/engine/run_result.h"
#include "server/worker/user_compiler.h"

namespace gpubench {

// `spec.user_kernel` must be set. `compiled` is called once the compile is over (the worker's
// progress tick, which stands the server's compile limit down).
absl::StatusOr<RunResult> MeasureUserKernelRun(Backend& backend, UserCompiler* compiler,
                                               const RunSpec& spec, const DeviceInfo& device,
                                               const CancelledFn& cancelled, ParallelPool* pool,
                                               const std::function<void()>& compiled);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_WORKER_USER_KERNEL_RUN_H_
