// The one place absl::Status becomes grpc::Status (codes share numbering with google.rpc.Code).
#ifndef GPUBENCH_SERVER_SERVICE_STATUS_ADAPTER_H_
#define GPUBENCH_SERVER_SERVICE_STATUS_ADAPTER_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace gpubench {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_STATUS_ADAPTER_H_
