#include "server/startup.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/build_info.h"
#include "common/files.h"
#include "common/host_memory.h"
#include "common/measurement_options.h"
#include "common/status_macros.h"
#include "common/tokens.h"
#include "grpc/health/v1/health.pb.h"
#include "kernels/nvml_backend.h"
#include "proto/plan_json.h"
#include "server/service/rpc_metrics.h"
#include "server/worker/open_backend.h"

namespace gpubench {
namespace {

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no detail";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof(buffer));
  return buffer;
}

// Bounds on what one client (or a flood of cancelled streams, the HTTP/2 "rapid reset") can
// make gRPC hold: streams per connection, a memory quota for the whole transport, and pings.
void ApplyAbuseLimits(const ServerConfig& config, grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config.max_concurrent_streams);
  grpc::ResourceQuota quota("gpubench_server");
  quota.Resize(static_cast<size_t>(config.max_memory_bytes));
  builder->SetResourceQuota(quota);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
}

// A readable, non-empty file (false for directories too).
bool ReadNonEmpty(const std::string& path, std::string* out) {
  return ReadFileToString(path, out) && !out->empty();
}

// The directory of this executable: gpubench_worker is installed beside gpubench_server.
std::string ExecutableDirectory() {
  char path[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string p(path, static_cast<size_t>(n));
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

WorkerOptions WorkerOptionsFor(const ServerConfig& c) {
  const ServerConfig::Workers& w = c.workers;
  WorkerOptions o;
  o.binary = w.binary.empty() ? ExecutableDirectory() + "/gpubench_worker" : w.binary;
  o.args = {absl::StrCat("--backend=", c.backend),
            absl::StrCat("--cpu_devices=", c.cpu.devices),
            absl::StrCat("--cpu_threads=", c.cpu.threads_per_device),
            absl::StrCat("--cpu_device_name=", c.cpu.device_name),
            absl::StrCat("--cpu_uuid_seed=", c.cpu.uuid_seed),
            absl::StrCat("--cpu_min_launch_seconds=", c.cpu.min_launch_seconds),
            absl::StrCat("--device_malloc_heap_bytes=", w.device_malloc_heap_bytes),
            absl::StrCat("--device_printf_fifo_bytes=", w.device_printf_fifo_bytes),
            absl::StrCat("--test_fault_kernels=", w.test_fault_kernels ? "true" : "false")};
  // Only the user-kernel workers may run user kernels: the catalog ones refuse them themselves.
  o.user_kernels = c.user_kernels.allow;
  o.user_args = {absl::StrCat("--allow_user_kernels=", c.user_kernels.allow ? "true" : "false"),
                 absl::StrCat("--max_user_kernel_bytes=", c.user_kernels.max_bytes)};
  o.user_worker_idle = absl::Seconds(c.user_kernels.worker_idle_seconds);
  o.user_kernel_compile_limit = absl::Seconds(c.user_kernels.compile_seconds);
  o.stall_timeout = absl::Seconds(w.stall_seconds);
  o.deadline_grace = absl::Seconds(w.deadline_grace_seconds);
  o.heartbeat_timeout = absl::Seconds(w.heartbeat_timeout_seconds);
  o.max_faults = w.max_faults;
  o.fault_window = absl::Seconds(w.fault_window_seconds);
  o.unhealthy_retry = absl::Seconds(w.unhealthy_retry_seconds);
  o.max_memory_bytes = w.max_memory_bytes;
  return o;
}

}  // namespace

void WorkerEventSink::Publish(int device, bool up) {
  if (metrics_ != nullptr) metrics_->SetDeviceUp(device, up);
  if (health_ != nullptr) {
    health_->SetServingStatus(absl::StrCat("gpubench/device/", device), up);
    if (device < static_cast<int>(uuids_.size()) && !uuids_[device].empty()) {
      health_->SetServingStatus(absl::StrCat("gpubench/gpu/", uuids_[device]), up);
    }
  }
}

void WorkerEventSink::OnEvent(const WorkerEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!event.fault.empty() && metrics_ != nullptr) {
    metrics_->CountWorkerFault(event.device, event.fault, WorkerRoleName(event.role));
  }
  if (event.role == WorkerRole::kUser) {
    // The user-kernel worker's states say nothing about the device: not its up, not its health.
    const bool running = event.state == WorkerState::kReady;
    user_running_[event.device] = running;
    if (metrics_ != nullptr) metrics_->SetUserKernelWorkerRunning(event.device, running);
    return;
  }
  const bool up = event.state != WorkerState::kUnhealthy && event.state != WorkerState::kStopped;
  up_[event.device] = up;
  Publish(event.device, up);
}

void WorkerEventSink::AttachMetrics(Metrics* metrics, int device_count, bool user_kernels) {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_ = metrics;
  for (int d = 0; d < device_count; ++d) {
    up_.insert({d, true});  // in-process: always up
    // The user-kernel workers start idle: the first user-kernel run starts one.
    if (user_kernels) user_running_.insert({d, false});
  }
  for (const auto& [device, up] : up_) Publish(device, up);
  for (const auto& [device, running] : user_running_) {
    metrics_->SetUserKernelWorkerRunning(device, running);
  }
}

void WorkerEventSink::AttachHealth(grpc::HealthCheckServiceInterface* health,
                                   std::vector<std::string> uuids) {
  std::lock_guard<std::mutex> lock(mu_);
  health_ = health;
  uuids_ = std::move(uuids);
  for (const auto& [device, up] : up_) Publish(device, up);
}

namespace {

// A --default_* flag's text as the row's value (a choice's index, else the number); nullopt for
// -1 where the row has a CPU default, which means the backend's default.
absl::StatusOr<std::optional<double>> ParseDefaultFlag(const OptionSpec& o,
                                                       const std::string& text) {
  const std::string flag = absl::StrCat("--", o.server_flag);
  if (o.kind == OptionKind::kChoice) {
    ASSIGN_OR_RETURN(const int choice, ParseChoice(o, text, flag));
    return std::optional<double>(choice);
  }
  double value = 0;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, "=", text, " is not a number"));
  }
  if (value == -1 && o.cpu_default != 0) return std::optional<double>();
  return std::optional<double>(value);
}

}  // namespace

absl::Status ValidateConfig(const ServerConfig& c) {
  std::vector<std::string> problems;
  auto number = [&](const char* name, double value, double lo, double hi, const char* why = "") {
    if (!(std::isfinite(value) && value >= lo && value <= hi)) {  // NaN fails every comparison
      problems.push_back(
          absl::StrCat("--", name, "=", value, " must be in [", lo, ", ", hi, "]", why));
    }
  };
  number("cpu_devices", c.cpu.devices, 1, 256);
  number("cpu_threads", c.cpu.threads_per_device, 0, 4096);
  number("cpu_min_launch_seconds", c.cpu.min_launch_seconds, 0, 10);
  number("max_elements", static_cast<double>(c.max_elements), 1, 1e15);
  number("queue_capacity", c.queue_capacity, 1, 1e6);
  number("max_sweep_items", c.max_sweep_items, 1, 1e6);
  number("max_timeout_seconds", c.max_timeout_seconds, 1e-3, 86400);
  // The measurement defaults, by the option table's ranges (the request's bound where a server
  // flag moves it: --max_timeout_seconds).
  for (const OptionSpec& o : kMeasurementOptions) {
    const auto text = c.measurement_defaults.find(std::string(o.name));
    if (o.server_flag.empty() || text == c.measurement_defaults.end()) continue;
    absl::StatusOr<std::optional<double>> value = ParseDefaultFlag(o, text->second);
    if (!value.ok()) {
      problems.emplace_back(value.status().message());
    } else if (value->has_value() && HasRange(o)) {
      const double max = o.max_flag == "max_timeout_seconds" ? c.max_timeout_seconds : o.max;
      if (absl::Status s = CheckOptionRange(o, **value, max, absl::StrCat("--", o.server_flag));
          !s.ok()) {
        problems.emplace_back(s.message());
      }
    }
  }
  number("max_warmup_seconds", c.max_warmup_seconds, 0.001, 3600);
  number("shutdown_grace_seconds", c.shutdown_grace_seconds, 0, 3600);
  number("max_message_bytes", c.max_message_bytes, 64 << 10, 1 << 30);
  number("metrics_max_series", c.metrics.max_series, 1, 1e6);
  number("metrics_threads", c.metrics.threads, 1, 1024);
  number("metrics_request_timeout_ms", c.metrics.request_timeout_ms, 100, 600000);
  number("schedule_interval_seconds", c.schedule_interval_seconds, 1, 7 * 86400);
  number("max_concurrent_streams", c.max_concurrent_streams, 1, 100000);
  number("max_memory_bytes", static_cast<double>(c.max_memory_bytes), 64 << 20, 1e15);
  // 0 (off) or at least a second: a trim of a few microseconds apart spun an idle core.
  if (c.heap_trim_interval_seconds != 0) {
    number("heap_trim_interval_seconds", c.heap_trim_interval_seconds, 1, 3600, " or 0 (off)");
  }
  if (c.workers.mode != "process" && c.workers.mode != "in_process") {
    problems.push_back(
        absl::StrCat("--worker_mode must be process or in_process (got '", c.workers.mode, "')"));
  }
  number("worker_stall_seconds", c.workers.stall_seconds, 0.1, 86400);
  number("worker_deadline_grace_seconds", c.workers.deadline_grace_seconds, 0, 3600);
  number("worker_heartbeat_timeout_seconds", c.workers.heartbeat_timeout_seconds, 0.5, 3600);
  number("worker_max_faults", c.workers.max_faults, 1, 1e6);
  number("worker_fault_window_seconds", c.workers.fault_window_seconds, 1, 30 * 86400);
  number("worker_unhealthy_retry_seconds", c.workers.unhealthy_retry_seconds, 0, 30 * 86400);
  number("worker_max_memory_bytes", static_cast<double>(c.workers.max_memory_bytes), 0, 1e15);
  number("device_malloc_heap_bytes", static_cast<double>(c.workers.device_malloc_heap_bytes), 0,
         64e9);
  number("device_printf_fifo_bytes", static_cast<double>(c.workers.device_printf_fifo_bytes), 0,
         64e9);
  // Partial TLS would silently serve plaintext.
  const bool cert = !c.tls.cert.empty();
  const bool key = !c.tls.key.empty();
  const bool client_ca = !c.tls.client_ca.empty();
  if (cert != key || (client_ca && !cert)) {
    problems.push_back(
        "TLS needs both --tls_cert and --tls_key (and --tls_client_ca only with them); a partial "
        "TLS configuration would serve plaintext");
  }
  number("max_user_kernel_bytes", static_cast<double>(c.user_kernels.max_bytes), 1, 16 << 20);
  number("user_kernel_compile_seconds", c.user_kernels.compile_seconds, 0.1, 3600);
  number("user_kernel_worker_idle_seconds", c.user_kernels.worker_idle_seconds, 0.1, 86400);
  if (c.user_kernels.allow) {
    // User code runs on the GPUs: only for callers who authenticate, or who are on this host.
    if (!IsLoopbackListen(c.listen) && c.token_file.empty() && c.tls.client_ca.empty()) {
      problems.push_back(absl::StrCat(
          "--allow_user_kernels on the non-loopback address ", c.listen,
          " needs --token_file or mutual TLS (--tls_client_ca): anyone who reaches the port could "
          "run code on the GPUs (docs/user-kernels.md)"));
    }
    if (c.workers.mode != "process") {
      problems.push_back(
          "--allow_user_kernels needs --worker_mode=process: user kernels are compiled and run "
          "only in a device worker, never in the server's process");
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

namespace {

// A file the server will write (a port file): a regular file or a new name in a writable
// directory. A directory was never written and nothing said so; opening a FIFO for writing waits
// for a reader, so it hung start-up.
absl::Status CheckWritableFile(const char* flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) {
      if (access(path.c_str(), W_OK) == 0) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", path, " cannot be written: ", std::strerror(errno)));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", path, " is ",
        S_ISDIR(st.st_mode) ? "a directory; name a file in it"
                            : "not a regular file (a FIFO, socket or device); name a file"));
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error) || access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", path, ": cannot create it (",
                                                   dir,
                                                   " must be an existing, writable "
                                                   "directory)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckConfigPaths(const ServerConfig& config) {
  std::vector<std::string> problems;
  for (const absl::Status& s :
       {CheckCgroupRoot(config.cgroup_root), CheckWritableFile("port_file", config.port_file),
        CheckWritableFile("metrics_port_file", config.metrics.port_file)}) {
    if (!s.ok()) problems.emplace_back(s.message());
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

absl::Status WritePortFile(const char* flag, const std::string& path, int port) {
  if (path.empty()) return absl::OkStatus();
  // O_NONBLOCK: a FIFO put there since start-up fails (ENXIO) instead of waiting for a reader.
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write --", flag, "=", path, ": ", std::strerror(errno)));
  }
  struct stat st {};
  const std::string text = absl::StrCat(port, "\n");
  std::string why;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    why = std::strerror(errno);
  }
  if (close(fd) != 0 && why.empty()) why = std::strerror(errno);
  if (why.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("cannot write --", flag, "=", path, ": ", why));
}

bool IsLoopbackListen(const std::string& listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) return true;
  std::string host = listen;
  if (absl::StartsWith(host, "[")) {
    const size_t close = host.find(']');
    host = close == std::string::npos ? host : host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  if (absl::StartsWith(host, "ipv4:")) host = host.substr(5);
  if (absl::StartsWith(host, "ipv6:")) host = host.substr(5);
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::StatusOr<Devices> OpenDevices(const ServerConfig& config,
                                    std::function<void(const WorkerEvent&)> on_worker_event) {
  Devices devices;
  if (config.workers.mode == "process") {
    absl::StatusOr<std::unique_ptr<WorkerPool>> pool =
        WorkerPool::Start(WorkerOptionsFor(config), std::move(on_worker_event));
    if (!pool.ok()) return pool.status();
    devices.workers = *std::move(pool);
    devices.backend = WithNodeName(devices.workers->MakeBackend(), config.node_name);
    spdlog::info("backend={} devices={}, each in its own worker process",
                 std::string(devices.backend->name()), devices.backend->device_count());
  } else {
    absl::StatusOr<std::unique_ptr<Backend>> chosen = OpenBackend(config.backend, config.cpu);
    if (!chosen.ok()) return chosen.status();
    devices.backend = WithNodeName(*std::move(chosen), config.node_name);
    spdlog::warn(
        "--worker_mode=in_process: every device in this process; a device fault stops "
        "the server (exit 3)");
  }
  spdlog::info("node_name={}", config.node_name);
  absl::StatusOr<GpuSharing> sharing = ParseGpuSharing(config.gpu_sharing);
  if (!sharing.ok()) return sharing.status();
  devices.sharing = *sharing;
  if (absl::StatusOr<std::shared_ptr<Nvml>> loaded = Nvml::Load(config.nvml_library); loaded.ok()) {
    devices.nvml = *std::move(loaded);
    spdlog::info("NVML loaded: kernel driver {}", devices.nvml->driver_version());
    devices.backend = WithNvmlFacts(std::move(devices.backend), devices.nvml);
  } else {
    spdlog::info(
        "{}; running without NVML: no kernel driver version, NVML index or clock-event "
        "reasons, no busy check",
        std::string(loaded.status().message()));
    if (devices.sharing == GpuSharing::kShared && !devices.backend->capabilities().device_is_host) {
      return absl::FailedPreconditionError(
          "--gpu_sharing=shared needs NVML to see other processes on the GPUs");
    }
  }
  spdlog::info("gpu sharing: {}", config.gpu_sharing);
  return devices;
}

std::vector<std::string> DeviceUuids(const Backend& backend) {
  std::vector<std::string> uuids;
  for (int d = 0; d < backend.device_count(); ++d) {
    absl::StatusOr<DeviceInfo> info = backend.Describe(d);
    uuids.push_back(info.ok() ? info->uuid : "");
  }
  return uuids;
}

ServerLimits LimitsFor(const ServerConfig& config, const Backend& backend) {
  ServerLimits limits;
  limits.max_elements = config.max_elements;
  limits.queue_capacity = config.queue_capacity;
  // Every row's default: the server flag's value, else the backend's (the table's CPU default on
  // the CPU backend), else the table's.
  const bool cpu = backend.capabilities().device_is_host;
  for (const OptionSpec& o : kMeasurementOptions) {
    std::optional<double> value;
    if (const auto text = config.measurement_defaults.find(std::string(o.name));
        text != config.measurement_defaults.end()) {
      value = ParseDefaultFlag(o, text->second).value_or(std::nullopt);  // ValidateConfig checked
    }
    if (!value.has_value() && cpu && o.cpu_default != 0) value = o.cpu_default;
    SetOption(&limits.defaults, nullptr, o.id, value.value_or(o.default_value));
  }
  limits.max_timeout_seconds = config.max_timeout_seconds;
  limits.allow_profiling = config.allow_profiling;
  limits.max_warmup_seconds = config.max_warmup_seconds;
  limits.host_memory.cgroup_root = config.cgroup_root;
  if (config.test_flip_output_hash) limits.test_output_hash_xor = 1;
  limits.user_kernels = {.allowed = config.user_kernels.allow,
                         .max_code_bytes = config.user_kernels.max_bytes};
  return limits;
}

absl::Status CheckDefaultsFit(const Engine& engine) {
  RunRequest plain;
  plain.kernel = std::string(AllKernels().front().name);
  plain.elements = 1;
  plain.verify = false;
  if (absl::StatusOr<RunSpec> spec = engine.Resolve(plain); !spec.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("these limits refuse even a request that uses every default: {}",
                    spec.status().ToString()));
  }
  return absl::OkStatus();
}

void StopOnDeviceLoss(Engine* engine, std::atomic<int>* exit_code) {
  engine->SetDeviceLostHandler([exit_code](int device, const absl::Status& status) {
    if (exit_code->exchange(kExitDeviceLost) == 0) {
      spdlog::critical("device {} is lost ({}); shutting down with exit code 3", device,
                       std::string(status.message()));
      kill(getpid(), SIGTERM);
    }
  });
}

void PublishDeviceInfo(const Backend& backend, Metrics* metrics) {
  std::vector<DeviceInfo> devices;
  for (int d = 0; d < backend.device_count(); ++d) {
    if (absl::StatusOr<DeviceInfo> info = backend.Describe(d); info.ok()) {
      devices.push_back(*info);
    }
  }
  metrics->SetInfo(devices, std::string(backend.name()));
}

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const ServerConfig::MetricsEndpoint& config, std::shared_ptr<prometheus::Registry> registry) {
  if (config.listen.empty()) return nullptr;
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // Threads and a request timeout so that idle or slow connections cannot hold every thread.
    exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", config.listen, "num_threads", std::to_string(config.threads),
        "request_timeout_ms", std::to_string(config.request_timeout_ms), "keep_alive_timeout_ms",
        std::to_string(config.request_timeout_ms), "connection_queue", "1024"});
  } catch (const std::exception& e) {
    const absl::Status why = CheckAddressBindable(config.listen);
    return absl::FailedPreconditionError(
        fmt::format("could not serve metrics on --metrics_listen={}: {}", config.listen,
                    why.ok() ? std::string(e.what()) : std::string(why.message())));
  }
  if (!config.token_file.empty()) {
    absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(config.token_file);
    if (!tokens.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--metrics_token_file: {}", std::string(tokens.status().message())));
    }
    exposer->RegisterAuth(
        [tokens = *std::move(tokens)](const std::string&, const std::string& password) {
          bool match = false;
          for (const std::string& t : tokens) match |= ConstantTimeEquals(password, t);
          return match;
        },
        "gpubench");
    spdlog::info("/metrics needs basic auth (tokens from {})", config.token_file);
  }
  exposer->RegisterCollectable(registry);
  const int port = exposer->GetListeningPorts().at(0);
  RETURN_IF_ERROR(WritePortFile("metrics_port_file", config.port_file, port));
  spdlog::info("serving Prometheus metrics on {} (port {}) at /metrics", config.listen, port);
  return exposer;
}

absl::StatusOr<std::unique_ptr<TunedDefaultsStore>> OpenTunedDefaults(const ServerConfig& config,
                                                                      Engine* engine) {
  if (config.tuned_defaults_file.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<TunedDefaultsStore>> opened =
      TunedDefaultsStore::Open(config.tuned_defaults_file, engine);
  if (!opened.ok()) return absl::Status(opened.status().code(), opened.status().ToString());
  spdlog::info("tuned defaults: {} applied from {}", (*opened)->applied_at_start(),
               config.tuned_defaults_file);
  return opened;
}

absl::StatusOr<std::unique_ptr<health::HealthMonitor>> OpenHealth(const ServerConfig& config,
                                                                  const Backend& backend) {
  if (config.schedule_plan.empty()) return nullptr;
  health::MonitorOptions options;
  if (!config.health_expectations.empty()) {
    std::ifstream in(config.health_expectations);
    if (!in) {
      return absl::InvalidArgumentError(
          fmt::format("cannot read --health_expectations {}", config.health_expectations));
    }
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::vector<health::Expectation>> parsed = health::ParseExpectations(text.str());
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(fmt::format("--health_expectations {}: {}",
                                                    config.health_expectations,
                                                    std::string(parsed.status().message())));
    }
    options.expectations = *std::move(parsed);
  }
  if (!config.state_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(config.state_dir, error);
    if (error) {
      return absl::InvalidArgumentError(
          fmt::format("cannot create --state_dir {}: {}", config.state_dir, error.message()));
    }
    options.state_dir = config.state_dir;
  }
  std::vector<health::HealthMonitor::Device> devices;
  for (int d = 0; d < backend.device_count(); ++d) {
    absl::StatusOr<DeviceInfo> info = backend.Describe(d);
    devices.push_back(info.ok() ? health::HealthMonitor::Device{info->uuid, info->name}
                                : health::HealthMonitor::Device{});
  }
  return health::HealthMonitor::Create(std::move(options), std::move(devices));
}

absl::StatusOr<std::unique_ptr<Scheduler>> CreateScheduler(const ServerConfig& config,
                                                           Engine* engine) {
  const std::string& plan_file = config.schedule_plan;
  if (plan_file.empty()) return nullptr;
  std::string text;
  if (!ReadFileToString(plan_file, &text)) {
    return absl::InvalidArgumentError(fmt::format("cannot read --schedule_plan {}", plan_file));
  }
  absl::StatusOr<v1::Plan> plan = ParsePlanJson(text);
  absl::StatusOr<std::unique_ptr<Scheduler>> created =
      plan.ok() ? Scheduler::Create(engine, *plan, absl::Seconds(config.schedule_interval_seconds),
                                    config.max_sweep_items)
                : absl::StatusOr<std::unique_ptr<Scheduler>>(plan.status());
  if (!created.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("invalid --schedule_plan {}: {}", plan_file, created.status().ToString()));
  }
  return created;
}

absl::StatusOr<std::optional<TokenAuthenticator>> LoadTokens(const ServerConfig& config) {
  if (config.token_file.empty()) return std::nullopt;
  absl::StatusOr<TokenAuthenticator> loaded = TokenAuthenticator::FromFile(config.token_file);
  if (!loaded.ok()) return absl::Status(loaded.status().code(), loaded.status().ToString());
  spdlog::info("bearer-token authentication on (tokens from {})", config.token_file);
  return std::optional<TokenAuthenticator>(*std::move(loaded));
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const ServerConfig::Tls& tls) {
  if (tls.cert.empty() && tls.key.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (!ReadNonEmpty(tls.cert, &pair.cert_chain) || !ReadNonEmpty(tls.key, &pair.private_key)) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key must both name readable PEM files");
  }
  ssl.pem_key_cert_pairs.push_back(pair);
  if (!tls.client_ca.empty()) {
    if (!ReadNonEmpty(tls.client_ca, &ssl.pem_root_certs)) {
      return absl::InvalidArgumentError(
          fmt::format("cannot read --tls_client_ca {}", tls.client_ca));
    }
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  if (absl::Status pem = CheckTlsMaterial(pair.cert_chain, pair.private_key, ssl.pem_root_certs);
      !pem.ok()) {
    return pem;
  }
  spdlog::info("TLS on{}", ssl.pem_root_certs.empty() ? "" : " with client certificates (mTLS)");
  return grpc::SslServerCredentials(ssl);
}

v1::GetServerInfoResponse ServerInfoFor(const ServerConfig& config) {
  v1::GetServerInfoResponse info;
  info.set_version(kGpubenchVersion);
  info.set_git_revision(kGpubenchGitRevision);
  *info.mutable_start_time() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::GetCurrentTimeNanos());
  info.mutable_limits()->set_max_message_bytes(config.max_message_bytes);
  info.mutable_limits()->set_max_concurrent_streams(config.max_concurrent_streams);
  info.mutable_limits()->set_user_kernel_worker_idle_seconds(
      config.user_kernels.allow ? config.user_kernels.worker_idle_seconds : 0);
  info.mutable_limits()->set_user_kernel_sweeps(true);
  info.set_tls(!config.tls.cert.empty());
  return info;
}

absl::StatusOr<StartedServer> StartGrpcServer(const ServerConfig& config,
                                              std::shared_ptr<grpc::ServerCredentials> credentials,
                                              grpc::Service* service, Metrics* metrics) {
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's health service carries no protobuf descriptors; linking the generated health.proto
  // registers them, so reflection (grpcurl) can describe grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  StartedServer started;
  builder.AddListeningPort(config.listen, credentials, &started.port);
  builder.SetMaxReceiveMessageSize(config.max_message_bytes);
  // gRPC sets SO_REUSEPORT by default: a second server on the same port would silently take a
  // share of the calls. Off, so a taken port fails start-up.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  ApplyAbuseLimits(config, &builder);
  builder.RegisterService(service);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(MakeRpcMetricsInterceptor(metrics));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  started.server = builder.BuildAndStart();
  if (!started.server || started.port == 0) {
    const absl::Status why = CheckAddressBindable(config.listen);
    return absl::FailedPreconditionError(fmt::format(
        "could not listen on --listen={}: {}", config.listen,
        why.ok() ? "gRPC refused the address or the TLS material" : std::string(why.message())));
  }
  grpc::HealthCheckServiceInterface* health = started.server->GetHealthCheckService();
  health->SetServingStatus("gpubench.v1.Benchmark", true);
  health->SetServingStatus(true);
  RETURN_IF_ERROR(WritePortFile("port_file", config.port_file, started.port));
  return started;
}

sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

int WaitForStopSignal(const sigset_t& stop_signals) {
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  return signal_number;
}

int DrainAndStop(const ServerConfig& config, int exit_code, grpc::Server* server,
                 Scheduler* scheduler, Engine* engine) {
  server->GetHealthCheckService()->SetServingStatus(false);
  if (scheduler != nullptr) scheduler->Stop();
  const absl::Duration grace = exit_code != kExitStopped
                                   ? absl::ZeroDuration()
                                   : absl::Seconds(config.shutdown_grace_seconds);
  engine->Shutdown(grace);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (exit_code != kExitStopped) {
    spdlog::critical("stopped after a device fault (exit {})", exit_code);
    return exit_code;
  }
  spdlog::info("stopped cleanly");
  return kExitStopped;
}

absl::Status CheckAddressBindable(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("address '", host_port, "' is not host:port"));
  }
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  int port_number = 0;
  if (!absl::SimpleAtoi(port, &port_number) || port_number < 0 || port_number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", host_port, "': port '", port, "' is not a number in 0..65535"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // "[::]" -> "::"
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc =
          getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", host_port, "': cannot resolve host: ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  int last_errno = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as gRPC and civetweb do
    const int rc = bind(fd, a->ai_addr, a->ai_addrlen);
    const int bind_errno = errno;
    close(fd);
    if (rc == 0) return absl::OkStatus();
    last_errno = bind_errno;
  }
  if (last_errno == EADDRINUSE) {
    return absl::FailedPreconditionError(
        absl::StrCat("address ", host_port,
                     " is already in use (another gpubench_server or another program "
                     "listens there; pick another port or stop it)"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("cannot bind ", host_port, ": ", std::strerror(last_errno)));
}

absl::Status CheckTlsMaterial(const std::string& cert_chain_pem, const std::string& private_key_pem,
                              const std::string& client_ca_pem) {
  ERR_clear_error();
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(cert_chain_pem.data(), static_cast<int>(cert_chain_pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), X509_free);
  if (!cert) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert holds no PEM certificate (", OpenSslError(), ")"));
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  if (!key) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_key holds no unencrypted PEM private key (", OpenSslError(), ")"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "--tls_key does not belong to the certificate in --tls_cert (mismatched key)");
  }
  if (!client_ca_pem.empty()) {
    std::unique_ptr<BIO, decltype(&BIO_free)> ca_bio(
        BIO_new_mem_buf(client_ca_pem.data(), static_cast<int>(client_ca_pem.size())), BIO_free);
    std::unique_ptr<X509, decltype(&X509_free)> ca(
        PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr), X509_free);
    if (!ca) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls_client_ca holds no PEM certificate (", OpenSslError(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gpubench
