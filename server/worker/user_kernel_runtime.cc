#include "server/worker/user_kernel_runtime.h"

#include <atomic>

#include "absl/strings/str_cat.h"

#if GPUBENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace gpubench {

#if GPUBENCH_HAVE_CUDA

class LoadedUserKernel {
 public:
  ~LoadedUserKernel() {
    if (library != nullptr) cudaLibraryUnload(library);
  }
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  bool alpha_argument = false;
  std::string what;  // for the launch report
};

namespace {

// The run's loaded kernel. The launcher is a plain function pointer (kernels/launch.h), so the
// binding of the one run a worker measures at a time reaches it here; the session's LaunchState
// holds it from setup on.
std::atomic<LoadedUserKernel*> current{nullptr};

class UserKernelState final : public LaunchState {
 public:
  explicit UserKernelState(LoadedUserKernel* k) : loaded(k) {}
  LoadedUserKernel* const loaded;
};

int SetupUserKernel(const KernelBuffers&, const LaunchGeometry& geometry, void*,
                    std::unique_ptr<LaunchState>* state, std::string* report) {
  LoadedUserKernel* loaded = current.load();
  if (loaded == nullptr) {
    *report = "no user kernel is loaded in this worker";
    return cudaErrorNotSupported;
  }
  // Over 48 KiB of dynamic shared memory is an opt-in per kernel.
  if (geometry.dynamic_shared_bytes > 48 * 1024) {
    if (cudaError_t e = cudaFuncSetAttribute(reinterpret_cast<const void*>(loaded->kernel),
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             geometry.dynamic_shared_bytes);
        e != cudaSuccess) {
      *report = absl::StrCat("cudaFuncSetAttribute(MaxDynamicSharedMemorySize, ",
                             geometry.dynamic_shared_bytes, "): ", cudaGetErrorString(e));
      return e;
    }
  }
  *state = std::make_unique<UserKernelState>(loaded);
  *report = loaded->what;
  return cudaSuccess;
}

int LaunchUserKernel(const KernelBuffers& buffers, const LaunchGeometry& geometry, void* stream,
                     const void** symbol) {
  LoadedUserKernel* loaded = buffers.state != nullptr
                                 ? static_cast<UserKernelState*>(buffers.state)->loaded
                                 : current.load();
  if (symbol != nullptr) {
    *symbol = loaded == nullptr ? nullptr : reinterpret_cast<const void*>(loaded->kernel);
    return cudaSuccess;
  }
  if (loaded == nullptr) return cudaErrorInvalidResourceHandle;
  // The contract: the buffers in the family's order, alpha where the family takes it, then n.
  void* pointers[kMaxBuffers];
  void* args[kMaxBuffers + 2];
  int count = 0;
  for (int i = 0; i < buffers.count && i < kMaxBuffers; ++i) {
    pointers[i] = buffers.data[i];
    args[count++] = &pointers[i];
  }
  float alpha = buffers.alpha;
  long long n = buffers.n;
  if (loaded->alpha_argument) args[count++] = &alpha;
  args[count++] = &n;
  return cudaLaunchKernel(reinterpret_cast<const void*>(loaded->kernel),
                          dim3(static_cast<unsigned>(geometry.grid_size)),
                          dim3(static_cast<unsigned>(geometry.block_size)), args,
                          static_cast<size_t>(geometry.dynamic_shared_bytes),
                          static_cast<cudaStream_t>(stream));
}

}  // namespace

bool CanLaunchUserKernels() { return true; }

UserKernelBinding::~UserKernelBinding() {
  LoadedUserKernel* mine = loaded_.get();
  current.compare_exchange_strong(mine, nullptr);
}

absl::StatusOr<std::unique_ptr<UserKernelBinding>> BindUserKernel(
    const CompiledUserKernel& compiled, const KernelVariant& variant, int device) {
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("cudaSetDevice(", device, "): ", cudaGetErrorString(e)));
  }
  auto loaded = std::make_unique<LoadedUserKernel>();
  loaded->alpha_argument = variant.family->alpha_argument;
  if (cudaError_t e = cudaLibraryLoadData(&loaded->library, compiled.image.data(), nullptr, nullptr,
                                          0, nullptr, nullptr, 0);
      e != cudaSuccess) {
    cudaGetLastError();
    return absl::InvalidArgumentError(
        absl::StrCat("user kernel: the ", compiled.image_is_ptx ? "PTX" : "cubin", " (",
                     compiled.architecture, ") does not load on device ", device, ": ",
                     cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
  }
  if (cudaError_t e =
          cudaLibraryGetKernel(&loaded->kernel, loaded->library, compiled.lowered_name.c_str());
      e != cudaSuccess) {
    cudaGetLastError();
    return absl::InvalidArgumentError(absl::StrCat("user kernel: no kernel named '",
                                                   compiled.lowered_name,
                                                   "' in the image: ", cudaGetErrorString(e)));
  }
  loaded->what =
      absl::StrCat("user kernel ", compiled.lowered_name, " (",
                   compiled.image_is_ptx ? "PTX" : "cubin", ", ", compiled.architecture, ")");
  auto binding = std::unique_ptr<UserKernelBinding>(new UserKernelBinding());
  binding->variant_ = variant;
  binding->variant_.cuda = &LaunchUserKernel;
  binding->variant_.cuda_setup = &SetupUserKernel;
  // Any user kernel may mark lines persisting (evict_last loads, createpolicy): every cold
  // sample's flush first resets them, as for the catalog's l2_evict_last variants.
  binding->variant_.l2_evict_last = true;
  binding->loaded_ = std::move(loaded);
  current.store(binding->loaded_.get());
  return binding;
}

#else  // !GPUBENCH_HAVE_CUDA

class LoadedUserKernel {};

bool CanLaunchUserKernels() { return false; }

UserKernelBinding::~UserKernelBinding() = default;

absl::StatusOr<std::unique_ptr<UserKernelBinding>> BindUserKernel(const CompiledUserKernel&,
                                                                  const KernelVariant&, int) {
  return absl::FailedPreconditionError("this build has no CUDA backend to launch user kernels");
}

#endif

}  // namespace gpubench
