#include "server/metrics/metrics.h"

#include "common/build_info.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/engine/nvml_monitor.h"

namespace gpubench {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// "OK", "NOT_FOUND", ...: Abseil's names, which are gRPC's (the codes share numbering).
std::string StatusCodeName(absl::StatusCode code) {
  std::string name = absl::StatusCodeToString(code);
  return name.empty() ? "UNKNOWN" : name;
}

// Run wall time (queue excluded): 10 ms .. ~3 min.
const prometheus::Histogram::BucketBoundaries kRunBuckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                                             2.5,  5,    10,  20,   40,  80, 160};
// RPC latency, queueing included: 100 us .. ~10 min.
const prometheus::Histogram::BucketBoundaries kRpcBuckets = {
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600};

}  // namespace

Metrics::Metrics(std::shared_ptr<prometheus::Registry> registry, MetricsOptions options)
    : registry_(std::move(registry)),
      options_(options),
      median_seconds_(BuildGauge()
                          .Name("gpubench_run_median_seconds")
                          .Help("Median time of one launch in the latest run of this kernel, size, "
                                "mode and device (seconds)")
                          .Register(*registry_)),
      bandwidth_(BuildGauge()
                     .Name("gpubench_run_bandwidth_bytes_per_second")
                     .Help("Bytes moved per launch divided by the median time, latest run; "
                           "absent for families that move no bytes (latency)")
                     .Register(*registry_)),
      peak_ratio_(BuildGauge()
                      .Name("gpubench_run_peak_bandwidth_ratio")
                      .Help("Bandwidth of the latest run as a fraction of its family's peak: the "
                            "device's theoretical DRAM bandwidth (2 x memory clock x bus width / "
                            "8), or the PCIe link's rate for host<->device copies; absent where "
                            "unknown (CPU backend)")
                      .Register(*registry_)),
      flops_(BuildGauge()
                 .Name("gpubench_run_flops_per_second")
                 .Help("Floating-point operations per launch (GEMM: 2 M N K) divided by the "
                       "median time, latest run of a FLOP family")
                 .Register(*registry_)),
      peak_flops_ratio_(BuildGauge()
                            .Name("gpubench_run_peak_flops_ratio")
                            .Help("FLOP/s of the latest run as a fraction of the device's dense "
                                  "peak for its type; absent where unknown (CPU backend)")
                            .Register(*registry_)),
      seconds_per_load_(BuildGauge()
                            .Name("gpubench_run_seconds_per_load")
                            .Help("Median time of one dependent load in the latest run of a "
                                  "latency family (pointer chase at the `elements` footprint, "
                                  "in bytes)")
                            .Register(*registry_)),
      theoretical_occupancy_(BuildGauge()
                                 .Name("gpubench_run_theoretical_occupancy_ratio")
                                 .Help("Theoretical occupancy of the latest run's launch, active "
                                       "warps / max warps per SM")
                                 .Register(*registry_)),
      achieved_occupancy_(BuildGauge()
                              .Name("gpubench_run_achieved_occupancy_ratio")
                              .Help("Achieved occupancy from hardware counters (CUPTI), latest "
                                    "profiled run")
                              .Register(*registry_)),
      registers_(BuildGauge()
                     .Name("gpubench_run_registers_per_thread")
                     .Help("Registers per thread of the kernel as compiled")
                     .Register(*registry_)),
      verified_(BuildGauge()
                    .Name("gpubench_run_verification_passed")
                    .Help("1 if the latest run's output matched the host reference, 0 if not")
                    .Register(*registry_)),
      last_result_timestamp_(BuildGauge()
                                 .Name("gpubench_run_last_timestamp_seconds")
                                 .Help("Unix time of the latest finished run of this series")
                                 .Register(*registry_)),
      runs_(BuildCounter()
                .Name("gpubench_runs_total")
                .Help("Finished runs by kernel, device and outcome (ok, verification_failed or the "
                      "error code)")
                .Register(*registry_)),
      skipped_(BuildCounter()
                   .Name("gpubench_runs_skipped_total")
                   .Help("Runs not started, by reason: gpu_busy = another process used the GPU "
                         "(--gpu_sharing=shared); source = schedule or rpc")
                   .Register(*registry_)),
      run_duration_(BuildHistogram()
                        .Name("gpubench_run_duration_seconds")
                        .Help("Wall time of a run on its device: data, warm-up, samples, "
                              "verification (queue wait excluded)")
                        .Register(*registry_)),
      queue_depth_(BuildGauge()
                       .Name("gpubench_queue_depth")
                       .Help("Runs queued or running on a device")
                       .Register(*registry_)),
      rpcs_(BuildCounter()
                .Name("gpubench_grpc_requests_total")
                .Help("Finished gRPC requests by method and status code")
                .Register(*registry_)),
      rpc_duration_(BuildHistogram()
                        .Name("gpubench_grpc_request_duration_seconds")
                        .Help("gRPC request latency by method, queueing included")
                        .Register(*registry_)),
      grpc_started_(BuildCounter()
                        .Name("grpc_server_started_total")
                        .Help("RPCs started on the server (go-grpc-prometheus names)")
                        .Register(*registry_)),
      grpc_handled_(BuildCounter()
                        .Name("grpc_server_handled_total")
                        .Help("RPCs completed on the server, by status code (go-grpc-prometheus "
                              "names)")
                        .Register(*registry_)),
      grpc_handling_(BuildHistogram()
                         .Name("grpc_server_handling_seconds")
                         .Help("Latency of RPCs handled by the server, queueing included "
                               "(go-grpc-prometheus names)")
                         .Register(*registry_)),
      device_info_(BuildGauge()
                       .Name("gpubench_device_info")
                       .Help("Device facts as labels; value 1")
                       .Register(*registry_)),
      device_up_(BuildGauge()
                     .Name("gpubench_device_up")
                     .Help("1 while the device takes runs (its worker process ready or "
                           "restarting), 0 once it is marked unhealthy after repeated faults")
                     .Register(*registry_)),
      worker_restarts_(BuildCounter()
                           .Name("gpubench_worker_restarts_total")
                           .Help("Worker processes ended by a fault, by kind: signal, exit, "
                                 "device_lost, hang, stall, heartbeat, memory, start, "
                                 "user_kernel; and by worker: catalog (the device's health) or "
                                 "user (the user-kernel worker)")
                           .Register(*registry_)),
      user_worker_running_(BuildGauge()
                               .Name("gpubench_user_kernel_worker_running")
                               .Help("1 while the device's user-kernel worker process runs "
                                     "(holding a context and GPU memory), 0 while it is idle")
                               .Register(*registry_)),
      build_info_(BuildGauge()
                      .Name("gpubench_build_info")
                      .Help("Build facts as labels; value 1")
                      .Register(*registry_)),
      gpu_health_(BuildGauge()
                      .Name("gpubench_gpu_health")
                      .Help("1 on the GPU's current health verdict (label verdict: PASS, "
                            "DEGRADED, FAIL, UNKNOWN), 0 on the others (docs/health.md)")
                      .Register(*registry_)),
      health_value_(BuildGauge()
                        .Name("gpubench_health_value")
                        .Help("Latest scheduled health-plan figure per GPU and measurement, in "
                              "its family's metric (label metric)")
                        .Register(*registry_)),
      health_change_points_(BuildGauge()
                                .Name("gpubench_health_change_points")
                                .Help("Change points declared (confirmed) on the GPU's series of "
                                      "this measurement, kept across restarts")
                                .Register(*registry_)),
      health_last_change_(BuildGauge()
                              .Name("gpubench_health_last_change_ratio")
                              .Help("The last declared change of the series: new level / old "
                                    "level - 1 (0: none)")
                              .Register(*registry_)),
      evicted_(BuildCounter()
                   .Name("gpubench_metrics_series_evicted_total")
                   .Help("Per-result label sets dropped by the LRU cap (--metrics_max_series)")
                   .Register(*registry_)
                   .Add({})) {}

void Metrics::SetDeviceUp(int device, bool up) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> labels = device_labels_[device];
  labels["device"] = absl::StrCat(device);
  device_up_.Add(labels).Set(up ? 1 : 0);
}

void Metrics::CountWorkerFault(int device, const std::string& fault, const std::string& worker) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> labels = device_labels_[device];
  labels["device"] = absl::StrCat(device);
  labels["fault"] = fault;
  labels["worker"] = worker;
  worker_restarts_.Add(labels).Increment();
}

void Metrics::SetUserKernelWorkerRunning(int device, bool running) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> labels = device_labels_[device];
  labels["device"] = absl::StrCat(device);
  user_worker_running_.Add(labels).Set(running ? 1 : 0);
}

void Metrics::SetInfo(const std::vector<DeviceInfo>& devices, const std::string& backend) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const DeviceInfo& d : devices) {
    // gpu_uuid/gpu_model (ours, kept for existing queries) and dcgm-exporter's UUID, gpu (NVML
    // index), pci_bus_id, modelName and Hostname, so `* on(UUID)` joins with DCGM series as-is.
    device_labels_[d.index] = {{"device", absl::StrCat(d.index)},
                               {"gpu_uuid", d.uuid},
                               {"gpu_model", d.name},
                               {"UUID", d.uuid},
                               {"gpu", d.nvml_index >= 0 ? absl::StrCat(d.nvml_index) : ""},
                               {"pci_bus_id", d.pci_bus_id},
                               {"modelName", d.name},
                               {"Hostname", options_.node_name}};
    std::map<std::string, std::string> info = device_labels_[d.index];
    info.insert({{"backend", d.backend},
                 {"compute_capability",
                  absl::StrCat(d.compute_capability_major, ".", d.compute_capability_minor)},
                 {"driver", d.driver_version},
                 {"kernel_driver", d.kernel_driver_version}});
    device_info_.Add(info).Set(1);
    queue_depth_.Add({{"device", absl::StrCat(d.index)}}).Set(0);
  }
  build_info_
      .Add({{"version", kGpubenchVersion},
            {"revision", kGpubenchGitRevision},
            {"backend", backend},
#if GPUBENCH_HAVE_CUDA
            {"cuda_compiled", "true"}
#else
            {"cuda_compiled", "false"}
#endif
           })
      .Set(1);
}

Metrics::ResultGauges& Metrics::GaugesFor(const std::map<std::string, std::string>& labels) {
  auto it = series_.find(labels);
  if (it != series_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return it->second.first;
  }
  while (static_cast<int>(series_.size()) >= options_.max_result_series && !lru_.empty()) {
    auto victim = series_.find(lru_.back());
    RemoveGauges(victim->second.first);
    series_.erase(victim);
    lru_.pop_back();
    evicted_.Increment();
  }
  lru_.push_front(labels);
  ResultGauges g{.median_seconds = &median_seconds_.Add(labels),
                 .verified = &verified_.Add(labels),
                 .timestamp = &last_result_timestamp_.Add(labels)};
  return series_.emplace(labels, std::make_pair(g, lru_.begin())).first->second.first;
}

void Metrics::RemoveGauges(const ResultGauges& g) {
  median_seconds_.Remove(g.median_seconds);
  if (g.bandwidth) bandwidth_.Remove(g.bandwidth);
  if (g.peak_ratio) peak_ratio_.Remove(g.peak_ratio);
  if (g.flops) flops_.Remove(g.flops);
  if (g.peak_flops_ratio) peak_flops_ratio_.Remove(g.peak_flops_ratio);
  if (g.seconds_per_load) seconds_per_load_.Remove(g.seconds_per_load);
  if (g.theoretical_occupancy) theoretical_occupancy_.Remove(g.theoretical_occupancy);
  if (g.achieved_occupancy) achieved_occupancy_.Remove(g.achieved_occupancy);
  if (g.registers) registers_.Remove(g.registers);
  verified_.Remove(g.verified);
  last_result_timestamp_.Remove(g.timestamp);
}

void Metrics::OnRunFinished(const RunSpec& spec, const absl::StatusOr<RunResult>& result,
                            absl::Duration wall_time) {
  const std::string kernel(spec.kernel->name);
  const std::string device = absl::StrCat(spec.device_index);
  std::string outcome = result.ok() ? "ok" : StatusCodeName(result.status().code());
  if (result.ok() && OutcomeOf(*result) == RunOutcome::kVerificationFailed) {
    outcome = "verification_failed";
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> labels = device_labels_[spec.device_index];
  labels["device"] = device;
  if (!result.ok() && IsGpuBusy(result.status())) {
    std::map<std::string, std::string> skip = labels;
    skip.insert({{"reason", "gpu_busy"}, {"source", spec.scheduled ? "schedule" : "rpc"}});
    skipped_.Add(skip).Increment();
    return;
  }
  runs_.Add({{"kernel", kernel}, {"device", device}, {"outcome", outcome}}).Increment();
  run_duration_.Add({{"device", device}}, kRunBuckets).Observe(absl::ToDoubleSeconds(wall_time));
  if (!result.ok()) return;
  labels.insert({{"family", std::string(spec.kernel->family->name)},
                 {"kernel", kernel},
                 {"dtype", DTypeName(spec.kernel->dtype)},
                 {"elements", absl::StrCat(spec.elements)},
                 {"cache_mode", CacheModeName(spec.cache_mode)}});
  ResultGauges& g = GaugesFor(labels);
  g.median_seconds->Set(result->stats.median_seconds);
  // The family's primary metric, by its unit; a gauge appears with the first value it gets.
  auto set = [&](prometheus::Gauge*& gauge, prometheus::Family<prometheus::Gauge>& family,
                 double value) {
    if (!gauge) gauge = &family.Add(labels);
    gauge->Set(value);
  };
  const bool flop = result->metric == Metric::kOperationsPerSecond &&
                    result->operation_unit == "FLOP";
  if (result->bandwidth_bytes_per_second > 0) {
    set(g.bandwidth, bandwidth_, result->bandwidth_bytes_per_second);
  }
  if (flop) set(g.flops, flops_, result->operations_per_second);
  if (result->metric == Metric::kSecondsPerOperation && result->operation_unit == "load") {
    set(g.seconds_per_load, seconds_per_load_, result->seconds_per_operation);
  }
  if (result->percent_of_peak) {
    if (flop) {
      set(g.peak_flops_ratio, peak_flops_ratio_, *result->percent_of_peak / 100.0);
    } else if (result->metric == Metric::kBytesPerSecond) {
      set(g.peak_ratio, peak_ratio_, *result->percent_of_peak / 100.0);
    }
  }
  if (result->occupancy) {
    if (!g.theoretical_occupancy) g.theoretical_occupancy = &theoretical_occupancy_.Add(labels);
    g.theoretical_occupancy->Set(result->occupancy->theoretical_occupancy);
    if (!g.registers) g.registers = &registers_.Add(labels);
    g.registers->Set(result->resources.registers_per_thread);
  }
  if (result->counters.achieved_occupancy) {
    if (!g.achieved_occupancy) g.achieved_occupancy = &achieved_occupancy_.Add(labels);
    g.achieved_occupancy->Set(*result->counters.achieved_occupancy);
  }
  g.verified->Set(OutcomeOf(*result) != RunOutcome::kVerificationFailed ? 1 : 0);
  g.timestamp->Set(absl::ToDoubleSeconds(result->finished_at - absl::UnixEpoch()));
}

void Metrics::OnQueueDepth(int device_index, int depth) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_depth_.Add({{"device", absl::StrCat(device_index)}}).Set(depth);
}

namespace {

// "/gpubench.v1.Benchmark/RunSweep" -> service, method and the call's type, as
// go-grpc-prometheus labels them.
std::map<std::string, std::string> GrpcLabels(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (path.empty() || path[0] != '/' || slash == 0 || slash == std::string::npos) {
    return {{"grpc_service", "other"}, {"grpc_method", "other"}, {"grpc_type", "unknown"}};
  }
  const std::string service = path.substr(1, slash - 1);
  const std::string method = path.substr(slash + 1);
  std::string type = "unary";
  if (method == "RunSweep" || method == "Watch") type = "server_stream";
  if (method == "ServerReflectionInfo") type = "bidi_stream";
  return {{"grpc_service", service}, {"grpc_method", method}, {"grpc_type", type}};
}

}  // namespace

void Metrics::OnRpcStarted(const std::string& method) {
  std::lock_guard<std::mutex> lock(mu_);
  grpc_started_.Add(GrpcLabels(method)).Increment();
}

void Metrics::OnRpc(const std::string& method, absl::StatusCode code, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  rpcs_.Add({{"method", method}, {"code", StatusCodeName(code)}}).Increment();
  rpc_duration_.Add({{"method", method}}, kRpcBuckets).Observe(seconds);
  std::map<std::string, std::string> labels = GrpcLabels(method);
  grpc_handling_.Add(labels, kRpcBuckets).Observe(seconds);
  labels["grpc_code"] = StatusCodeName(code);
  grpc_handled_.Add(labels).Increment();
}

int Metrics::result_series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(series_.size());
}

void Metrics::SetHealth(const std::vector<health::GpuHealth>& gpus,
                        const std::vector<health::SeriesSummary>& series) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const health::GpuHealth& g : gpus) {
    std::map<std::string, std::string> labels = device_labels_[g.device_index];
    labels["device"] = absl::StrCat(g.device_index);
    for (health::Verdict v : {health::Verdict::kPass, health::Verdict::kDegraded,
                              health::Verdict::kFail, health::Verdict::kUnknown}) {
      labels["verdict"] = health::VerdictName(v);
      gpu_health_.Add(labels).Set(g.verdict == v ? 1 : 0);
    }
  }
  // Series are bounded by the plan (its items x the devices), not by callers.
  for (const health::SeriesSummary& s : series) {
    std::map<std::string, std::string> labels = device_labels_[s.device_index];
    labels["device"] = absl::StrCat(s.device_index);
    labels["kernel"] = s.key.kernel;
    labels["elements"] = absl::StrCat(s.key.elements);
    labels["cache_mode"] = CacheModeName(s.key.cache_mode);
    health_change_points_.Add(labels).Set(s.change_points);
    health_last_change_.Add(labels).Set(s.last_change);
    labels["metric"] = s.metric;
    health_value_.Add(labels).Set(s.latest);
  }
}

}  // namespace gpubench
