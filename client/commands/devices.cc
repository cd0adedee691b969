// `gpubench devices`: the server's devices (ListDevices).
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>
#include <vector>

#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

int Devices(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListDevicesResponse response;
  grpc::Status status = stub.ListDevices(&context, v1::ListDevicesRequest(), &response);
  if (!status.ok()) return ReportRpcError("ListDevices", status);
  std::cout << RenderDevices(response, format);
  return kExitOk;
}

}  // namespace gpubench::client
