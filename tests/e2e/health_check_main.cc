// grpc_health_check: asks a server's standard grpc.health.v1.Health/Check, as an orchestrator's
// probe does. Used by scripts/container_test.sh to talk to the containerized server from the host.
//   grpc_health_check <host:port> [service]   -> prints the status; exit 0 only when SERVING
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>

#include "grpc/health/v1/health.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: grpc_health_check <host:port> [service]\n";
    return 2;
  }
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  if (argc > 2) request.set_service(argv[2]);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    std::cout << "RPC failed: " << status.error_code() << " " << status.error_message() << "\n";
    return 1;
  }
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()) << "\n";
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}
