// A gRPC server interceptor that records every finished RPC (method, status code, latency) in
// Metrics. gRPC's interceptor API is the hook for this; nothing else sees the final status of
// callback-API RPCs uniformly.
#ifndef GPUBENCH_SERVER_SERVICE_RPC_METRICS_H_
#define GPUBENCH_SERVER_SERVICE_RPC_METRICS_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "server/metrics/metrics.h"

namespace gpubench {

// `metrics` must outlive the server. Thread-safe.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeRpcMetricsInterceptor(
    Metrics* metrics);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_RPC_METRICS_H_
