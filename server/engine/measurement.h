// Runs one RunSpec on a backend the nvbench way: warm-up, cold or hot samples, stopping criteria,
// throttling detection, statistics, verification against the host reference.
#ifndef GPUBENCH_SERVER_ENGINE_MEASUREMENT_H_
#define GPUBENCH_SERVER_ENGINE_MEASUREMENT_H_

#include <functional>

#include "absl/status/statusor.h"
#include "common/parallel.h"
#include "kernels/backend.h"
#include "server/engine/run_spec.h"

namespace gpubench {

// Returns true when the caller no longer wants the result (client gone, deadline passed, server
// shutting down). Polled between samples.
using CancelledFn = std::function<bool()>;

// Target duration of one hot batch: long enough that event resolution and launch gaps vanish,
// short enough to give many samples.
constexpr double kHotBatchTargetSeconds = 2e-3;
// Most launches queued behind one blocking kernel (the device's launch queue holds about 1024).
constexpr int kMaxHotBatch = 256;
// Samples whose SM clock was below this fraction of the default clock are discarded (nvbench).
constexpr double kThrottleThreshold = 0.75;

// Measures `spec` on `backend`. CANCELLED when `cancelled` turns true; the backend's errors
// otherwise. A failed verification is an OK RunResult whose verification says so: the caller
// decides how to report it. Call from the device's worker thread; `pool` is for host-side work.
absl::StatusOr<RunResult> MeasureRun(Backend& backend, const RunSpec& spec,
                                     const CancelledFn& cancelled, ParallelPool* pool);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_MEASUREMENT_H_
