// Plan files (gpubench/v1/plan.proto) from JSON: shared by the server's --schedule_plan and
// `gpubench fleet --plan`.
#ifndef GPUBENCH_PROTO_PLAN_JSON_H_
#define GPUBENCH_PROTO_PLAN_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "gpubench/v1/plan.pb.h"

namespace gpubench {

// Parses a plan file's text: a Plan ({"sweeps": [RunSweepRequest, ...], "multiDeviceSweeps":
// [...]}) or one RunSweepRequest (a plan of that one sweep), both in protobuf's JSON mapping.
// INVALID_ARGUMENT with the parser's message on anything else, for a Plan without sweeps, and for
// a sweep whose user kernel the server would refuse as a whole (kernels beside it, no code,
// entry, family or dtype, compare, a seed or verify: false, a multi-device sweep).
absl::StatusOr<v1::Plan> ParsePlanJson(const std::string& json);

}  // namespace gpubench

#endif  // GPUBENCH_PROTO_PLAN_JSON_H_
