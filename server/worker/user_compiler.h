// The worker's compiler of user kernels (docs/user-kernels.md): NVRTC for CUDA C++, with the
// contract's static check appended; PTX and cubin pass through with the device-runtime check.
// A compile cache keyed by SHA-256 of (kind, code, entry, options, architecture, contract),
// bounded in entries and bytes, least recently used out first. Runs in the worker only: a
// compiler crash or a hang on hostile source ends the worker, never the server (the server's
// watchdog ends a compile that outlives --user_kernel_compile_seconds).
#ifndef GPUBENCH_SERVER_WORKER_USER_COMPILER_H_
#define GPUBENCH_SERVER_WORKER_USER_COMPILER_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "server/engine/user_kernel_spec.h"

namespace gpubench {

// Whether this build has NVRTC (CUDA toolkit found at configure time).
bool HaveNvrtc();

struct CompiledUserKernel {
  std::string image = {};  // what the driver loads: a cubin (sm_XY) or PTX (compute_XY, PTX input)
  bool image_is_ptx = false;
  std::string lowered_name = {};  // the symbol to launch
  std::string architecture = {};  // "sm_90", "compute_90"; for PTX / cubin input: as given
  bool signature_checked = false;
  std::string signature_note = {};
  std::string log = {};  // NVRTC's warnings, bounded
  double compile_seconds = 0;
  bool cache_hit = false;
};

struct UserCompilerOptions {
  int64_t max_code_bytes = int64_t{1} << 20;
  int max_log_bytes = 16 << 10;
  int cache_entries = 64;
  int64_t cache_bytes = int64_t{64} << 20;
  std::string include_dir = {};  // cuda_fp16.h and cuda_bf16.h's directory (the toolkit's include/)
};

class UserCompiler {
 public:
  explicit UserCompiler(UserCompilerOptions options) : options_(std::move(options)) {}

  // Compiles (or fetches from the cache) `spec` for `architecture`: "sm_90" for a CUDA device
  // (a cubin), "compute_90" where no device runs it (PTX; the CPU backend's worker, so that CI
  // compiles for real). INVALID_ARGUMENT with NVRTC's log (file:line) for a source that does not
  // compile or whose entry does not match the contract; FAILED_PRECONDITION without NVRTC.
  absl::StatusOr<CompiledUserKernel> Compile(const UserKernelSpec& spec,
                                             const std::string& architecture);

  int cached_entries() const;

 private:
  absl::StatusOr<CompiledUserKernel> CompileSource(const UserKernelSpec& spec,
                                                   const std::string& architecture);
  void Insert(const std::string& key, const CompiledUserKernel& compiled);  // mu_ held

  const UserCompilerOptions options_;
  mutable std::mutex mu_;
  std::list<std::pair<std::string, CompiledUserKernel>> lru_;  // most recent first
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
  int64_t cached_bytes_ = 0;
};

// Where NVRTC finds cuda_fp16.h in this build (the toolkit's include directory), or "".
std::string DefaultUserKernelIncludeDir();

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_WORKER_USER_COMPILER_H_
