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

}  // namespace

absl::StatusOr<v1::Plan> ParsePlanJson(const std::string& json) {
  absl::StatusOr<v1::Plan> plan = ParseUnchecked(json);
  if (!plan.ok()) return plan;
  // JSON accepts an enum as a number, and proto3 keeps one it does not declare (99 would run as
  // the engine's default): the plan is refused here, naming the field.
  if (absl::Status s = ValidateEnums(*plan); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("plan: ", s.message()));
  }
  return plan;
}

}  // namespace gpubench
