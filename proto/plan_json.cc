#include "proto/plan_json.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "server/service/validate_enums.h"

namespace gpubench {
namespace {

absl::StatusOr<v1::Plan> ParseUnchecked(const std::string& json) {
  v1::Plan plan;
  const auto as_plan = google::protobuf::util::JsonStringToMessage(json, &plan);
  if (as_plan.ok() && plan.sweeps_size() + plan.multi_device_sweeps_size() > 0) return plan;
  v1::RunSweepRequest sweep;
  const auto as_sweep = google::protobuf::util::JsonStringToMessage(json, &sweep);
  if (as_sweep.ok() && !as_plan.ok()) {
    plan.clear_sweeps();
    *plan.add_sweeps() = std::move(sweep);
    return plan;
  }
  if (as_plan.ok()) {
    return absl::InvalidArgumentError(
        "plan has no sweeps: give {\"sweeps\": [RunSweepRequest, ...]} or one RunSweepRequest");
  }
  // Neither: report the parser of the form the text looks like.
  const bool looks_like_plan = json.find("\"sweeps\"") != std::string::npos;
  return absl::InvalidArgumentError(absl::StrCat(
      looks_like_plan ? "plan is not a Plan ({\"sweeps\": [RunSweepRequest, ...]}) in JSON: "
                      : "plan is not a RunSweepRequest (or a Plan of sweeps) in JSON: ",
      (looks_like_plan ? as_plan : as_sweep).ToString()));
}

// A sweep that carries a user kernel names it whole and nothing the server would refuse anyway,
// so that `gpubench fleet` stops at the plan (exit 2) rather than on every target.
absl::Status CheckUserKernelSweep(const v1::RunSweepRequest& sweep, const std::string& which) {
  if (!sweep.has_user_kernel()) return absl::OkStatus();
  const v1::UserKernel& k = sweep.user_kernel();
  std::string problem;
  if (sweep.kernels_size() > 0) {
    problem = "kernels and userKernel are exclusive: a user kernel's sweep leaves kernels empty";
  } else if (k.code_case() == v1::UserKernel::CODE_NOT_SET) {
    problem = "userKernel needs its code: source, ptx or cubin (base64)";
  } else if (k.entry().empty() || k.family().empty() || k.dtype().empty()) {
    problem = "userKernel needs entry, family and dtype (gpubench contract FAMILY --dtype=D)";
  } else if (k.compare()) {
    problem = "userKernel.compare is for RunBenchmark (gpubench run --compare), not a sweep";
  } else if (sweep.has_seed() || (sweep.has_verify() && !sweep.verify())) {
    problem = "a user kernel always runs verified, from a fresh seed: leave out seed and verify";
  }
  if (problem.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("plan: ", which, ": ", problem));
}

}  // namespace

absl::StatusOr<v1::Plan> ParsePlanJson(const std::string& json) {
  absl::StatusOr<v1::Plan> plan = ParseUnchecked(json);
  if (!plan.ok()) return plan;
  // JSON accepts an enum as a number, and proto3 keeps one it does not declare (99 would run as
  // the engine's default): the plan is refused here, naming the field.
  if (absl::Status s = ValidateEnums(*plan); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("plan: ", s.message()));
  }
  for (int i = 0; i < plan->sweeps_size(); ++i) {
    if (absl::Status s = CheckUserKernelSweep(plan->sweeps(i), absl::StrCat("sweep ", i + 1));
        !s.ok()) {
      return s;
    }
  }
  for (int i = 0; i < plan->multi_device_sweeps_size(); ++i) {
    if (plan->multi_device_sweeps(i).has_user_kernel()) {
      // Multi-device sweeps are peer copies, a family with no user-kernel contract.
      return absl::InvalidArgumentError(
          absl::StrCat("plan: multi-device sweep ", i + 1,
                       ": a user kernel runs on one device; put its sweep in sweeps"));
    }
  }
  return plan;
}

}  // namespace gpubench
