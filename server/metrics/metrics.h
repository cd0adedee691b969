// Prometheus metrics (prometheus-cpp, pull): a RunObserver that turns results and queue events
// into series, gRPC request metrics, device and build info. Label cardinality is bounded: the
// per-result gauges (labelled by element count, which callers choose) live in an LRU of at most
// `max_result_series` label sets; evictions are counted in gpubench_metrics_series_evicted_total.
#ifndef GPUBENCH_SERVER_METRICS_METRICS_H_
#define GPUBENCH_SERVER_METRICS_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kernels/backend.h"
#include "server/engine/engine.h"
#include "server/health/health_monitor.h"

namespace gpubench {

struct MetricsOptions {
  int max_result_series = 512;  // LRU cap on label sets of the per-result gauges
  std::string node_name{};      // the `Hostname` label (dcgm-exporter's name for the node)
};

// Thread-safe.
class Metrics final : public RunObserver {
 public:
  Metrics(std::shared_ptr<prometheus::Registry> registry, MetricsOptions options);

  // Exports gpubench_device_info and gpubench_build_info. Call once at start-up.
  void SetInfo(const std::vector<DeviceInfo>& devices, const std::string& backend);

  void OnRunFinished(const RunSpec& spec, const absl::StatusOr<RunResult>& result,
                     absl::Duration wall_time) override;
  void OnQueueDepth(int device_index, int depth) override;

  // gRPC edge: one finished RPC, labelled with the code's name ("OK", "NOT_FOUND", ...).
  void OnRpc(const std::string& method, absl::StatusCode code, double seconds);
  // A call began ("/package.Service/Method", or "other"): grpc_server_started_total.
  void OnRpcStarted(const std::string& method);

  // A device's worker process (server/engine/worker_pool.h): gpubench_device_up is 1 while the
  // device takes runs (its catalog worker ready or restarting), 0 once unhealthy; each fault that
  // ended a worker counts in gpubench_worker_restarts_total by `fault` kind and `worker` role
  // ("catalog", "user"); gpubench_user_kernel_worker_running is 1 while the device's user-kernel
  // worker has a process (and a context), 0 while it is idle. Labelled like the other per-GPU
  // series; call after SetInfo.
  void SetDeviceUp(int device, bool up);
  void CountWorkerFault(int device, const std::string& fault, const std::string& worker);
  void SetUserKernelWorkerRunning(int device, bool running);

  // The health monitor's state after a scheduled pass: gpubench_gpu_health (1 on the GPU's
  // current verdict, 0 on the others), and per GPU and health measurement its latest figure
  // (gpubench_health_value), declared change points (gpubench_health_change_points) and the
  // last change (gpubench_health_last_change_ratio). Labelled like the other per-GPU series.
  void SetHealth(const std::vector<health::GpuHealth>& gpus,
                 const std::vector<health::SeriesSummary>& series);

  // Number of per-result label sets currently exported (for tests).
  int result_series() const;

 private:
  struct ResultGauges {
    prometheus::Gauge* median_seconds = nullptr;
    prometheus::Gauge* bandwidth = nullptr;
    prometheus::Gauge* peak_ratio = nullptr;
    prometheus::Gauge* flops = nullptr;             // FLOP families (GEMM)
    prometheus::Gauge* peak_flops_ratio = nullptr;
    prometheus::Gauge* seconds_per_load = nullptr;  // load families (latency)
    prometheus::Gauge* theoretical_occupancy = nullptr;
    prometheus::Gauge* achieved_occupancy = nullptr;
    prometheus::Gauge* registers = nullptr;
    prometheus::Gauge* verified = nullptr;
    prometheus::Gauge* timestamp = nullptr;
  };
  ResultGauges& GaugesFor(const std::map<std::string, std::string>& labels);  // mu_ held
  void RemoveGauges(const ResultGauges& g);

  std::shared_ptr<prometheus::Registry> registry_;
  const MetricsOptions options_;
  // Per device index: the labels that identify it, ours and dcgm-exporter's.
  std::map<int, std::map<std::string, std::string>> device_labels_;

  prometheus::Family<prometheus::Gauge>& median_seconds_;
  prometheus::Family<prometheus::Gauge>& bandwidth_;
  prometheus::Family<prometheus::Gauge>& peak_ratio_;
  prometheus::Family<prometheus::Gauge>& flops_;
  prometheus::Family<prometheus::Gauge>& peak_flops_ratio_;
  prometheus::Family<prometheus::Gauge>& seconds_per_load_;
  prometheus::Family<prometheus::Gauge>& theoretical_occupancy_;
  prometheus::Family<prometheus::Gauge>& achieved_occupancy_;
  prometheus::Family<prometheus::Gauge>& registers_;
  prometheus::Family<prometheus::Gauge>& verified_;
  prometheus::Family<prometheus::Gauge>& last_result_timestamp_;
  prometheus::Family<prometheus::Counter>& runs_;
  prometheus::Family<prometheus::Counter>& skipped_;
  prometheus::Family<prometheus::Histogram>& run_duration_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Counter>& rpcs_;
  prometheus::Family<prometheus::Histogram>& rpc_duration_;
  // The go-grpc-prometheus names dashboards expect: grpc_service, grpc_method, grpc_type, grpc_code.
  prometheus::Family<prometheus::Counter>& grpc_started_;
  prometheus::Family<prometheus::Counter>& grpc_handled_;
  prometheus::Family<prometheus::Histogram>& grpc_handling_;
  prometheus::Family<prometheus::Gauge>& device_info_;
  prometheus::Family<prometheus::Gauge>& device_up_;
  prometheus::Family<prometheus::Counter>& worker_restarts_;
  prometheus::Family<prometheus::Gauge>& user_worker_running_;
  prometheus::Family<prometheus::Gauge>& build_info_;
  prometheus::Family<prometheus::Gauge>& gpu_health_;
  prometheus::Family<prometheus::Gauge>& health_value_;
  prometheus::Family<prometheus::Gauge>& health_change_points_;
  prometheus::Family<prometheus::Gauge>& health_last_change_;
  prometheus::Counter& evicted_;

  mutable std::mutex mu_;
  // LRU of per-result label sets: most recent at the front.
  std::list<std::map<std::string, std::string>> lru_;
  std::map<std::map<std::string, std::string>,
           std::pair<ResultGauges, std::list<std::map<std::string, std::string>>::iterator>>
      series_;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_METRICS_METRICS_H_
