#include "server/worker/open_backend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#if GPUBENCH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace gpubench {

absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& which,
                                                     const CpuBackendOptions& cpu) {
  if (which == "cuda" || which == "auto") {
#if GPUBENCH_HAVE_CUDA
    absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeCudaBackend();
    if (cuda.ok()) {
      spdlog::info("backend=cuda devices={}", (*cuda)->device_count());
      return *std::move(cuda);
    }
    if (which == "cuda") {
      return absl::FailedPreconditionError(fmt::format(
          "backend=cuda requested but unavailable: {}", cuda.status().ToString()));
    }
    spdlog::info("backend=auto: no usable CUDA device ({}); using cpu",
                 std::string(cuda.status().message()));
#else
    if (which == "cuda") {
      return absl::FailedPreconditionError(
          "backend=cuda requested but this build has no CUDA backend");
    }
    spdlog::info("backend=auto: built without CUDA; using cpu");
#endif
  } else if (which != "cpu") {
    return absl::InvalidArgumentError(
        fmt::format("--backend must be auto, cpu or cuda (got '{}')", which));
  }
  if (!(cpu.min_launch_seconds >= 0 && cpu.min_launch_seconds <= 10)) {
    return absl::InvalidArgumentError(
        fmt::format("--cpu_min_launch_seconds must be between 0 and 10 (got {})",
                    cpu.min_launch_seconds));
  }
  auto backend = MakeCpuBackend(cpu);
  spdlog::info("backend=cpu devices={}", backend->device_count());
  return backend;
}

}  // namespace gpubench
