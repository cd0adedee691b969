// The option table (common/measurement_options.h) on protobuf messages: a row's field read and
// written by name through reflection, so that the request conversion, the echo in ResolvedRun
// and the CLI need no line per option. In gpubench_plan, beside the enum check, so that the
// service and the client both link it.
#ifndef GPUBENCH_SERVER_SERVICE_PROTO_OPTIONS_H_
#define GPUBENCH_SERVER_SERVICE_PROTO_OPTIONS_H_

#include <google/protobuf/message.h>

#include <optional>

#include "absl/status/status.h"
#include "common/measurement_options.h"

namespace gpubench {

// OK when `descriptor` has a field named o.name of the row's kind (int32, int64, double, bool,
// or an enum with a value for every choice); else INTERNAL saying what differs.
absl::Status CheckOptionField(const google::protobuf::Descriptor& descriptor, const OptionSpec& o);

// The row's value in `message` (a MeasurementOptions or a ResolvedRun): nullopt where the field
// has presence and is unset, or is an enum value no choice names (UNSPECIFIED). Choices as their
// index, bools 0 or 1. `message` must have the field (CheckOptionField).
std::optional<double> ReadOption(const google::protobuf::Message& message, const OptionSpec& o);

// Sets the row's field of `message` to `value` (choices by index, bools 0 or 1).
void WriteOption(google::protobuf::Message* message, const OptionSpec& o, double value);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_PROTO_OPTIONS_H_
