#include "server/engine/user_kernel_spec.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpubench {

namespace {

// A user kernel has no host emulation: the CPU backend refuses user runs in the worker before a
// session opens (FAILED_PRECONDITION with the reason). Were it ever reached, it writes nothing,
// and the poisoned outputs fail verification.
GPUBENCH_CPU_KERNEL(UserKernelNoEmulation) {
  (void)buffers;
  (void)geometry;
  (void)thread_begin;
  (void)thread_end;
}

std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

constexpr int kMaxBlockSize = 1024;
constexpr int kMaxItemsPerThread = 1 << 16;
constexpr int kMaxDynamicSharedBytes = 1 << 20;

}  // namespace

const char* UserCodeKindName(UserCodeKind kind) {
  switch (kind) {
    case UserCodeKind::kSource:
      return "source";
    case UserCodeKind::kPtx:
      return "ptx";
    case UserCodeKind::kCubin:
      return "cubin";
  }
  return "source";
}

absl::StatusOr<std::shared_ptr<const UserKernelSpec>> MakeUserKernelSpec(UserKernelRequest request,
                                                                         int64_t max_code_bytes) {
  auto spec = std::make_shared<UserKernelSpec>();
  if (request.family.empty()) return absl::InvalidArgumentError("user_kernel.family is required");
  if (request.dtype.empty()) return absl::InvalidArgumentError("user_kernel.dtype is required");
  ASSIGN_OR_RETURN(spec->contract, ContractFor(request.family, request.dtype));
  const bool source = request.kind == UserCodeKind::kSource;
  RETURN_IF_ERROR(ValidateEntryName(request.entry, source));
  if (request.code.empty()) {
    return absl::InvalidArgumentError(
        "user_kernel needs one of source, ptx or cubin (the code is empty)");
  }
  if (static_cast<int64_t>(request.code.size()) > max_code_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "user_kernel: the ", UserCodeKindName(request.kind), " is ", request.code.size(),
        " bytes, over this server's limit of ", max_code_bytes, " (--max_user_kernel_bytes)"));
  }
  if (source) {
    RETURN_IF_ERROR(CheckUserSource(request.code, max_code_bytes));
    RETURN_IF_ERROR(ValidateCompileOptions(request.compile));
  } else {
    if (!request.compile.defines.empty() || request.compile.maxrregcount != 0 ||
        request.compile.fast_math || request.compile.line_info) {
      return absl::InvalidArgumentError(absl::StrCat(
          "user_kernel.compile applies to source only; this is ", UserCodeKindName(request.kind)));
    }
    if (std::optional<std::string> dr = DeviceRuntimeReference(request.code)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "user_kernel: the ", UserCodeKindName(request.kind), " refers to the device runtime (",
          *dr, "): launches from the device are not allowed"));
    }
  }
  UserLaunchRequest& l = request.launch;
  if (l.block_size < 1 || l.block_size > kMaxBlockSize) {
    return absl::InvalidArgumentError(absl::StrCat("user_kernel.launch.block_size = ", l.block_size,
                                                   " is outside 1..", kMaxBlockSize,
                                                   " (required)"));
  }
  if (l.items_per_thread == 0) l.items_per_thread = 1;
  if (l.items_per_thread < 1 || l.items_per_thread > kMaxItemsPerThread) {
    return absl::InvalidArgumentError(
        absl::StrCat("user_kernel.launch.items_per_thread = ", l.items_per_thread,
                     " is outside 1..", kMaxItemsPerThread));
  }
  if (l.dynamic_shared_bytes < 0 || l.dynamic_shared_bytes > kMaxDynamicSharedBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("user_kernel.launch.dynamic_shared_bytes = ", l.dynamic_shared_bytes,
                     " is outside 0..", kMaxDynamicSharedBytes));
  }
  constexpr int64_t kMaxGrid = (int64_t{1} << 31) - 1;
  if (l.grid_size < 0 || l.grid_size > kMaxGrid) {
    return absl::InvalidArgumentError(
        absl::StrCat("user_kernel.launch.grid_size = ", l.grid_size, " is outside 0..", kMaxGrid));
  }
  spec->code_sha256 = Sha256Hex(request.code);
  const KernelVariant& from = *spec->contract.tolerance_from;
  spec->variant = KernelVariant{
      .name = kUserKernelName,
      .family = spec->contract.family,
      .dtype = spec->contract.dtype,
      // The request's launch as the policy (resolve takes it as the default; a user kernel has no
      // tuned default: Autotune knows only the catalog).
      .default_policy = {.block_size = l.block_size, .items_per_thread = l.items_per_thread},
      .description = "a user's kernel (docs/user-kernels.md)",
      .provenance = "user",
      .rtol = from.rtol,
      .atol = from.atol,
      .cpu = &UserKernelNoEmulation,
  };
  spec->request = std::move(request);
  return std::shared_ptr<const UserKernelSpec>(std::move(spec));
}

}  // namespace gpubench
