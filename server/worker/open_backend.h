// Opening the backend a worker (or an in-process server) measures with, by its name.
#ifndef GPUBENCH_SERVER_WORKER_OPEN_BACKEND_H_
#define GPUBENCH_SERVER_WORKER_OPEN_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/cpu_backend.h"

namespace gpubench {

// `which`: "cuda" (FAILED_PRECONDITION where no CUDA device can be used), "cpu", or "auto" (CUDA
// where a device is visible, else the CPU backend with `cpu`'s options); INVALID_ARGUMENT for
// another name or out-of-range CPU options. Logs the choice.
absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& which,
                                                     const CpuBackendOptions& cpu);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_WORKER_OPEN_BACKEND_H_
