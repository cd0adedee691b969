// gpubench.v1.Benchmark on gRPC's callback API. Cheap RPCs answer on the calling thread; runs go
// through the engine's per-device queues and finish from the worker thread.
#ifndef GPUBENCH_SERVER_SERVICE_BENCHMARK_SERVICE_H_
#define GPUBENCH_SERVER_SERVICE_BENCHMARK_SERVICE_H_

#include "gpubench/v1/benchmark.grpc.pb.h"
#include "server/engine/engine.h"
#include "server/health/health_monitor.h"
#include "server/service/auth.h"
#include "server/service/client_limits.h"

namespace gpubench {

struct ServiceOptions {
  int max_sweep_items = 1000;  // kernels x sizes x block sizes in one RunSweep
  const TokenAuthenticator* auth = nullptr;  // null: no authentication
  // GetServerInfo's answer, filled in by main (build, start time, transport limits); the service
  // adds the backend, devices and the engine's limits.
  v1::GetServerInfoResponse server_info{};
  // The scheduled plan's health verdicts; null: no --schedule_plan (GetHealth says UNKNOWN).
  const health::HealthMonitor* health = nullptr;
  // Per-client limits on RunBenchmark calls that carry a user kernel.
  UserKernelClientLimits user_kernel_clients{};
};

// Thread-safe. `engine` must outlive the service.
class BenchmarkService final : public v1::Benchmark::CallbackService {
 public:
  BenchmarkService(Engine* engine, ServiceOptions options)
      : engine_(engine), options_(options), user_kernel_clients_(options.user_kernel_clients) {}

  grpc::ServerUnaryReactor* ListKernels(grpc::CallbackServerContext* context,
                                        const v1::ListKernelsRequest* request,
                                        v1::ListKernelsResponse* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const v1::ListDevicesRequest* request,
                                        v1::ListDevicesResponse* response) override;
  grpc::ServerUnaryReactor* RunBenchmark(grpc::CallbackServerContext* context,
                                         const v1::RunBenchmarkRequest* request,
                                         v1::RunBenchmarkResponse* response) override;
  grpc::ServerWriteReactor<v1::RunSweepResponse>* RunSweep(
      grpc::CallbackServerContext* context, const v1::RunSweepRequest* request) override;
  grpc::ServerUnaryReactor* Autotune(grpc::CallbackServerContext* context,
                                     const v1::AutotuneRequest* request,
                                     v1::AutotuneResponse* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetServerInfoRequest* request,
                                          v1::GetServerInfoResponse* response) override;
  grpc::ServerUnaryReactor* GetHealth(grpc::CallbackServerContext* context,
                                      const v1::GetHealthRequest* request,
                                      v1::GetHealthResponse* response) override;
  grpc::ServerUnaryReactor* GetKernelContract(grpc::CallbackServerContext* context,
                                              const v1::GetKernelContractRequest* request,
                                              v1::GetKernelContractResponse* response) override;

 private:
  Engine* engine_;
  const ServiceOptions options_;
  ClientLimiter user_kernel_clients_;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_BENCHMARK_SERVICE_H_
