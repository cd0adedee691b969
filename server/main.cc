// gpubench_server: the long-running benchmark service of a GPU node.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "common/command_line.h"
#include "common/echo.h"
#include "common/measurement_options.h"
#include "kernels/test_faults.h"
#include "server/engine/engine.h"
#include "server/heap_trimmer.h"
#include "server/metrics/metrics.h"
#include "server/service/benchmark_service.h"
#include "server/startup.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address host:port. The default accepts local clients only; use "
          "0.0.0.0:50051 to serve the network. Port 0 picks a free port (see --port_file).");
ABSL_FLAG(std::string, port_file, "", "If set, write the bound gRPC port to this file.");
ABSL_FLAG(std::string, backend, "auto",
          "auto | cpu | cuda. auto picks cuda when a CUDA device is present, cpu otherwise.");
ABSL_FLAG(int, cpu_devices, 1, "Number of simulated devices of the cpu backend.");
ABSL_FLAG(int, cpu_threads, 0, "Host threads per cpu device (0 = all hardware threads).");
ABSL_FLAG(std::string, cpu_device_name, "",
          "Model name the cpu backend's devices report (simulates a GPU model in a test fleet); "
          "empty: the host CPU's model.");
ABSL_FLAG(std::string, cpu_uuid_seed, "",
          "Seed of the cpu backend's device UUIDs (CPU-<name-based UUID of seed/index>, stable "
          "across restarts); empty: --node_name.");
ABSL_FLAG(double, cpu_min_launch_seconds, 0,
          "Every launch on the cpu backend takes at least this long (sleeping the rest): a "
          "simulated device model of a fixed speed, or a throttled one, in a test fleet.");
ABSL_FLAG(std::string, node_name, "",
          "Name of this node, reported on every device and result (fleet reports key rows by GPU "
          "UUID and node). Empty: $NODE_NAME (the Kubernetes downward API), else the host name.");
ABSL_FLAG(std::string, worker_mode, "process",
          "process: each device is measured in its own gpubench_worker process, so a device "
          "fault or a hung kernel ends that worker, never the server; in_process: every device "
          "in this process (for A/B runs and debugging; a device fault then stops the server).");
ABSL_FLAG(std::string, worker_binary, "",
          "The gpubench_worker executable; empty: the one beside gpubench_server.");
ABSL_FLAG(double, worker_stall_seconds, 60,
          "A run whose samples and phases stop advancing this long is hung: its worker is "
          "killed and restarted.");
ABSL_FLAG(double, worker_deadline_grace_seconds, 5,
          "A run still measuring this long after its deadline is hung: its worker is killed.");
ABSL_FLAG(double, worker_heartbeat_timeout_seconds, 10,
          "A worker silent this long (it beats every 0.2 s) is killed and restarted.");
ABSL_FLAG(int, worker_max_faults, 5,
          "Faults (deaths, kills) of one device's worker within --worker_fault_window_seconds "
          "that mark the device unhealthy: its runs then answer UNAVAILABLE at once.");
ABSL_FLAG(double, worker_fault_window_seconds, 600, "See --worker_max_faults.");
ABSL_FLAG(double, worker_unhealthy_retry_seconds, 600,
          "An unhealthy device's worker is started again after this long (0: never).");
ABSL_FLAG(int64_t, worker_max_memory_bytes, 0,
          "A worker whose resident host memory exceeds this is killed (0: no limit but the "
          "kernel's OOM killer, which takes a worker before the server: oom_score_adj 1000).");
ABSL_FLAG(int64_t, device_malloc_heap_bytes, 8 << 20,
          "Device-side malloc heap of each worker's CUDA context.");
ABSL_FLAG(int64_t, device_printf_fifo_bytes, 1 << 20,
          "Device-side printf buffer of each worker's CUDA context.");
ABSL_FLAG(bool, test_fault_kernels, false,
          "TEST ONLY: add the test_fault_* variants, which crash, hang or exhaust their worker "
          "on purpose, to the catalog.");
ABSL_FLAG(bool, test_flip_output_hash, false,
          "TEST ONLY: flip the low bit of every result's output hash, as a GPU with silently "
          "corrupted output looks to the fleet's SDC check.");
ABSL_FLAG(int64_t, max_elements, int64_t{1} << 31, "Largest element count a request may ask.");
ABSL_FLAG(int, queue_capacity, 64, "Pending runs per device before RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, max_sweep_items, 1000, "Most kernels x sizes x block sizes in one RunSweep.");
// The measurement defaults: one flag per row of the option table with a server_flag
// (common/measurement_options.h gives the default, the help and the range; ConfigFromFlags reads
// them by the table's names). -1: the backend's default, where the table has one for the CPU.
using gpubench::OptionId;
using gpubench::OptionOf;
ABSL_FLAG(int, default_min_samples, static_cast<int>(OptionOf(OptionId::kMinSamples).default_value),
          OptionOf(OptionId::kMinSamples).help);
ABSL_FLAG(double, default_min_time_seconds, OptionOf(OptionId::kMinTimeSeconds).default_value,
          OptionOf(OptionId::kMinTimeSeconds).help);
ABSL_FLAG(double, default_max_noise, -1, OptionOf(OptionId::kMaxNoise).help);
ABSL_FLAG(double, default_timeout_seconds, -1, OptionOf(OptionId::kTimeoutSeconds).help);
ABSL_FLAG(int64_t, default_placement_pad_bytes, 0, OptionOf(OptionId::kPlacementPadBytes).help);
ABSL_FLAG(std::string, default_l2_flush, "clean", OptionOf(OptionId::kL2Flush).help);
ABSL_FLAG(std::string, default_stream, "nonblocking", OptionOf(OptionId::kStream).help);
ABSL_FLAG(double, max_timeout_seconds, 120, "Largest sampling budget a request may ask.");
ABSL_FLAG(double, max_warmup_seconds, 10,
          "Wall-time bound of one run's warm-up, whatever its launch count.");
ABSL_FLAG(std::string, cgroup_root, "auto",
          "Where the memory cgroup (v2 or v1) is read: runs must fit in the smaller of "
          "MemAvailable and the limits of the process's cgroup and every ancestor. 'auto': "
          "/sys/fs/cgroup where it holds a memory cgroup, else MemAvailable only (logged); a "
          "path without a readable memory cgroup refuses to start; 'none' checks MemAvailable "
          "only.");
ABSL_FLAG(double, shutdown_grace_seconds, 30,
          "On SIGTERM/SIGINT: time given to queued and running work before it is cancelled.");
ABSL_FLAG(int, max_message_bytes, 4 << 20, "Largest gRPC message accepted.");
ABSL_FLAG(int, max_concurrent_streams, 100,
          "Most concurrent calls (HTTP/2 streams) per client connection.");
ABSL_FLAG(int64_t, max_memory_bytes, int64_t{1} << 30,
          "gRPC resource quota for connections and calls (gRPC 1.51 does not refuse new streams "
          "past it: it does not bound an HTTP/2 rapid-reset flood, see README).");
ABSL_FLAG(double, heap_trim_interval_seconds, 1,
          "Every this often, freed heap memory the allocator still holds (more than 32 MiB) is "
          "given back to the system, e.g. after a flood of reset HTTP/2 streams; 0 disables.");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics listen address host:port (port 0 picks one; empty disables).");
ABSL_FLAG(std::string, metrics_port_file, "", "If set, write the bound metrics port here.");
// 300 idle connections reopened at once held scrapes 7 s at 64 threads and 2 s; 0.5 s at 256
// and 1 s (docs/metrics.md, bench/results/loadtest-cpu.md).
ABSL_FLAG(int, metrics_threads, 256,
          "Threads serving /metrics: each idle or slow connection holds one for up to "
          "--metrics_request_timeout_ms.");
ABSL_FLAG(int, metrics_request_timeout_ms, 1000,
          "A /metrics connection that has not sent its request within this time is closed.");
ABSL_FLAG(std::string, metrics_token_file, "",
          "File of tokens (as --token_file). When set, /metrics needs HTTP basic auth with one of "
          "them as the password (any user name); otherwise /metrics is open to whoever reaches "
          "--metrics_listen.");
ABSL_FLAG(int, metrics_max_series, 512,
          "Most label sets of the per-result gauges (LRU; evictions are counted).");
ABSL_FLAG(std::string, tuned_defaults_file, "",
          "JSON file that keeps Autotune's applied configurations across restarts (keyed by GPU "
          "UUID; read at start, rewritten after every apply). Empty: in memory only.");
ABSL_FLAG(std::string, schedule_plan, "",
          "JSON file with a RunSweepRequest (the RunSweep body) to run every "
          "--schedule_interval_seconds through the device queues.");
ABSL_FLAG(double, schedule_interval_seconds, 300, "Interval between scheduled plan passes.");
ABSL_FLAG(std::string, state_dir, "",
          "Directory for the health history of the scheduled plan's results (health_state.json), "
          "kept across restarts; created if missing. Empty: history in memory only.");
ABSL_FLAG(std::string, health_expectations, "",
          "JSON file of per-GPU-model expectations for the health verdicts (docs/health.md); its "
          "entries replace or add to the shipped table.");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate chain; with --tls_key enables TLS.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: clients must present a certificate it signed (mutual TLS).");
ABSL_FLAG(std::string, token_file, "",
          "File of bearer tokens (one per line). When set, gpubench.v1.Benchmark calls need "
          "'authorization: Bearer <token>'; health and reflection stay open.");
ABSL_FLAG(bool, allow_user_kernels, false,
          "Run users' kernels (RunBenchmarkRequest.user_kernel: CUDA C++ compiled with NVRTC in the "
          "device worker, PTX or cubin; docs/user-kernels.md). Off by default; on a non-loopback "
          "--listen address the server refuses to start with it unless --token_file or mutual TLS "
          "authenticates callers.");
ABSL_FLAG(int64_t, max_user_kernel_bytes, int64_t{1} << 20,
          "Largest user kernel source, PTX or cubin accepted, in bytes (at most 16 MiB).");
ABSL_FLAG(double, user_kernel_compile_seconds, 30,
          "A user kernel's compile that runs longer ends its worker (the run fails UNAVAILABLE; "
          "the device's health is not charged).");
// 5 minutes: a user iterating on a kernel keeps its compile cache warm between submissions; an
// idle context's GPU memory is given back a few minutes after the last one.
ABSL_FLAG(double, user_kernel_worker_idle_seconds, 300,
          "Each device's user-kernel worker (its own process and CUDA context, started by the "
          "first user-kernel run; docs/workers.md) is stopped after this long without a run, "
          "giving back its GPU memory and dropping its compile cache.");
ABSL_FLAG(int, user_kernel_runs_per_client, 4,
          "Most user-kernel runs one client may have queued or running at once (each compiles "
          "first, so this bounds its concurrent compiles); more answer RESOURCE_EXHAUSTED. A "
          "client is its bearer token, else its client certificate, else its address. 0: no "
          "limit.");
ABSL_FLAG(int, user_kernel_submissions_per_minute, 60,
          "Most user kernels one client may submit in any minute; more answer RESOURCE_EXHAUSTED. "
          "0: no limit.");
ABSL_FLAG(bool, allow_profiling, true,
          "Allow requests to add a hardware-counter pass (CUPTI range profiler) for achieved "
          "occupancy. Counters need root or NVreg_RestrictProfilingToAdminUsers=0.");

ABSL_FLAG(std::string, gpu_sharing, "exclusive",
          "exclusive | shared. shared: the node's GPUs belong to tenants; before every run NVML "
          "is asked whether another process uses the GPU, and if one does the run is refused "
          "(FAILED_PRECONDITION unless the request sets force; scheduled runs are skipped and "
          "counted in gpubench_runs_skipped_total{reason=\"gpu_busy\"}). Needs NVML and, in a "
          "container, the host's PID namespace (hostPID).");
ABSL_FLAG(std::string, nvml_library, "libnvidia-ml.so.1",
          "NVML library to dlopen (device identity, clock-event reasons, the busy check).");

namespace gpubench {
namespace {

// --node_name, else $NODE_NAME, else the host name.
std::string NodeName() {
  if (std::string flag = absl::GetFlag(FLAGS_node_name); !flag.empty()) return flag;
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && env[0] != '\0') return env;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') return host;
  return "unknown";
}

ServerConfig ConfigFromFlags() {
  ServerConfig c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.port_file = absl::GetFlag(FLAGS_port_file);
  c.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  c.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  c.max_memory_bytes = absl::GetFlag(FLAGS_max_memory_bytes);
  c.heap_trim_interval_seconds = absl::GetFlag(FLAGS_heap_trim_interval_seconds);
  c.backend = absl::GetFlag(FLAGS_backend);
  c.node_name = NodeName();
  c.cpu.devices = absl::GetFlag(FLAGS_cpu_devices);
  c.cpu.threads_per_device = absl::GetFlag(FLAGS_cpu_threads);
  c.cpu.device_name = absl::GetFlag(FLAGS_cpu_device_name);
  c.cpu.uuid_seed = absl::GetFlag(FLAGS_cpu_uuid_seed);
  if (c.cpu.uuid_seed.empty()) c.cpu.uuid_seed = c.node_name;
  c.cpu.min_launch_seconds = absl::GetFlag(FLAGS_cpu_min_launch_seconds);
  c.gpu_sharing = absl::GetFlag(FLAGS_gpu_sharing);
  c.workers.mode = absl::GetFlag(FLAGS_worker_mode);
  c.workers.binary = absl::GetFlag(FLAGS_worker_binary);
  c.workers.stall_seconds = absl::GetFlag(FLAGS_worker_stall_seconds);
  c.workers.deadline_grace_seconds = absl::GetFlag(FLAGS_worker_deadline_grace_seconds);
  c.workers.heartbeat_timeout_seconds = absl::GetFlag(FLAGS_worker_heartbeat_timeout_seconds);
  c.workers.max_faults = absl::GetFlag(FLAGS_worker_max_faults);
  c.workers.fault_window_seconds = absl::GetFlag(FLAGS_worker_fault_window_seconds);
  c.workers.unhealthy_retry_seconds = absl::GetFlag(FLAGS_worker_unhealthy_retry_seconds);
  c.workers.max_memory_bytes = absl::GetFlag(FLAGS_worker_max_memory_bytes);
  c.workers.device_malloc_heap_bytes = absl::GetFlag(FLAGS_device_malloc_heap_bytes);
  c.workers.device_printf_fifo_bytes = absl::GetFlag(FLAGS_device_printf_fifo_bytes);
  c.workers.test_fault_kernels = absl::GetFlag(FLAGS_test_fault_kernels);
  c.nvml_library = absl::GetFlag(FLAGS_nvml_library);
  c.max_elements = absl::GetFlag(FLAGS_max_elements);
  c.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  c.max_sweep_items = absl::GetFlag(FLAGS_max_sweep_items);
  for (const gpubench::OptionSpec& o : gpubench::kMeasurementOptions) {
    if (o.server_flag.empty()) continue;
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(o.server_flag);
    if (flag == nullptr) {  // a table row whose flag main.cc does not define: a build mistake
      spdlog::critical("the option table names --{}, which this server does not define",
                       std::string(o.server_flag));
      std::abort();
    }
    c.measurement_defaults[std::string(o.name)] = flag->CurrentValue();
  }
  c.max_timeout_seconds = absl::GetFlag(FLAGS_max_timeout_seconds);
  c.max_warmup_seconds = absl::GetFlag(FLAGS_max_warmup_seconds);
  c.cgroup_root = ResolveCgroupRoot(absl::GetFlag(FLAGS_cgroup_root));
  if (absl::GetFlag(FLAGS_cgroup_root) == kAutoCgroupRoot && c.cgroup_root == kNoCgroupRoot) {
    spdlog::warn("no readable memory cgroup at /sys/fs/cgroup: runs are admitted against "
                 "MemAvailable only (--cgroup_root=PATH names another mount point)");
  }
  c.test_flip_output_hash = absl::GetFlag(FLAGS_test_flip_output_hash);
  c.allow_profiling = absl::GetFlag(FLAGS_allow_profiling);
  c.shutdown_grace_seconds = absl::GetFlag(FLAGS_shutdown_grace_seconds);
  c.metrics.listen = absl::GetFlag(FLAGS_metrics_listen);
  c.metrics.port_file = absl::GetFlag(FLAGS_metrics_port_file);
  c.metrics.token_file = absl::GetFlag(FLAGS_metrics_token_file);
  c.metrics.threads = absl::GetFlag(FLAGS_metrics_threads);
  c.metrics.request_timeout_ms = absl::GetFlag(FLAGS_metrics_request_timeout_ms);
  c.metrics.max_series = absl::GetFlag(FLAGS_metrics_max_series);
  c.tuned_defaults_file = absl::GetFlag(FLAGS_tuned_defaults_file);
  c.schedule_plan = absl::GetFlag(FLAGS_schedule_plan);
  c.schedule_interval_seconds = absl::GetFlag(FLAGS_schedule_interval_seconds);
  c.state_dir = absl::GetFlag(FLAGS_state_dir);
  c.health_expectations = absl::GetFlag(FLAGS_health_expectations);
  c.tls.cert = absl::GetFlag(FLAGS_tls_cert);
  c.tls.key = absl::GetFlag(FLAGS_tls_key);
  c.tls.client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  c.token_file = absl::GetFlag(FLAGS_token_file);
  c.user_kernels.allow = absl::GetFlag(FLAGS_allow_user_kernels);
  c.user_kernels.max_bytes = absl::GetFlag(FLAGS_max_user_kernel_bytes);
  c.user_kernels.compile_seconds = absl::GetFlag(FLAGS_user_kernel_compile_seconds);
  c.user_kernels.worker_idle_seconds = absl::GetFlag(FLAGS_user_kernel_worker_idle_seconds);
  return c;
}

int StartupFailed(const absl::Status& status) {
  spdlog::critical("{}", std::string(status.message()));
  return kExitBadStartup;
}

// The server's life as a list of steps (server/startup.h); objects are declared in the order
// they must outlive each other.
int Main() {
  const sigset_t stop_signals = BlockStopSignals();  // before any thread exists
  const ServerConfig config = ConfigFromFlags();
  if (absl::Status valid = ValidateConfig(config); !valid.ok()) {
    spdlog::critical("invalid flags: {}", std::string(valid.message()));
    return kExitBadStartup;
  }
  if (absl::Status paths = CheckConfigPaths(config); !paths.ok()) return StartupFailed(paths);

  for (const char* old : {"GPUBENCH_L2_FLUSH", "GPUBENCH_STREAM"}) {
    if (std::getenv(old) != nullptr) {
      spdlog::warn("{} is set but ignored: no environment variable changes a measurement; use "
                   "--default_l2_flush / --default_stream or the request's measurement options",
                   old);
    }
  }
  const HeapTrimmer heap_trimmer(absl::Seconds(config.heap_trim_interval_seconds),
                                 /*slack_bytes=*/int64_t{32} << 20);

  if (config.workers.test_fault_kernels) {
    if (absl::Status added = RegisterTestFaultVariants(); !added.ok()) return StartupFailed(added);
    spdlog::warn("--test_fault_kernels: the catalog has variants that crash their worker");
  }
  WorkerEventSink worker_events;
  absl::StatusOr<Devices> devices =
      OpenDevices(config, [&worker_events](const WorkerEvent& e) { worker_events.OnEvent(e); });
  if (!devices.ok()) return StartupFailed(devices.status());
  // Declared before the engine: its workers use the monitor until they stop.
  // Each description is a query to a worker: once, for the monitor and the health names.
  const std::vector<std::string> uuids = DeviceUuids(*devices->backend);
  NvmlMonitor monitor(devices->nvml, uuids, devices->sharing);
  if (WorkerPool* pool = devices->workers.get()) {
    monitor.SetWorkerPids([pool] { return pool->Pids(); });
  }

  const ServerLimits limits = LimitsFor(config, *devices->backend);
  std::atomic<int> exit_code{kExitStopped};  // kExitDeviceLost after a device fault
  Engine engine(std::move(devices->backend), limits);
  engine.SetMonitor(&monitor);
  if (absl::Status fits = CheckDefaultsFit(engine); !fits.ok()) return StartupFailed(fits);
  if (devices->workers) {
    engine.SetRunner(devices->workers.get());
  } else {
    StopOnDeviceLoss(&engine, &exit_code);
  }

  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry, {.max_result_series = config.metrics.max_series,
                             .node_name = config.node_name});
  engine.AddObserver(&metrics);
  PublishDeviceInfo(engine.backend(), &metrics);
  worker_events.AttachMetrics(&metrics, engine.backend().device_count(),
                              devices->workers != nullptr && config.user_kernels.allow);
  // The workers stop before the metrics and the health service they report to go away.
  const absl::Cleanup stop_workers = [&devices] {
    if (devices->workers) devices->workers->Stop();
  };
  absl::StatusOr<std::unique_ptr<prometheus::Exposer>> exposer =
      ServeMetrics(config.metrics, registry);
  if (!exposer.ok()) return StartupFailed(exposer.status());

  // The tuned defaults before the scheduler: its runs use them too.
  absl::StatusOr<std::unique_ptr<TunedDefaultsStore>> tuned_store =
      OpenTunedDefaults(config, &engine);
  if (!tuned_store.ok()) return StartupFailed(tuned_store.status());
  absl::StatusOr<std::unique_ptr<health::HealthMonitor>> health =
      OpenHealth(config, engine.backend());
  if (!health.ok()) return StartupFailed(health.status());
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = CreateScheduler(config, &engine);
  if (!scheduler.ok()) return StartupFailed(scheduler.status());
  if (health::HealthMonitor* monitor = health->get()) {
    metrics.SetHealth(monitor->Health(), monitor->Series());  // the kept history, at once
    (*scheduler)->SetHealth(monitor, [monitor, &metrics] {
      metrics.SetHealth(monitor->Health(), monitor->Series());
    });
  }
  absl::StatusOr<std::optional<TokenAuthenticator>> auth = LoadTokens(config);
  if (!auth.ok()) return StartupFailed(auth.status());
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFor(config.tls);
  if (!credentials.ok()) return StartupFailed(credentials.status());
  ServiceOptions service_options;
  service_options.max_sweep_items = config.max_sweep_items;
  service_options.user_kernel_clients = {
      .runs_in_flight = absl::GetFlag(FLAGS_user_kernel_runs_per_client),
      .submissions_per_minute = absl::GetFlag(FLAGS_user_kernel_submissions_per_minute)};
  if (service_options.user_kernel_clients.runs_in_flight < 0 ||
      service_options.user_kernel_clients.submissions_per_minute < 0) {
    return StartupFailed(absl::InvalidArgumentError(
        "--user_kernel_runs_per_client and --user_kernel_submissions_per_minute must be >= 0"));
  }
  service_options.server_info = ServerInfoFor(config);
  if (auth->has_value()) service_options.auth = &**auth;
  service_options.health = health->get();
  BenchmarkService service(&engine, service_options);

  absl::StatusOr<StartedServer> server =
      StartGrpcServer(config, *std::move(credentials), &service, &metrics);
  if (!server.ok()) return StartupFailed(server.status());
  worker_events.AttachHealth(server->server->GetHealthCheckService(), uuids);
  const absl::Cleanup stop_workers_first = [&devices] {  // before the health service goes
    if (devices->workers) devices->workers->Stop();
  };
  spdlog::info("serving gpubench.v1.Benchmark on {} (port {}) backend={}", config.listen,
               server->port, std::string(engine.backend().name()));
  if (*scheduler) {
    (*scheduler)->Start();
    spdlog::info("scheduled plan {} every {} s", config.schedule_plan,
                 config.schedule_interval_seconds);
  }

  const int signal_number = WaitForStopSignal(stop_signals);
  spdlog::info("signal {} received: not serving, draining for up to {} s", signal_number,
               config.shutdown_grace_seconds);
  return DrainAndStop(config, exit_code.load(), server->server.get(), scheduler->get(), &engine);
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  gpubench::ProgramSpec spec;
  spec.program = "gpubench_server";
  spec.description =
      "gpubench_server: runs registered kernel variants on this node's devices over gRPC.\n"
      "  gpubench_server --listen=0.0.0.0:50051 --backend=auto";
  const std::vector<std::string> args = gpubench::ParseCommandLineOrExit(argc, argv, spec);
  if (args.size() > 1) {
    std::cerr << "gpubench_server: unexpected argument '" << gpubench::EchoForMessage(args[1])
              << "' (flags are --name=value); see gpubench_server --help\n";
    return gpubench::kExitBadStartup;
  }
  return gpubench::Main();
}
