#include "server/worker/user_kernel_run.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/engine/user_kernel_checks.h"
#include "server/worker/user_kernel_runtime.h"

namespace gpubench {
namespace {

std::string TimedCheckSummary(const TimedSampleCheck& timed) {
  return absl::StrCat(
      "timed_launch_verified: ", timed.verified, " of ", timed.samples,
      " timed samples verified on the device, each with its outputs poisoned and its inputs "
      "generated from a fresh seed before it (sample i chosen with probability 1/i before it "
      "was taken, so the last one verified, sample ",
      timed.last_verified, ", is uniform over the run)");
}

}  // namespace

absl::StatusOr<RunResult> MeasureUserKernelRun(Backend& backend, UserCompiler* compiler,
                                               const RunSpec& spec, const DeviceInfo& device,
                                               const CancelledFn& cancelled, ParallelPool* pool,
                                               const std::function<void()>& compiled_hook) {
  const UserKernelSpec& user = *spec.user_kernel;
  const bool cuda = backend.kind() == BackendKind::kCuda;
  // The device's own architecture; where there is no device, compute_90 (PTX), so that a CPU
  // build still runs every compile check.
  const std::string architecture =
      cuda ? absl::StrCat("sm_", device.compute_capability_major, device.compute_capability_minor)
           : "compute_90";
  ASSIGN_OR_RETURN(const CompiledUserKernel compiled, compiler->Compile(user, architecture));
  if (compiled_hook) compiled_hook();
  const std::string compiled_how =
      absl::StrCat("the ", UserCodeKindName(user.request.kind), " of ", user.request.entry,
                   " passed the ", "compile checks for ", compiled.architecture, " (",
                   compiled.signature_checked ? "signature checked" : "signature not checked", ", ",
                   compiled.cache_hit ? "compile cache hit" : "compiled", ")");
  if (!cuda) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", backend.name(),
                     " backend cannot run a user kernel: user kernels have no "
                     "host emulation and need a CUDA device; ",
                     compiled_how));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<UserKernelBinding> binding,
                   BindUserKernel(compiled, user.variant, spec.device_index));
  RunSpec run = spec;
  run.kernel = &binding->variant();
  run.verify_timed_samples = true;
  // Never buffers another run's kernel touched, nor its own left for another (MeasureRun checks
  // user_kernel too): a hostile kernel could leave data behind.
  run.buffer_chain = 0;
  run.keep_buffers = false;
  ASSIGN_OR_RETURN(RunResult result, MeasureRun(backend, run, device, cancelled, pool));
  if (!result.timed_sample_check.has_value()) {
    return absl::InternalError(absl::StrCat("the ", backend.name(),
                                            " backend did not apply the timed-sample check to a "
                                            "user kernel (timed_launch_verified)"));
  }
  const TimedSampleCheck& timed = *result.timed_sample_check;
  UserKernelReport report{
      .kind = UserCodeKindName(user.request.kind),
      .entry = user.request.entry,
      .lowered_name = compiled.lowered_name,
      .code_sha256 = user.code_sha256,
      .architecture = compiled.architecture,
      .compile_cache_hit = compiled.cache_hit,
      .compile_seconds = compiled.compile_seconds,
      .signature_checked = compiled.signature_checked,
      .signature_note = compiled.signature_note,
      .integrity_checks = {"fresh_seed: the inputs came from a random seed drawn for this run "
                           "(fixed seeds refused)",
                           "outputs_poisoned: every output set to all-ones bytes before every "
                           "timed sample and the verified launch (in-outs refilled), each sample "
                           "one launch, so that no launch can tell from its outputs whether it "
                           "is verified",
                           "every_element_verified: each element of each output against the "
                           "host reference",
                           "no_device_runtime: no relocatable device code, no launch from the "
                           "device"},
      .compile_log = compiled.log,
      .seed = spec.seed};
  if (spec.cache_mode == CacheMode::kCold) {
    report.integrity_checks.push_back(
        "persisting_l2_reset: L2 lines marked persisting (evict_last, access-policy windows) "
        "returned to normal before every cold sample's flush (cudaCtxResetPersistingL2Cache), so "
        "no hint keeps the kernel's data in L2 across it");
  }
  report.integrity_checks.push_back(TimedCheckSummary(timed));
  if (compiled.signature_checked) {
    report.integrity_checks.push_back(absl::StrCat("signature_checked: ", compiled.signature_note));
  }
  const bool verified = result.verification.has_value() && result.verification->passed;
  if (!timed.failure.empty()) {
    // Right when verified and wrong when timed is a kernel that games the measurement; wrong in
    // both is a wrong kernel, which its verification verdict already says.
    if (verified) {
      return absl::FailedPreconditionError(absl::StrCat(
          "timed_launch_verified failed: ", timed.failure,
          "; the separate verified launch matched the reference, so the timed launches did not do "
          "the work that was verified"));
    }
    result.notes.push_back(absl::StrCat("timed_launch_verified: ", timed.failure));
  }
  // Each check below refuses a verified run; a run whose verification failed is already an error,
  // and the check's figures only say how far from real it was, as a note.
  std::string what;
  auto apply = [&](const absl::Status& status) -> absl::Status {
    if (status.ok()) {
      report.integrity_checks.push_back(what);
      return absl::OkStatus();
    }
    if (verified) return status;
    result.notes.push_back(std::string(status.message()));
    return absl::OkStatus();
  };
  // A user kernel's launch is one cudaLaunchKernel of one kernel (user_kernel_runtime.cc).
  RETURN_IF_ERROR(
      apply(CheckLaunchCount(result, /*kernels_per_launch=*/1, &what, &report.integrity)));
  RETURN_IF_ERROR(apply(CheckTimerCrossCheck(result, &what, &report.integrity)));
  RETURN_IF_ERROR(apply(CheckPhysicalFloor(result, &what, &report.integrity)));
  result.spec = spec;  // the spec as sent (its variant is the rebuilt one on decode)
  result.user_kernel = std::move(report);
  return result;
}

}  // namespace gpubench
