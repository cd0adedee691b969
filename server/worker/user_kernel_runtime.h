// The CUDA side of a user kernel in the worker (docs/user-kernels.md): the compiled image loaded
// as a context-independent library (cudaLibraryLoadData) and a KernelVariant whose launcher
// calls it with the family's buffers in contract order. CudaSession needs no change: its
// Resources() and occupancy queries take the cudaKernel_t as the kernel's symbol, which the CUDA
// runtime accepts in place of a __global__ function's address.
#ifndef GPUBENCH_SERVER_WORKER_USER_KERNEL_RUNTIME_H_
#define GPUBENCH_SERVER_WORKER_USER_KERNEL_RUNTIME_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kernels/catalog.h"
#include "server/worker/user_compiler.h"

namespace gpubench {

class LoadedUserKernel;

// The loaded image of one run. While it lives (one run at a time per worker: the Runner), the
// variant made by BindUserKernel launches it; destroying it unloads the library.
class UserKernelBinding {
 public:
  ~UserKernelBinding();
  UserKernelBinding(const UserKernelBinding&) = delete;
  UserKernelBinding& operator=(const UserKernelBinding&) = delete;
  const KernelVariant& variant() const { return variant_; }

 private:
  friend absl::StatusOr<std::unique_ptr<UserKernelBinding>> BindUserKernel(
      const CompiledUserKernel&, const KernelVariant&, int);
  UserKernelBinding() = default;
  KernelVariant variant_;
  std::unique_ptr<LoadedUserKernel> loaded_;
};

// Whether this build can launch user kernels (a CUDA build).
bool CanLaunchUserKernels();

// Loads `compiled` for `device` and returns `variant` with its CUDA setup and launcher bound.
// INVALID_ARGUMENT when the image does not load (not for this device's architecture, no such
// entry), FAILED_PRECONDITION in a build without CUDA.
absl::StatusOr<std::unique_ptr<UserKernelBinding>> BindUserKernel(
    const CompiledUserKernel& compiled, const KernelVariant& variant, int device);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_WORKER_USER_KERNEL_RUNTIME_H_
