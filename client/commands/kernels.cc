// `gpubench kernels`: the catalog (ListKernels).
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>
#include <vector>

#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/options.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

int Kernels(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  v1::ListKernelsResponse response;
  grpc::Status status = ListCatalog(stub, &response);
  if (!status.ok()) return ReportRpcError("ListKernels", status);
  std::cout << RenderKernels(response, format);
  return kExitOk;
}

}  // namespace gpubench::client
