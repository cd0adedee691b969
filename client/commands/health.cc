// `gpubench health`: each GPU's verdict with its evidence (GetHealth); exit 0 PASS, 1 DEGRADED or
// FAIL, 2 UNKNOWN (client/health.h), the shape node-problem-detector and NHC checks expect.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/commands/options.h"
#include "client/health.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

int Health(const Invocation& invocation) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetHealthRequest request;
  request.set_device_uuid(absl::GetFlag(FLAGS_device_uuid));
  // Every device unless --device is given (its default 0 would select one).
  for (const std::string& arg : Argv()) {
    if (arg == "--device" || arg.rfind("--device=", 0) == 0) {
      request.set_device_index(absl::GetFlag(FLAGS_device));
    }
  }
  v1::GetHealthResponse response;
  grpc::Status status = invocation.stub->GetHealth(&context, request, &response);
  if (!status.ok()) return ReportRpcError("GetHealth", status);
  std::cout << (invocation.format == Format::kTable ? RenderHealth(response) : ToJson(response));
  return HealthExitCode(response.verdict());
}

}  // namespace gpubench::client
