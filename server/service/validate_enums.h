// Enum range checks over any request message, by protobuf reflection. proto3 enums are open: a
// parser keeps 99 in `cache_mode` and the engine would read it as whatever its default branch does
// (cold, auto), so every edge that takes a message (RPCs, plan files) refuses such values here.
#ifndef GPUBENCH_SERVER_SERVICE_VALIDATE_ENUMS_H_
#define GPUBENCH_SERVER_SERVICE_VALIDATE_ENUMS_H_

#include <google/protobuf/message.h>

#include <string>

#include "absl/status/status.h"

namespace gpubench {

// OK, or INVALID_ARGUMENT naming the first enum field (as a path from `message`, e.g.
// "sweeps[1].measurement.cache_mode") whose value is not one the enum declares, with the
// declared names. Walks set singular fields, repeated fields and map values, recursively.
absl::Status ValidateEnums(const google::protobuf::Message& message);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_VALIDATE_ENUMS_H_
