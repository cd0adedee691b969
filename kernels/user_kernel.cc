#include "kernels/user_kernel.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace gpubench {

namespace {

constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,  DType::kF64,
                                DType::kU32, DType::kU64, DType::kF8E4M3};

// The C++ element type NVRTC sees, with the header that declares it ("" where built in).
struct CxxType {
  const char* name = nullptr;
  const char* header = "";
};
std::optional<CxxType> CxxTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return CxxType{"float"};
    case DType::kF64:
      return CxxType{"double"};
    case DType::kF16:
      return CxxType{"__half", "cuda_fp16.h"};
    case DType::kBF16:
      return CxxType{"__nv_bfloat16", "cuda_bf16.h"};
    case DType::kU32:
      return CxxType{"unsigned int"};
    case DType::kU64:
      return CxxType{"unsigned long long"};
    case DType::kF8E4M3:
      return std::nullopt;  // no family takes fp8 buffers outside GEMM, which is refused
  }
  return std::nullopt;
}

const char* RoleName(BufferRole role) {
  switch (role) {
    case BufferRole::kInput:
      return "input";
    case BufferRole::kOutput:
      return "output";
    case BufferRole::kInOut:
      return "in_out";
  }
  return "input";
}

bool IsIdentStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsIdentChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || !IsIdentStart(s[0])) return false;
  for (char c : s) {
    if (!IsIdentChar(c)) return false;
  }
  return true;
}

// Why `family` cannot take a user kernel, or nullopt.
std::optional<std::string> WhyNoContract(const KernelFamily& family) {
  for (const BufferSpec& b : family.buffers) {
    if (b.placement != Placement::kDevice) {
      return absl::StrCat("its buffer '", b.name,
                          "' lives in host or peer memory: the family measures a copy-engine "
                          "transfer (cudaMemcpy), not a kernel");
    }
  }
  if (family.resolve_shape != nullptr || family.launch_items != nullptr) {
    return "its shape is not an element count (a footprint or matrix dimensions) and the work of "
           "one launch is defined by the built-in implementation, not by a kernel signature";
  }
  if (family.verify_samples > 0) {
    return absl::StrCat("its outputs are verified at ", family.verify_samples,
                        " sampled elements, and a user kernel's outputs must be verified whole");
  }
  if (family.bytes_moved == nullptr && family.operations == nullptr && family.buffers.empty()) {
    return "it declares no buffers";
  }
  return std::nullopt;
}

// The first built-in variant of `family` at `dtype` that is verified with the family's own
// reference (its tolerance is the one a user kernel gets).
const KernelVariant* ToleranceVariant(const KernelFamily& family, DType dtype,
                                      std::set<std::string>* dtypes) {
  const KernelVariant* any = nullptr;
  for (const KernelVariant& v : AllKernels()) {
    if (v.family != &family) continue;
    dtypes->insert(DTypeName(v.dtype));
    if (v.dtype != dtype || IsUserKernel(v)) continue;
    if (v.reference == nullptr || v.reference == family.reference) return &v;
    if (any == nullptr) any = &v;
  }
  // Every variant at this dtype brings its own reference: the family's reference still decides
  // (a user variant has none of its own), with the first variant's tolerance.
  return any;
}

bool MacroValueChar(char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '+' || c == '-';
}

}  // namespace

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  std::vector<std::string> names;
  for (DType d : kAllDTypes) {
    if (name == DTypeName(d)) return d;
    names.push_back(DTypeName(d));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "'; valid: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<const KernelFamily*> FindFamily(absl::string_view name) {
  std::vector<std::string> names;
  for (const KernelVariant& v : AllKernels()) {
    if (v.family->name == name) return v.family;
    if (std::find(names.begin(), names.end(), v.family->name) == names.end()) {
      names.push_back(std::string(v.family->name));
    }
  }
  return absl::NotFoundError(
      absl::StrCat("unknown family '", name, "'; families: ", absl::StrJoin(names, ", ")));
}

std::string UserKernelContract::Signature(absl::string_view entry) const {
  std::vector<std::string> params;
  for (const ContractParameter& p : parameters) params.push_back(absl::StrCat(p.type, " ", p.name));
  return absl::StrCat("extern \"C\" __global__ void ", entry, "(", absl::StrJoin(params, ", "),
                      ")");
}

std::string UserKernelContract::Example(absl::string_view entry) const {
  std::string body = std::string(family->user_example);
  if (body.empty()) {
    body = "// compute element i of every output here";
  }
  return absl::StrCat(
      "// ", family->name, " at ", DTypeName(dtype), ": one thread per element.\n",
      Signature(entry), " {\n",
      "  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n",
      "  if (i < n) ", body, "\n", "}\n");
}

absl::StatusOr<UserKernelContract> ContractFor(const KernelFamily& family, DType dtype) {
  if (std::optional<std::string> why = WhyNoContract(family)) {
    return absl::FailedPreconditionError(
        absl::StrCat("family ", family.name, " takes no user kernels: ", *why));
  }
  std::set<std::string> dtypes;
  UserKernelContract c;
  c.family = &family;
  c.dtype = dtype;
  c.tolerance_from = ToleranceVariant(family, dtype, &dtypes);
  if (c.tolerance_from == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "family ", family.name, " has no built-in variant at dtype ", DTypeName(dtype),
        " to take the verification tolerance from; dtypes: ", absl::StrJoin(dtypes, ", ")));
  }
  std::set<std::string> headers;
  std::vector<std::string> types;
  for (const BufferSpec& b : family.buffers) {
    const DType bd = BufferDType(b, dtype);
    const std::optional<CxxType> t = CxxTypeOf(bd);
    if (!t) {
      return absl::FailedPreconditionError(absl::StrCat("family ", family.name, "'s buffer ",
                                                        b.name, " has dtype ", DTypeName(bd),
                                                        ", which user kernels cannot name"));
    }
    if (*t->header != '\0') headers.insert(t->header);
    const std::string type =
        absl::StrCat(b.role == BufferRole::kInput ? "const " : "", t->name, "*");
    c.parameters.push_back({std::string(b.name), type, RoleName(b.role)});
  }
  if (family.alpha_argument) c.parameters.push_back({"alpha", "float", "scalar"});
  c.parameters.push_back({"n", "long long", "shape"});
  for (const ContractParameter& p : c.parameters) types.push_back(p.type);
  c.pointer_type = absl::StrCat("void (*)(", absl::StrJoin(types, ", "), ")");
  for (const std::string& h : headers) absl::StrAppend(&c.prelude, "#include <", h, ">\n");
  c.example = c.Example("my_kernel");
  c.notes = absl::StrCat(
      "Buffers in the family's declared order (", family.name,
      "), inputs const; n is the run's element count (every buffer holds n elements)",
      family.alpha_argument ? "; alpha is the family's scalar (2.5)" : "",
      ". The grid is ceil(n / (block_size x items_per_thread)) unless the launch names one; "
      "bounds-check i < n. ",
      // Worded without the word the source check refuses, so the text output compiles as is.
      headers.empty() ? "No header is needed"
                      : absl::StrCat("The worker puts ", absl::StrJoin(headers, " and "),
                                     " ahead of the source, which names no header itself (with "
                                     "nvcc, name it on the command line)"),
      ". Outputs are poisoned before the verified launch and every element is compared with the "
      "family's host reference (rtol ",
      c.tolerance_from->rtol, ", atol ", c.tolerance_from->atol, ", as ", c.tolerance_from->name,
      ").");
  return c;
}

absl::StatusOr<UserKernelContract> ContractFor(absl::string_view family, absl::string_view dtype) {
  absl::StatusOr<const KernelFamily*> f = FindFamily(family);
  if (!f.ok()) return f.status();
  absl::StatusOr<DType> d = ParseDType(dtype);
  if (!d.ok()) return d.status();
  return ContractFor(**f, *d);
}

absl::Status ValidateCompileOptions(const UserCompileOptions& options) {
  if (options.defines.size() > static_cast<size_t>(kMaxUserDefines)) {
    return absl::InvalidArgumentError(absl::StrCat("compile.defines: ", options.defines.size(),
                                                   " macros, at most ", kMaxUserDefines));
  }
  for (const std::string& d : options.defines) {
    if (d.size() > static_cast<size_t>(kMaxDefineBytes)) {
      return absl::InvalidArgumentError(absl::StrCat("compile.defines: a macro of ", d.size(),
                                                     " bytes, at most ", kMaxDefineBytes));
    }
    const size_t eq = d.find('=');
    const absl::string_view name = absl::string_view(d).substr(0, eq);
    if (!IsIdentifier(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("compile.defines: '", d,
                       "' is not NAME or NAME=VALUE with NAME [A-Za-z_][A-Za-z0-9_]*"
                       " (only macros, -maxrregcount, fast math and line info may be set)"));
    }
    if (eq != std::string::npos) {
      for (char c : absl::string_view(d).substr(eq + 1)) {
        if (!MacroValueChar(c)) {
          return absl::InvalidArgumentError(absl::StrCat("compile.defines: the value of '", d,
                                                         "' may hold only [A-Za-z0-9_.+-]"));
        }
      }
    }
  }
  if (options.maxrregcount != 0 && (options.maxrregcount < 16 || options.maxrregcount > 255)) {
    return absl::InvalidArgumentError(absl::StrCat("compile.maxrregcount = ", options.maxrregcount,
                                                   " is outside 16..255 (0: none)"));
  }
  return absl::OkStatus();
}

std::vector<std::string> NvrtcArguments(const UserCompileOptions& options,
                                        absl::string_view architecture,
                                        absl::string_view include_dir) {
  std::vector<std::string> args = {absl::StrCat("--gpu-architecture=", architecture),
                                   "-default-device", "-std=c++17"};
  if (!include_dir.empty()) args.push_back(absl::StrCat("--include-path=", include_dir));
  for (const std::string& d : options.defines) args.push_back(absl::StrCat("-D", d));
  if (options.maxrregcount > 0) {
    args.push_back(absl::StrCat("--maxrregcount=", options.maxrregcount));
  }
  if (options.fast_math) args.push_back("--use_fast_math");
  if (options.line_info) args.push_back("--generate-line-info");
  return args;
}

absl::Status ValidateEntryName(absl::string_view entry, bool cxx) {
  if (entry.empty()) return absl::InvalidArgumentError("user_kernel.entry is required");
  if (entry.size() > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("user_kernel.entry is ", entry.size(), " bytes, at most 256"));
  }
  if (cxx) {
    absl::string_view rest = entry;
    if (absl::StartsWith(rest, "::")) rest.remove_prefix(2);
    for (absl::string_view part : absl::StrSplit(rest, "::")) {
      if (!IsIdentifier(part)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "user_kernel.entry '", entry,
            "' is not a C++ function name (identifiers joined by ::, no template arguments)"));
      }
    }
    return absl::OkStatus();
  }
  for (size_t i = 0; i < entry.size(); ++i) {
    const char c = entry[i];
    if (!(IsIdentChar(c) || c == '$') || (i == 0 && absl::ascii_isdigit(c))) {
      return absl::InvalidArgumentError(
          absl::StrCat("user_kernel.entry '", entry, "' is not a PTX / ELF symbol name"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckUserSource(absl::string_view source, int64_t max_bytes) {
  if (source.empty()) return absl::InvalidArgumentError("user_kernel.source is empty");
  if (static_cast<int64_t>(source.size()) > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("user_kernel: the code is ", source.size(),
                                                   " bytes, over this server's limit "
                                                   "of ",
                                                   max_bytes, " (--max_user_kernel_bytes)"));
  }
  if (source.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("user_kernel.source contains a NUL byte");
  }
  // Splice "\\\n" (and "\\\r\n") the way translation phase 2 does, keeping a line map.
  std::string spliced;
  std::vector<int> line_of;  // spliced index -> 1-based source line
  spliced.reserve(source.size());
  line_of.reserve(source.size());
  int line = 1;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\\') {
      size_t j = i + 1;
      if (j < source.size() && source[j] == '\r') ++j;
      if (j < source.size() && source[j] == '\n') {
        ++line;
        i = j;
        continue;
      }
    }
    spliced.push_back(source[i]);
    line_of.push_back(line);
    if (source[i] == '\n') ++line;
  }
  for (const char* word : {"include", "import", "embed"}) {
    const size_t at = spliced.find(word);
    if (at != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "user.cu(", line_of[at], "): the word '", word,
          "' may not appear in a user kernel's source (no #include, #import, #embed or "
          "__has_include: the worker provides cuda_fp16.h and cuda_bf16.h; rename an identifier "
          "or comment that contains it)"));
    }
  }
  return absl::OkStatus();
}

std::string SignatureCheck(const UserKernelContract& contract, absl::string_view entry) {
  return absl::StrCat("\n#line 1 \"gpubench_signature_check\"\n",
                      "template <class gpubench_A, class gpubench_B> struct gpubench_same "
                      "{ static constexpr bool value = false; };\n",
                      "template <class gpubench_A> struct gpubench_same<gpubench_A, gpubench_A> "
                      "{ static constexpr bool value = true; };\n",
                      "static_assert(gpubench_same<decltype(&", entry, "), ", contract.pointer_type,
                      ">::value, \"gpubench: the entry ", entry, " does not have the contract of ",
                      contract.family->name, " at ", DTypeName(contract.dtype), ": ",
                      absl::StrReplaceAll(contract.Signature(entry), {{"\"", "\\\""}}), "\");\n");
}

std::optional<std::string> DeviceRuntimeReference(absl::string_view image) {
  for (absl::string_view symbol :
       {"cudaLaunchDevice", "cudaGetParameterBuffer", "cudaCGGetIntrinsicHandle",
        "cudaDeviceSynchronizeDeprecationAvoidance", "cudaCDP2"}) {
    if (absl::StrContains(image, symbol)) return std::string(symbol);
  }
  return std::nullopt;
}

}  // namespace gpubench
