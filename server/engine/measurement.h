// Runs one RunSpec on a backend the nvbench way: warm-up, cold or hot samples fed one at a time to
// a stopping criterion (stopping.h), throttling detection with a recovery delay, statistics once
// at the end, verification against the host reference. Or, in profile mode, a fixed number of
// plain launches for ncu / nsys. Every run sits in a named range (NVTX on CUDA).
#ifndef GPUBENCH_SERVER_ENGINE_MEASUREMENT_H_
#define GPUBENCH_SERVER_ENGINE_MEASUREMENT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/parallel.h"
#include "kernels/backend.h"
#include "server/engine/run_result.h"
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
// Pause after a throttled sample to let the GPU recover (nvbench's default); it grows by up to
// 0.5 s per sample while throttling persists for more than two samples in a row.
constexpr double kThrottleRecoveryDelaySeconds = 0.05;
// Most samples a result returns when asked (keep_samples); sample_count keeps the true count.
constexpr int kMaxReturnedSamples = 10000;

// The name of a run's range in timeline tools: "gpubench <kernel> n=<elements> <cold|hot> run
// <run_id>".
std::string RunRangeName(const RunSpec& spec, const std::string& run_id);

// At most `limit` of `samples`, evenly strided over the whole run (time order kept).
std::vector<double> StrideSamples(const std::vector<double>& samples, int limit);

// Measures `spec` on `backend`. CANCELLED when `cancelled` turns true; the backend's errors
// otherwise. A failed verification is an OK RunResult whose verification says so: the caller
// decides how to report it. Call from the device's worker thread; `pool` is for host-side work.
// `device` is the run's device as described at its start (result.device).
absl::StatusOr<RunResult> MeasureRun(Backend& backend, const RunSpec& spec,
                                     const DeviceInfo& device, const CancelledFn& cancelled,
                                     ParallelPool* pool);
// As above, describing the device first.
absl::StatusOr<RunResult> MeasureRun(Backend& backend, const RunSpec& spec,
                                     const CancelledFn& cancelled, ParallelPool* pool);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_MEASUREMENT_H_
