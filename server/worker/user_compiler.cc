#include "server/worker/user_compiler.h"

#include <openssl/evp.h>

#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

#if GPUBENCH_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace gpubench {

namespace {

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

// Keeps the head of a long log (the first errors are the ones that matter) and says so.
std::string Bounded(std::string log, int max_bytes) {
  while (!log.empty() && (log.back() == '\n' || log.back() == '\0')) log.pop_back();
  if (log.size() > static_cast<size_t>(max_bytes)) {
    const size_t total = log.size();
    log.resize(max_bytes);
    absl::StrAppend(&log, "\n... (log cut at ", max_bytes, " of ", total, " bytes)");
  }
  return log;
}

// Whether PTX text declares a kernel (.entry) named `name`.
bool PtxHasEntry(absl::string_view ptx, absl::string_view name) {
  for (absl::string_view sep : {" ", "\t"}) {
    const std::string needle = absl::StrCat(".entry", sep, name);
    size_t at = 0;
    while ((at = ptx.find(needle, at)) != absl::string_view::npos) {
      const size_t end = at + needle.size();
      if (end >= ptx.size() || ptx[end] == '(' || ptx[end] == ' ' || ptx[end] == '\n' ||
          ptx[end] == '\r' || ptx[end] == '\t') {
        return true;
      }
      at = end;
    }
  }
  return false;
}

// The ".target sm_90" of PTX text, or "".
std::string PtxTarget(absl::string_view ptx) {
  const size_t at = ptx.find(".target");
  if (at == absl::string_view::npos) return "";
  size_t b = at + 7;
  while (b < ptx.size() && (ptx[b] == ' ' || ptx[b] == '\t')) ++b;
  size_t e = b;
  while (e < ptx.size() && ptx[e] != ',' && ptx[e] != '\n' && ptx[e] != ' ' && ptx[e] != '\r') {
    ++e;
  }
  return std::string(ptx.substr(b, e - b));
}

absl::Status CheckImageForDeviceRuntime(absl::string_view image, absl::string_view what) {
  if (std::optional<std::string> dr = DeviceRuntimeReference(image)) {
    return absl::InvalidArgumentError(
        absl::StrCat("user kernel: the ", what, " refers to the device runtime (", *dr,
                     "): launches from the device and relocatable device code are not allowed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CompiledUserKernel> PassThrough(const UserKernelSpec& spec) {
  CompiledUserKernel c;
  const std::string& code = spec.request.code;
  const std::string& entry = spec.request.entry;
  c.lowered_name = entry;
  c.signature_checked = false;
  c.signature_note =
      absl::StrCat("not checked: a ", UserCodeKindName(spec.request.kind),
                   " carries no C++ types; the kernel is launched with the contract's arguments (",
                   spec.contract.pointer_type, ")");
  if (spec.request.kind == UserCodeKind::kPtx) {
    if (!PtxHasEntry(code, entry)) {
      return absl::InvalidArgumentError(
          absl::StrCat("user kernel: the PTX declares no .entry named '", entry, "'"));
    }
    c.image = code;
    c.image_is_ptx = true;
    c.architecture = PtxTarget(code);
    RETURN_IF_ERROR(CheckImageForDeviceRuntime(code, "PTX"));
    return c;
  }
  if (code.size() < 4 || code.compare(0, 4,
                                      "\x7f"
                                      "ELF") != 0) {
    return absl::InvalidArgumentError("user kernel: the cubin is not an ELF image");
  }
  if (!absl::StrContains(code, absl::StrCat(".text.", entry))) {
    return absl::InvalidArgumentError(
        absl::StrCat("user kernel: the cubin has no kernel named '", entry, "'"));
  }
  RETURN_IF_ERROR(CheckImageForDeviceRuntime(code, "cubin"));
  c.image = code;
  c.architecture = "cubin";
  return c;
}

}  // namespace

#if GPUBENCH_HAVE_NVRTC
bool HaveNvrtc() { return true; }
#else
bool HaveNvrtc() { return false; }
#endif

std::string DefaultUserKernelIncludeDir() {
#ifdef GPUBENCH_NVRTC_INCLUDE_DIR
  return GPUBENCH_NVRTC_INCLUDE_DIR;
#else
  return "";
#endif
}

int UserCompiler::cached_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(lru_.size());
}

absl::StatusOr<CompiledUserKernel> UserCompiler::Compile(const UserKernelSpec& spec,
                                                         const std::string& architecture) {
  const UserKernelRequest& r = spec.request;
  // Again here, with this worker's own limit: the worker trusts nothing the channel carries.
  if (static_cast<int64_t>(r.code.size()) > options_.max_code_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("user_kernel: the ", UserCodeKindName(r.kind), " is ", r.code.size(),
                     " bytes, over the worker's limit of ", options_.max_code_bytes,
                     " (--max_user_kernel_bytes)"));
  }
  if (r.kind != UserCodeKind::kSource) return PassThrough(spec);
  RETURN_IF_ERROR(CheckUserSource(r.code, options_.max_code_bytes));
  RETURN_IF_ERROR(ValidateCompileOptions(r.compile));
  const std::vector<std::string> args =
      NvrtcArguments(r.compile, architecture, options_.include_dir);
  const std::string key = Sha256Hex(
      absl::StrCat(UserCodeKindName(r.kind), "\n", r.entry, "\n", absl::StrJoin(args, "\n"), "\n",
                   spec.contract.pointer_type, "\n", spec.contract.prelude, "\n", r.code));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      CompiledUserKernel hit = it->second->second;
      hit.cache_hit = true;
      hit.compile_seconds = 0;
      return hit;
    }
  }
  ASSIGN_OR_RETURN(CompiledUserKernel compiled, CompileSource(spec, architecture));
  std::lock_guard<std::mutex> lock(mu_);
  Insert(key, compiled);
  return compiled;
}

void UserCompiler::Insert(const std::string& key, const CompiledUserKernel& compiled) {
  const int64_t bytes = static_cast<int64_t>(compiled.image.size() + compiled.log.size());
  if (bytes > options_.cache_bytes || options_.cache_entries <= 0) return;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  cached_bytes_ += bytes;
  while (static_cast<int>(lru_.size()) > options_.cache_entries ||
         cached_bytes_ > options_.cache_bytes) {
    const auto& [old_key, old] = lru_.back();
    cached_bytes_ -= static_cast<int64_t>(old.image.size() + old.log.size());
    index_.erase(old_key);
    lru_.pop_back();
  }
}

#if GPUBENCH_HAVE_NVRTC

namespace {

// Owns an nvrtcProgram.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p != nullptr) nvrtcDestroyProgram(&p);
  }
};

std::string ProgramLog(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return "";
  return log;
}

absl::Status NvrtcError(nvrtcResult r, absl::string_view what) {
  return absl::InternalError(absl::StrCat("NVRTC ", what, ": ", nvrtcGetErrorString(r)));
}

}  // namespace

absl::StatusOr<CompiledUserKernel> UserCompiler::CompileSource(const UserKernelSpec& spec,
                                                               const std::string& architecture) {
  const UserKernelRequest& r = spec.request;
  const absl::Time start = absl::Now();
  // The prelude's headers first, then the user's lines numbered from 1 (errors say user.cu(L)),
  // then the contract's static check under its own file name.
  const std::string text = absl::StrCat(spec.contract.prelude, "#line 1 \"user.cu\"\n", r.code,
                                        "\n", SignatureCheck(spec.contract, r.entry));
  Program program;
  if (nvrtcResult e = nvrtcCreateProgram(&program.p, text.c_str(), "user.cu", 0, nullptr, nullptr);
      e != NVRTC_SUCCESS) {
    return NvrtcError(e, "create program");
  }
  const std::string name_expression = absl::StrCat("&", r.entry);
  if (nvrtcResult e = nvrtcAddNameExpression(program.p, name_expression.c_str());
      e != NVRTC_SUCCESS) {
    return NvrtcError(e, "add name expression");
  }
  const std::vector<std::string> args =
      NvrtcArguments(r.compile, architecture, options_.include_dir);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(program.p, static_cast<int>(argv.size()), argv.data());
  const std::string log = Bounded(ProgramLog(program.p), options_.max_log_bytes);
  if (compiled == NVRTC_ERROR_COMPILATION) {
    if (absl::StrContains(log, "gpubench_signature_check")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "user kernel: the entry ", r.entry, " does not have the contract of ",
          spec.contract.family->name, " at ", DTypeName(spec.contract.dtype), ", ",
          spec.contract.Signature(r.entry), " (gpubench contract ", spec.contract.family->name,
          " --dtype=", DTypeName(spec.contract.dtype), "); NVRTC: ", log));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("user kernel: the source does not compile for ", architecture, ": ", log));
  }
  if (compiled != NVRTC_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat("user kernel: NVRTC refused the compile (",
                                                   nvrtcGetErrorString(compiled), "): ", log));
  }
  CompiledUserKernel c;
  c.architecture = architecture;
  c.log = log;
  c.signature_checked = true;
  c.signature_note = absl::StrCat("checked at compile time against ", spec.contract.pointer_type);
  const char* lowered = nullptr;
  if (nvrtcResult e = nvrtcGetLoweredName(program.p, name_expression.c_str(), &lowered);
      e != NVRTC_SUCCESS || lowered == nullptr) {
    return NvrtcError(e, "lowered name");
  }
  c.lowered_name = lowered;
  size_t ptx_size = 0;
  if (nvrtcResult e = nvrtcGetPTXSize(program.p, &ptx_size); e != NVRTC_SUCCESS) {
    return NvrtcError(e, "PTX size");
  }
  std::string ptx(ptx_size, '\0');
  if (nvrtcResult e = nvrtcGetPTX(program.p, ptx.data()); e != NVRTC_SUCCESS) {
    return NvrtcError(e, "PTX");
  }
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  if (!PtxHasEntry(ptx, c.lowered_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("user kernel: ", r.entry,
                     " is not a __global__ function (the compiled code has no "
                     "kernel ",
                     c.lowered_name, ")"));
  }
  RETURN_IF_ERROR(CheckImageForDeviceRuntime(ptx, "compiled code"));
  if (absl::StartsWith(architecture, "sm_")) {
    size_t cubin_size = 0;
    if (nvrtcResult e = nvrtcGetCUBINSize(program.p, &cubin_size); e != NVRTC_SUCCESS) {
      return NvrtcError(e, "cubin size");
    }
    c.image.resize(cubin_size);
    if (nvrtcResult e = nvrtcGetCUBIN(program.p, c.image.data()); e != NVRTC_SUCCESS) {
      return NvrtcError(e, "cubin");
    }
  } else {
    c.image = std::move(ptx);
    c.image_is_ptx = true;
  }
  c.compile_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return c;
}

#else  // !GPUBENCH_HAVE_NVRTC

absl::StatusOr<CompiledUserKernel> UserCompiler::CompileSource(const UserKernelSpec&,
                                                               const std::string&) {
  return absl::FailedPreconditionError(
      "this gpubench_worker was built without NVRTC (no CUDA toolkit at configure time): it "
      "cannot compile CUDA C++; submit PTX or a cubin, or use a CUDA build");
}

#endif

}  // namespace gpubench
