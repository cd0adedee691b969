// gpubench_server: the long-running benchmark service of a GPU node.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu_backend.h"
#include "kernels/nvml.h"
#include "kernels/nvml_backend.h"
#include "proto/plan_json.h"
#include "server/engine/engine.h"
#include "server/metrics/metrics.h"
#include "common/files.h"
#include "server/service/auth.h"
#include "server/service/benchmark_service.h"
#include "server/service/rpc_metrics.h"
#include "server/service/scheduler.h"
#include "server/startup.h"
#include "common/build_info.h"
#include "common/command_line.h"
#include "common/echo.h"
#include "grpc/health/v1/health.pb.h"
#include <google/protobuf/util/time_util.h>
#include "absl/time/clock.h"
#include "common/tokens.h"
#if GPUBENCH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

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
ABSL_FLAG(int64_t, max_elements, int64_t{1} << 31, "Largest element count a request may ask.");
ABSL_FLAG(int, queue_capacity, 64, "Pending runs per device before RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, max_sweep_items, 1000, "Most kernels x sizes x block sizes in one RunSweep.");
ABSL_FLAG(int, default_min_samples, 10, "Samples at least, unless a request says otherwise.");
ABSL_FLAG(double, default_min_time_seconds, 0.05, "Measured time at least, by default.");
ABSL_FLAG(double, default_max_noise, -1,
          "Relative stddev to stop at, by default (-1: 0.005 on cuda as nvbench, 0.02 on cpu, "
          "where a shared host rarely gets under 1%).");
ABSL_FLAG(double, default_timeout_seconds, -1,
          "Sampling wall-time budget, by default (-1: 15 s on cuda as nvbench, 3 s on cpu).");
ABSL_FLAG(double, max_timeout_seconds, 120, "Largest sampling budget a request may ask.");
ABSL_FLAG(double, max_warmup_seconds, 10,
          "Wall-time bound of one run's warm-up, whatever its launch count.");
ABSL_FLAG(std::string, cgroup_root, "/sys/fs/cgroup",
          "Where the memory cgroup (v2 or v1) is read: runs must fit in the smaller of "
          "MemAvailable and the cgroup's limit.");
ABSL_FLAG(double, shutdown_grace_seconds, 30,
          "On SIGTERM/SIGINT: time given to queued and running work before it is cancelled.");
ABSL_FLAG(int, max_message_bytes, 4 << 20, "Largest gRPC message accepted.");
ABSL_FLAG(int, max_concurrent_streams, 100,
          "Most concurrent calls (HTTP/2 streams) per client connection.");
ABSL_FLAG(int64_t, max_memory_bytes, int64_t{1} << 30,
          "gRPC resource quota: memory gRPC may use for connections and calls; past it new calls "
          "and connections are refused (bounds abuse such as HTTP/2 rapid reset).");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics listen address host:port (port 0 picks one; empty disables).");
ABSL_FLAG(std::string, metrics_port_file, "", "If set, write the bound metrics port here.");
ABSL_FLAG(int, metrics_threads, 64,
          "Threads serving /metrics: each idle or slow connection holds one for up to "
          "--metrics_request_timeout_ms.");
ABSL_FLAG(int, metrics_request_timeout_ms, 2000,
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
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate chain; with --tls_key enables TLS.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: clients must present a certificate it signed (mutual TLS).");
ABSL_FLAG(std::string, token_file, "",
          "File of bearer tokens (one per line). When set, gpubench.v1.Benchmark calls need "
          "'authorization: Bearer <token>'; health and reflection stay open.");
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

std::unique_ptr<Backend> ChooseBackend(const std::string& which, const std::string& node_name) {
  if (which == "cuda" || which == "auto") {
#if GPUBENCH_HAVE_CUDA
    absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeCudaBackend();
    if (cuda.ok()) {
      spdlog::info("backend=cuda devices={}", (*cuda)->device_count());
      return *std::move(cuda);
    }
    if (which == "cuda") {
      spdlog::critical("backend=cuda requested but unavailable: {}", cuda.status().ToString());
      return nullptr;
    }
    spdlog::info("backend=auto: no usable CUDA device ({}); using cpu",
                 std::string(cuda.status().message()));
#else
    if (which == "cuda") {
      spdlog::critical("backend=cuda requested but this build has no CUDA backend");
      return nullptr;
    }
    spdlog::info("backend=auto: built without CUDA; using cpu");
#endif
  } else if (which != "cpu") {
    spdlog::critical("--backend must be auto, cpu or cuda (got '{}')", which);
    return nullptr;
  }
  CpuBackendOptions options;
  options.devices = absl::GetFlag(FLAGS_cpu_devices);
  options.threads_per_device = absl::GetFlag(FLAGS_cpu_threads);
  options.device_name = absl::GetFlag(FLAGS_cpu_device_name);
  options.uuid_seed = absl::GetFlag(FLAGS_cpu_uuid_seed);
  options.min_launch_seconds = absl::GetFlag(FLAGS_cpu_min_launch_seconds);
  if (!(options.min_launch_seconds >= 0 && options.min_launch_seconds <= 10)) {
    spdlog::critical("--cpu_min_launch_seconds must be between 0 and 10 (got {})",
                     options.min_launch_seconds);
    return nullptr;
  }
  if (options.uuid_seed.empty()) options.uuid_seed = node_name;
  auto backend = MakeCpuBackend(options);
  spdlog::info("backend=cpu devices={}", backend->device_count());
  return backend;
}

// Bounds on what one client (or a flood of cancelled streams, the HTTP/2 "rapid reset") can
// make gRPC hold: streams per connection, a memory quota for the whole transport, and pings.
void ApplyAbuseLimits(grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                              absl::GetFlag(FLAGS_max_concurrent_streams));
  grpc::ResourceQuota quota("gpubench_server");
  quota.Resize(static_cast<size_t>(absl::GetFlag(FLAGS_max_memory_bytes)));
  builder->SetResourceQuota(quota);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
}

// Every operator flag checked at start-up: finite, in a range that makes sense. Returns every
// problem found, not only the first.
absl::Status ValidateFlags() {
  std::vector<std::string> problems;
  auto number = [&](const char* name, double value, double lo, double hi, const char* why = "") {
    if (!(std::isfinite(value) && value >= lo && value <= hi)) {  // NaN fails every comparison
      problems.push_back(absl::StrCat("--", name, "=", value, " must be in [", lo, ", ", hi, "]",
                                      why));
    }
  };
  auto default_or = [&](const char* name, double value, double lo, double hi) {
    if (value != -1) number(name, value, lo, hi, " or -1 (the backend's default)");
  };
  number("cpu_devices", absl::GetFlag(FLAGS_cpu_devices), 1, 256);
  number("cpu_threads", absl::GetFlag(FLAGS_cpu_threads), 0, 4096);
  number("max_elements", static_cast<double>(absl::GetFlag(FLAGS_max_elements)), 1, 1e15);
  number("queue_capacity", absl::GetFlag(FLAGS_queue_capacity), 1, 1e6);
  number("max_sweep_items", absl::GetFlag(FLAGS_max_sweep_items), 1, 1e6);
  number("default_min_samples", absl::GetFlag(FLAGS_default_min_samples), 1, 1e6);
  number("default_min_time_seconds", absl::GetFlag(FLAGS_default_min_time_seconds), 0, 60);
  default_or("default_max_noise", absl::GetFlag(FLAGS_default_max_noise), 1e-6, 1);
  number("max_timeout_seconds", absl::GetFlag(FLAGS_max_timeout_seconds), 1e-3, 86400);
  default_or("default_timeout_seconds", absl::GetFlag(FLAGS_default_timeout_seconds), 1e-3,
             absl::GetFlag(FLAGS_max_timeout_seconds));
  number("max_warmup_seconds", absl::GetFlag(FLAGS_max_warmup_seconds), 0.001, 3600);
  number("shutdown_grace_seconds", absl::GetFlag(FLAGS_shutdown_grace_seconds), 0, 3600);
  number("max_message_bytes", absl::GetFlag(FLAGS_max_message_bytes), 64 << 10, 1 << 30);
  number("metrics_max_series", absl::GetFlag(FLAGS_metrics_max_series), 1, 1e6);
  number("metrics_threads", absl::GetFlag(FLAGS_metrics_threads), 1, 1024);
  number("metrics_request_timeout_ms", absl::GetFlag(FLAGS_metrics_request_timeout_ms), 100,
         600000);
  number("schedule_interval_seconds", absl::GetFlag(FLAGS_schedule_interval_seconds), 1,
         7 * 86400);
  number("max_concurrent_streams", absl::GetFlag(FLAGS_max_concurrent_streams), 1, 100000);
  number("max_memory_bytes", static_cast<double>(absl::GetFlag(FLAGS_max_memory_bytes)),
         64 << 20, 1e15);
  // Partial TLS would silently serve plaintext.
  const bool cert = !absl::GetFlag(FLAGS_tls_cert).empty();
  const bool key = !absl::GetFlag(FLAGS_tls_key).empty();
  const bool client_ca = !absl::GetFlag(FLAGS_tls_client_ca).empty();
  if (cert != key || (client_ca && !cert)) {
    problems.push_back(
        "TLS needs both --tls_cert and --tls_key (and --tls_client_ca only with them); a partial "
        "TLS configuration would serve plaintext");
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

int Main() {
  // Block the stop signals in every thread; one thread waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  if (absl::Status flags = ValidateFlags(); !flags.ok()) {
    spdlog::critical("invalid flags: {}", std::string(flags.message()));
    return 2;
  }
  const std::string node_name = NodeName();
  std::unique_ptr<Backend> backend = ChooseBackend(absl::GetFlag(FLAGS_backend), node_name);
  if (!backend) return 2;
  backend = WithNodeName(std::move(backend), node_name);
  spdlog::info("node_name={}", node_name);
  absl::StatusOr<GpuSharing> sharing = ParseGpuSharing(absl::GetFlag(FLAGS_gpu_sharing));
  if (!sharing.ok()) {
    spdlog::critical("{}", std::string(sharing.status().message()));
    return 2;
  }
  std::shared_ptr<const Nvml> nvml;
  if (absl::StatusOr<std::shared_ptr<Nvml>> loaded = Nvml::Load(absl::GetFlag(FLAGS_nvml_library));
      loaded.ok()) {
    nvml = *std::move(loaded);
    spdlog::info("NVML loaded: kernel driver {}", nvml->driver_version());
    backend = WithNvmlFacts(std::move(backend), nvml);
  } else {
    spdlog::info("{}; running without NVML: no kernel driver version, NVML index or clock-event "
                 "reasons, no busy check", std::string(loaded.status().message()));
    if (*sharing == GpuSharing::kShared && backend->name() == "cuda") {
      spdlog::critical("--gpu_sharing=shared needs NVML to see other processes on the GPUs");
      return 2;
    }
  }
  std::vector<std::string> uuids;
  for (int d = 0; d < backend->device_count(); ++d) {
    absl::StatusOr<DeviceInfo> info = backend->Describe(d);
    uuids.push_back(info.ok() ? info->uuid : "");
  }
  // Declared before the engine: its workers use the monitor until they stop.
  NvmlMonitor monitor(nvml, std::move(uuids), *sharing);
  spdlog::info("gpu sharing: {}", absl::GetFlag(FLAGS_gpu_sharing));

  ServerLimits limits;
  limits.max_elements = absl::GetFlag(FLAGS_max_elements);
  limits.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  limits.defaults.min_samples = absl::GetFlag(FLAGS_default_min_samples);
  limits.defaults.min_time_seconds = absl::GetFlag(FLAGS_default_min_time_seconds);
  const bool cpu = backend->name() == "cpu";
  const double noise = absl::GetFlag(FLAGS_default_max_noise);
  const double timeout = absl::GetFlag(FLAGS_default_timeout_seconds);
  limits.defaults.max_noise = noise > 0 ? noise : (cpu ? 0.02 : 0.005);
  limits.defaults.timeout_seconds = timeout > 0 ? timeout : (cpu ? 3.0 : 15.0);
  limits.max_timeout_seconds = absl::GetFlag(FLAGS_max_timeout_seconds);
  limits.allow_profiling = absl::GetFlag(FLAGS_allow_profiling);
  limits.max_warmup_seconds = absl::GetFlag(FLAGS_max_warmup_seconds);
  limits.host_memory.cgroup_root = absl::GetFlag(FLAGS_cgroup_root);
  Engine engine(std::move(backend), limits);
  engine.SetMonitor(&monitor);
  // The limits must admit a request that leaves every field to the server's defaults.
  {
    RunRequest plain;
    plain.kernel = std::string(AllKernels().front().name);
    plain.elements = 1;
    plain.verify = false;
    if (absl::StatusOr<RunSpec> spec = engine.Resolve(plain); !spec.ok()) {
      spdlog::critical("these limits refuse even a request that uses every default: {}",
                       spec.status().ToString());
      return 2;
    }
  }
  // A sticky device error (illegal address, ECC...) leaves the CUDA context unusable: stop serving
  // and exit non-zero so the orchestrator restarts the process (and alerts).
  std::atomic<int> exit_code{0};
  engine.SetDeviceLostHandler([&exit_code](int device, const absl::Status& status) {
    if (exit_code.exchange(3) == 0) {
      spdlog::critical("device {} is lost ({}); shutting down with exit code 3", device,
                       std::string(status.message()));
      kill(getpid(), SIGTERM);
    }
  });

  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry, {.max_result_series = absl::GetFlag(FLAGS_metrics_max_series),
                             .node_name = node_name});
  engine.AddObserver(&metrics);
  {
    std::vector<DeviceInfo> devices;
    for (int d = 0; d < engine.backend().device_count(); ++d) {
      if (absl::StatusOr<DeviceInfo> info = engine.backend().Describe(d); info.ok()) {
        devices.push_back(*info);
      }
    }
    metrics.SetInfo(devices, std::string(engine.backend().name()));
  }
  std::unique_ptr<prometheus::Exposer> exposer;
  if (const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
      !metrics_listen.empty()) {
    try {
      // Threads and a request timeout so that idle or slow connections cannot hold every thread.
      exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
          "listening_ports", metrics_listen,
          "num_threads", std::to_string(absl::GetFlag(FLAGS_metrics_threads)),
          "request_timeout_ms", std::to_string(absl::GetFlag(FLAGS_metrics_request_timeout_ms)),
          "keep_alive_timeout_ms", std::to_string(absl::GetFlag(FLAGS_metrics_request_timeout_ms)),
          "connection_queue", "1024"});
    } catch (const std::exception& e) {
      const absl::Status why = CheckAddressBindable(metrics_listen);
      spdlog::critical("could not serve metrics on --metrics_listen={}: {}", metrics_listen,
                       why.ok() ? std::string(e.what()) : std::string(why.message()));
      return 2;
    }
    if (const std::string f = absl::GetFlag(FLAGS_metrics_token_file); !f.empty()) {
      absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(f);
      if (!tokens.ok()) {
        spdlog::critical("--metrics_token_file: {}", std::string(tokens.status().message()));
        return 2;
      }
      exposer->RegisterAuth(
          [tokens = *std::move(tokens)](const std::string&, const std::string& password) {
            bool match = false;
            for (const std::string& t : tokens) match |= ConstantTimeEquals(password, t);
            return match;
          },
          "gpubench");
      spdlog::info("/metrics needs basic auth (tokens from {})", f);
    }
    exposer->RegisterCollectable(registry);
    const int metrics_port = exposer->GetListeningPorts().at(0);
    if (const std::string f = absl::GetFlag(FLAGS_metrics_port_file); !f.empty()) {
      std::ofstream(f) << metrics_port << "\n";
    }
    spdlog::info("serving Prometheus metrics on {} (port {}) at /metrics", metrics_listen,
                 metrics_port);
  }

  // Before the scheduler: its runs use the tuned defaults too.
  std::unique_ptr<TunedDefaultsStore> tuned_store;
  if (const std::string f = absl::GetFlag(FLAGS_tuned_defaults_file); !f.empty()) {
    absl::StatusOr<std::unique_ptr<TunedDefaultsStore>> opened = TunedDefaultsStore::Open(f, &engine);
    if (!opened.ok()) {
      spdlog::critical("{}", opened.status().ToString());
      return 2;
    }
    tuned_store = *std::move(opened);
    spdlog::info("tuned defaults: {} applied from {}", tuned_store->applied_at_start(), f);
  }
  std::unique_ptr<Scheduler> scheduler;
  if (const std::string plan_file = absl::GetFlag(FLAGS_schedule_plan); !plan_file.empty()) {
    std::string text;
    if (!ReadFileToString(plan_file, &text)) {
      spdlog::critical("cannot read --schedule_plan {}", plan_file);
      return 2;
    }
    absl::StatusOr<v1::Plan> plan = ParsePlanJson(text);
    absl::StatusOr<std::unique_ptr<Scheduler>> created =
        plan.ok() ? Scheduler::Create(&engine, *plan,
                                      absl::Seconds(absl::GetFlag(FLAGS_schedule_interval_seconds)),
                                      absl::GetFlag(FLAGS_max_sweep_items))
                  : absl::StatusOr<std::unique_ptr<Scheduler>>(plan.status());
    if (!created.ok()) {
      spdlog::critical("invalid --schedule_plan {}: {}", plan_file, created.status().ToString());
      return 2;
    }
    scheduler = *std::move(created);
  }

  ServiceOptions service_options;
  service_options.max_sweep_items = absl::GetFlag(FLAGS_max_sweep_items);
  {
    v1::GetServerInfoResponse& info = service_options.server_info;
    info.set_version(kGpubenchVersion);
    info.set_git_revision(kGpubenchGitRevision);
    *info.mutable_start_time() =
        google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::GetCurrentTimeNanos());
    info.mutable_limits()->set_max_message_bytes(absl::GetFlag(FLAGS_max_message_bytes));
    info.mutable_limits()->set_max_concurrent_streams(absl::GetFlag(FLAGS_max_concurrent_streams));
    info.set_tls(!absl::GetFlag(FLAGS_tls_cert).empty());
  }
  service_options.tuned_store = tuned_store.get();
  std::optional<TokenAuthenticator> auth;
  if (const std::string token_file = absl::GetFlag(FLAGS_token_file); !token_file.empty()) {
    absl::StatusOr<TokenAuthenticator> loaded = TokenAuthenticator::FromFile(token_file);
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      return 2;
    }
    auth = *std::move(loaded);
    service_options.auth = &*auth;
    spdlog::info("bearer-token authentication on (tokens from {})", token_file);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  const std::string tls_cert = absl::GetFlag(FLAGS_tls_cert);
  const std::string tls_key = absl::GetFlag(FLAGS_tls_key);
  if (!tls_cert.empty() || !tls_key.empty()) {
    auto read = [](const std::string& path, std::string* out) {
      return ReadFileToString(path, out) && !out->empty();  // false for directories too
    };
    grpc::SslServerCredentialsOptions ssl;
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    if (!read(tls_cert, &pair.cert_chain) || !read(tls_key, &pair.private_key)) {
      spdlog::critical("--tls_cert and --tls_key must both name readable PEM files");
      return 2;
    }
    ssl.pem_key_cert_pairs.push_back(pair);
    if (const std::string ca = absl::GetFlag(FLAGS_tls_client_ca); !ca.empty()) {
      if (!read(ca, &ssl.pem_root_certs)) {
        spdlog::critical("cannot read --tls_client_ca {}", ca);
        return 2;
      }
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    if (absl::Status pem = CheckTlsMaterial(pair.cert_chain, pair.private_key, ssl.pem_root_certs);
        !pem.ok()) {
      spdlog::critical("{}", std::string(pem.message()));
      return 2;
    }
    credentials = grpc::SslServerCredentials(ssl);
    spdlog::info("TLS on{}", ssl.pem_root_certs.empty() ? "" : " with client certificates (mTLS)");
  }
  BenchmarkService service(&engine, service_options);

  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's health service carries no protobuf descriptors; linking the generated health.proto
  // registers them, so reflection (grpcurl) can describe grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  builder.AddListeningPort(listen, credentials, &port);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_message_bytes));
  // gRPC sets SO_REUSEPORT by default: a second server on the same port would silently take a
  // share of the calls. Off, so a taken port fails start-up.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  ApplyAbuseLimits(&builder);
  builder.RegisterService(&service);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(MakeRpcMetricsInterceptor(&metrics));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    const absl::Status why = CheckAddressBindable(listen);
    spdlog::critical("could not listen on --listen={}: {}", listen,
                     why.ok() ? "gRPC refused the address or the TLS material"
                              : std::string(why.message()));
    return 2;
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus("gpubench.v1.Benchmark", true);
  health->SetServingStatus(true);
  if (const std::string port_file = absl::GetFlag(FLAGS_port_file); !port_file.empty()) {
    std::ofstream(port_file) << port << "\n";
  }
  spdlog::info("serving gpubench.v1.Benchmark on {} (port {}) backend={}", listen, port,
               std::string(engine.backend().name()));
  if (scheduler) {
    scheduler->Start();
    spdlog::info("scheduled plan {} every {} s", absl::GetFlag(FLAGS_schedule_plan),
                 absl::GetFlag(FLAGS_schedule_interval_seconds));
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("signal {} received: not serving, draining for up to {} s", signal_number,
               absl::GetFlag(FLAGS_shutdown_grace_seconds));
  health->SetServingStatus(false);
  if (scheduler) scheduler->Stop();
  const absl::Duration grace = exit_code != 0
                                   ? absl::ZeroDuration()
                                   : absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds));
  engine.Shutdown(grace);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (exit_code != 0) {
    spdlog::critical("stopped after a device fault (exit {})", exit_code.load());
    return exit_code;
  }
  spdlog::info("stopped cleanly");
  return 0;
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
    return 2;
  }
  return gpubench::Main();
}
