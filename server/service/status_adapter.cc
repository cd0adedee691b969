#include "server/service/status_adapter.h"

#include <string>

#include "common/echo.h"

namespace gpubench {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode both follow google.rpc.Code numbering.
  // Bounded: messages quote client strings, and gRPC's metadata limit applies to the status too.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      BoundStatusMessage(status.message()));
}

}  // namespace gpubench
