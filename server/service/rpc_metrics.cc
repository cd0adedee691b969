#include "server/service/rpc_metrics.h"

#include <chrono>
#include <string>

namespace gpubench {
namespace {

// Method names come from the request; only services this server registers are kept as labels.
std::string BoundedMethod(const char* method) {
  const std::string m = method == nullptr ? "" : method;
  for (const char* prefix : {"/gpubench.v1.Benchmark/", "/grpc.health.v1.Health/",
                             "/grpc.reflection.v1alpha.ServerReflection/"}) {
    if (m.rfind(prefix, 0) == 0) return m;
  }
  return "other";
}

class RpcMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(grpc::experimental::ServerRpcInfo* info, Metrics* metrics)
      : method_(BoundedMethod(info->method())),
        metrics_(metrics),
        start_(std::chrono::steady_clock::now()) {
    metrics_->OnRpcStarted(method_);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      // grpc::StatusCode and absl::StatusCode share google.rpc.Code numbering.
      metrics_->OnRpc(method_, static_cast<absl::StatusCode>(status.error_code()),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
                          .count());
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  Metrics* metrics_;
  const std::chrono::steady_clock::time_point start_;
};

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(Metrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RpcMetricsInterceptor(info, metrics_);
  }

 private:
  Metrics* metrics_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeRpcMetricsInterceptor(
    Metrics* metrics) {
  return std::make_unique<Factory>(metrics);
}

}  // namespace gpubench
