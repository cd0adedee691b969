// Validation of a run of a user kernel (docs/user-kernels.md), the two steps ResolveRunRequest
// (resolve.cc) takes for it around the common resolution of size, device and measurement.
#ifndef GPUBENCH_SERVER_ENGINE_RESOLVE_USER_KERNEL_H_
#define GPUBENCH_SERVER_ENGINE_RESOLVE_USER_KERNEL_H_

#include "absl/status/status.h"
#include "kernels/backend.h"
#include "server/engine/run_spec.h"

namespace gpubench {

// First: the server allows user kernels (FAILED_PRECONDITION otherwise), the request sets no
// catalog kernel, no top-level block_size or items_per_thread (the launch is the user kernel's),
// no fixed seed (refused: a known seed lets a kernel return outputs computed in advance) and does
// not turn verification off; then the user kernel itself (MakeUserKernelSpec). Sets spec->kernel
// and spec->user_kernel.
absl::Status ResolveUserKernel(const RunRequest& request, const ServerLimits& limits,
                               RunSpec* spec);

// After the grid is chosen: the user's launch replaces it where it names one, and its dynamic
// shared memory must fit the device's per-block limit.
absl::Status FinishUserKernelRun(const DeviceInfo& device, RunSpec* spec);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RESOLVE_USER_KERNEL_H_
