// User kernels ("bring your own kernel", docs/user-kernels.md): the contract a user's CUDA C++,
// PTX or cubin must have to stand in for a family's variants, derived from the family's
// declaration alone (kernels/family.h), and the rules a submission must follow before it reaches
// a compiler: the whitelisted compile options and the source checks. Host-only and NVRTC-free:
// the server validates with it, the worker validates again and compiles.
#ifndef GPUBENCH_KERNELS_USER_KERNEL_H_
#define GPUBENCH_KERNELS_USER_KERNEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/catalog.h"
#include "kernels/family.h"
#include "kernels/numeric.h"

namespace gpubench {

// The name every user kernel's variant carries (results, logs, metrics labels): one bounded
// label value, whatever the entry is called. The entry is in the result's user_kernel section.
inline constexpr absl::string_view kUserKernelName = "user_kernel";
inline bool IsUserKernel(const KernelVariant& variant) { return variant.name == kUserKernelName; }

// "f32" -> kF32 ... (DTypeName's inverse); INVALID_ARGUMENT naming the valid names.
absl::StatusOr<DType> ParseDType(absl::string_view name);

// The family called `name` among the registered variants' families; NOT_FOUND listing them.
absl::StatusOr<const KernelFamily*> FindFamily(absl::string_view name);

struct ContractParameter {
  std::string name = {};  // the buffer's name, "alpha" or "n"
  std::string type = {};  // the C++ type: "const __half*", "float", "long long"
  std::string role = {};  // "input", "output", "in_out", "scalar", "shape"
};

struct UserKernelContract {
  const KernelFamily* family = nullptr;
  DType dtype = DType::kF32;
  // The built-in variant of the family at this dtype whose tolerance a user kernel is verified
  // with (the first that uses the family's own reference).
  const KernelVariant* tolerance_from = nullptr;
  std::vector<ContractParameter> parameters = {};
  std::string prelude = {};       // the #include lines the worker puts before the source
  std::string pointer_type = {};  // "void (*)(const float*, const float*, float*, long long)"
  std::string example = {};       // a complete source for `entry`
  std::string notes = {};         // the shape parameter and the launch, in words

  // extern "C" __global__ void ENTRY(const float* a, ..., long long n)
  std::string Signature(absl::string_view entry) const;
  std::string Example(absl::string_view entry) const;
};

// The contract of `family` at `dtype`: the family's buffers in declared order, typed by the
// dtype (inputs as const pointers), then `float alpha` where the family takes it, then the shape
// `long long n` (the run's element count). Families where a contract makes no sense are refused
// with FAILED_PRECONDITION saying why (host or peer buffers: a copy-engine transfer, not a kernel;
// a footprint shape: the work is the built-in chase's; sampled verification: a user kernel's
// outputs must be verified whole); a dtype without a built-in variant is INVALID_ARGUMENT.
absl::StatusOr<UserKernelContract> ContractFor(const KernelFamily& family, DType dtype);
absl::StatusOr<UserKernelContract> ContractFor(absl::string_view family, absl::string_view dtype);

// ---- what a submission may ask of the compiler ----------------------------------------------

struct UserCompileOptions {
  std::vector<std::string> defines = {};  // "NAME" or "NAME=VALUE"
  int maxrregcount = 0;                   // 0: none
  bool fast_math = false;
  bool line_info = false;
};
inline constexpr int kMaxUserDefines = 32;
inline constexpr int kMaxDefineBytes = 128;

// INVALID_ARGUMENT naming the first option outside the whitelist: a macro whose name is not
// [A-Za-z_][A-Za-z0-9_]* or whose value is not [A-Za-z0-9_.+-]*, more than kMaxUserDefines,
// maxrregcount outside 16..255.
absl::Status ValidateCompileOptions(const UserCompileOptions& options);

// NVRTC's argument list for `options` on `architecture` ("sm_90", "compute_90"), nothing else:
// -arch, -default-device, the macros, -maxrregcount, --use_fast_math, -lineinfo, and the include
// directory of the headers the prelude names (the worker's, never the user's).
std::vector<std::string> NvrtcArguments(const UserCompileOptions& options,
                                        absl::string_view architecture,
                                        absl::string_view include_dir);

// A C++ entry name: identifiers joined by "::" (my_add, ns::my_add), at most 256 bytes. PTX and
// cubin entries are symbols: [A-Za-z_$][A-Za-z0-9_$]*.
absl::Status ValidateEntryName(absl::string_view entry, bool cxx);

// The source checks before NVRTC: at most `max_bytes`, and no way to reach the file system
// through the preprocessor: after line splices, the words "include", "import" and "embed" may not
// appear at all (a #include, #import, #embed or __has_include; strict, so that no comment or macro
// trick can hide one). INVALID_ARGUMENT with the line.
absl::Status CheckUserSource(absl::string_view source, int64_t max_bytes);

// The static check appended to a C++ source: a home-made is_same (NVRTC has no <type_traits>)
// and a static_assert that `&entry` has the contract's function pointer type, so that a
// mismatching entry fails to compile with a message naming both.
std::string SignatureCheck(const UserKernelContract& contract, absl::string_view entry);

// Whether an image (PTX text or a cubin) refers to the device runtime (a launch from the device:
// cudaLaunchDevice, cudaGetParameterBuffer, cudaCGGetIntrinsicHandle), which user kernels may not
// use. The symbol names appear in a PTX's .extern declarations and a cubin's string table.
std::optional<std::string> DeviceRuntimeReference(absl::string_view image);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_USER_KERNEL_H_
