#include "server/engine/resolve_user_kernel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpubench {

absl::Status ResolveUserKernel(const RunRequest& request, const ServerLimits& limits,
                               RunSpec* spec) {
  if (!limits.user_kernels.allowed) {
    return absl::FailedPreconditionError(
        "user kernels are off on this server: it must be started with --allow_user_kernels "
        "(docs/user-kernels.md)");
  }
  if (!request.kernel.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", request.kernel, "' and user_kernel are exclusive: leave kernel empty"));
  }
  if (request.block_size != 0 || request.items_per_thread != 0) {
    return absl::InvalidArgumentError(
        "block_size and items_per_thread of a user kernel run go in user_kernel.launch");
  }
  if (request.seed.has_value()) {
    return absl::InvalidArgumentError(
        "seed: a user kernel's inputs always come from a fresh random seed (echoed in the "
        "result); a fixed seed would let a kernel return outputs computed in advance");
  }
  if (request.verify.has_value() && !*request.verify) {
    return absl::InvalidArgumentError("verify: user kernels are always verified");
  }
  ASSIGN_OR_RETURN(spec->user_kernel,
                   MakeUserKernelSpec(*request.user_kernel, limits.user_kernels.max_code_bytes));
  spec->kernel = &spec->user_kernel->variant;
  return absl::OkStatus();
}

absl::Status FinishUserKernelRun(const DeviceInfo& device, RunSpec* spec) {
  const UserLaunchRequest& launch = spec->user_kernel->request.launch;
  spec->block_size_source = "request";
  spec->geometry.dynamic_shared_bytes = launch.dynamic_shared_bytes;
  if (launch.grid_size > 0) spec->geometry.grid_size = launch.grid_size;
  const int64_t limit =
      std::max(device.shared_memory_per_block_optin_bytes, device.shared_memory_per_block_bytes);
  if (launch.dynamic_shared_bytes > 0 && limit > 0 && launch.dynamic_shared_bytes > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat("user_kernel.launch.dynamic_shared_bytes = ", launch.dynamic_shared_bytes,
                     "; device ", device.index, " allows at most ", limit, " per block"));
  }
  if (device.max_threads_per_block > 0 && launch.block_size > device.max_threads_per_block) {
    return absl::InvalidArgumentError(
        absl::StrCat("user_kernel.launch.block_size = ", launch.block_size, " exceeds device ",
                     device.index, "'s maximum of ", device.max_threads_per_block));
  }
  return absl::OkStatus();
}

}  // namespace gpubench
