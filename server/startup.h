// The steps of gpubench_server's life, each a function of the configuration read from its flags
// (server/main.cc): validate the configuration, open the devices, size the engine, serve metrics,
// build the services, start the gRPC server, and drain on a stop signal. Each start-up step
// answers an error whose message is the operator-facing reason; main logs it and exits 2.
// Also the start-up diagnostics: say precisely why an address or TLS material cannot be used,
// instead of gRPC's or civetweb's generic failure.
#ifndef GPUBENCH_SERVER_STARTUP_H_
#define GPUBENCH_SERVER_STARTUP_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/cpu_backend.h"
#include "kernels/nvml.h"
#include "server/engine/engine.h"
#include "server/engine/nvml_monitor.h"
#include "server/engine/worker_pool.h"
#include "server/health/health_monitor.h"
#include "server/metrics/metrics.h"
#include "server/service/auth.h"
#include "server/service/scheduler.h"
#include "server/service/tuned_store.h"

namespace gpubench {

// Process exit codes of gpubench_server (the e2e tests and the DaemonSet rely on them).
inline constexpr int kExitStopped = 0;        // a stop signal, drained cleanly
inline constexpr int kExitBadStartup = 2;     // a flag, file, address or TLS material unusable
// A sticky device error with --worker_mode=in_process: restart the process. With worker
// processes (the default) a device fault ends that device's worker only, never the server.
inline constexpr int kExitDeviceLost = 3;

// Everything the server's flags say, one field per flag (see the flag help in server/main.cc).
struct ServerConfig {
  // The gRPC endpoint.
  std::string listen;
  std::string port_file;
  int max_message_bytes = 0;
  int max_concurrent_streams = 0;
  int64_t max_memory_bytes = 0;
  double heap_trim_interval_seconds = 0;
  // The devices.
  std::string backend;          // auto | cpu | cuda
  CpuBackendOptions cpu;        // uuid_seed already defaulted to node_name
  std::string node_name;        // resolved: --node_name, $NODE_NAME or the host name
  std::string gpu_sharing;      // exclusive | shared
  std::string nvml_library;
  // The device worker processes (docs/workers.md).
  struct Workers {
    std::string mode = "process";  // process | in_process
    std::string binary;            // empty: gpubench_worker beside this executable
    double stall_seconds = 60;
    double deadline_grace_seconds = 5;
    double heartbeat_timeout_seconds = 10;
    int max_faults = 5;
    double fault_window_seconds = 600;
    double unhealthy_retry_seconds = 600;
    int64_t max_memory_bytes = 0;
    int64_t device_malloc_heap_bytes = 8 << 20;
    int64_t device_printf_fifo_bytes = 1 << 20;
    bool test_fault_kernels = false;
  } workers;
  // The engine's limits and defaults (-1: the backend's default).
  int64_t max_elements = 0;
  int queue_capacity = 0;
  int max_sweep_items = 0;
  // The text of each measurement option's --default_* flag, by the option's name (the rows of
  // common/measurement_options.h with a server_flag); a row missing here keeps the table's default.
  std::map<std::string, std::string> measurement_defaults;
  double max_timeout_seconds = 0;
  double max_warmup_seconds = 0;
  std::string cgroup_root;
  bool test_flip_output_hash = false;  // TEST ONLY: every output hash has its low bit flipped
  bool allow_profiling = true;
  double shutdown_grace_seconds = 0;
  // The Prometheus endpoint.
  struct MetricsEndpoint {
    std::string listen;  // empty: no endpoint
    std::string port_file;
    std::string token_file;
    int threads = 0;
    int request_timeout_ms = 0;
    int max_series = 0;
  } metrics;
  // Services.
  std::string tuned_defaults_file;
  std::string schedule_plan;
  double schedule_interval_seconds = 0;
  std::string state_dir;  // the health history (health_state.json); empty: in memory
  std::string
      health_expectations;  // a JSON file of per-model expectations; empty: the shipped table
  struct Tls {
    std::string cert, key, client_ca;
  } tls;
  std::string token_file;
  // Users' kernels (docs/user-kernels.md).
  struct UserKernels {
    bool allow = false;                        // --allow_user_kernels
    int64_t max_bytes = int64_t{1} << 20;      // --max_user_kernel_bytes
    double compile_seconds = 30;               // --user_kernel_compile_seconds
    double worker_idle_seconds = 300;          // --user_kernel_worker_idle_seconds
  } user_kernels;
};

// Whether `listen` (host:port, [v6]:port, unix:path) only accepts connections from this host.
bool IsLoopbackListen(const std::string& listen);

// Step 1. Every value checked: finite, in a range that makes sense, no partial TLS. Returns every
// problem found, not only the first (INVALID_ARGUMENT).
absl::Status ValidateConfig(const ServerConfig& config);

// Step 1b. The paths the server reads or writes later, checked now so that a wrong one fails
// start-up instead of silently turning a check off or hanging: --cgroup_root must hold a readable
// memory cgroup (or be "none"); --port_file and --metrics_port_file must be regular files or new
// names in writable directories (not a directory, FIFO or device). INVALID_ARGUMENT naming each.
absl::Status CheckConfigPaths(const ServerConfig& config);

// Writes `port` to `path` (nothing when empty) without ever blocking on it (a FIFO fails);
// FAILED_PRECONDITION naming `flag` when it cannot.
absl::Status WritePortFile(const char* flag, const std::string& path, int port);

// Step 2. The backend (`config.backend`, the CPU one's options), named after the node, with
// NVML's facts where NVML loads; the GPU-sharing policy. A backend that cannot be had, an unknown
// sharing mode, or shared mode on CUDA without NVML is an error.
struct Devices {
  // With --worker_mode=process: the workers, and `backend` answers through them. Declared first:
  // it outlives the backend that refers to it.
  std::unique_ptr<WorkerPool> workers;
  std::unique_ptr<Backend> backend;
  std::shared_ptr<const Nvml> nvml;  // null: NVML did not load
  GpuSharing sharing = GpuSharing::kExclusive;
};
// `on_worker_event` receives the workers' state changes (WorkerEventSink::OnEvent).
absl::StatusOr<Devices> OpenDevices(const ServerConfig& config,
                                    std::function<void(const WorkerEvent&)> on_worker_event);

// Fans the workers' state changes out to /metrics (gpubench_device_up,
// gpubench_worker_restarts_total, gpubench_user_kernel_worker_running) and to the per-device gRPC
// health names "gpubench/device/<index>" and "gpubench/gpu/<uuid>" (SERVING while the device
// takes runs: the catalog worker's state; the user-kernel worker's never changes it). Either may
// attach after the first events: the latest states are replayed. Thread-safe.
class WorkerEventSink {
 public:
  void OnEvent(const WorkerEvent& event);
  // `user_kernels`: the devices have user-kernel workers (--allow_user_kernels with worker
  // processes), whose gauge starts at 0.
  void AttachMetrics(Metrics* metrics, int device_count, bool user_kernels);
  void AttachHealth(grpc::HealthCheckServiceInterface* health, std::vector<std::string> uuids);

 private:
  void Publish(int device, bool up);  // mu_ held
  std::mutex mu_;
  Metrics* metrics_ = nullptr;
  grpc::HealthCheckServiceInterface* health_ = nullptr;
  std::vector<std::string> uuids_;
  std::map<int, bool> up_;
  std::map<int, bool> user_running_;  // the user-kernel workers' processes
};
// The UUID of each device ("" where Describe fails), for the NVML monitor.
std::vector<std::string> DeviceUuids(const Backend& backend);

// Step 3. The engine's limits, with the backend's defaults where the config says -1 (CPU: 2%
// noise and 3 s; CUDA: nvbench's 0.5% and 15 s).
ServerLimits LimitsFor(const ServerConfig& config, const Backend& backend);
// The limits must admit a request that leaves every field to the server's defaults.
absl::Status CheckDefaultsFit(const Engine& engine);
// A sticky device error (illegal address, ECC...) leaves the CUDA context unusable: the first
// one sets `exit_code` to kExitDeviceLost and raises SIGTERM, so the process stops serving and
// the orchestrator restarts it.
void StopOnDeviceLoss(Engine* engine, std::atomic<int>* exit_code);

// Step 4. The device facts as gpubench_device_info / gpubench_build_info.
void PublishDeviceInfo(const Backend& backend, Metrics* metrics);
// Serves `registry` on config.listen (threads and a request timeout so that idle connections
// cannot hold every thread; basic auth with the token file's tokens). Null when the listen
// address is empty. Writes the bound port to port_file.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(
    const ServerConfig::MetricsEndpoint& config, std::shared_ptr<prometheus::Registry> registry);

// Step 5. The services' parts; each is null (or empty) when its flag is empty.
absl::StatusOr<std::unique_ptr<TunedDefaultsStore>> OpenTunedDefaults(const ServerConfig& config,
                                                                    Engine* engine);
absl::StatusOr<std::unique_ptr<Scheduler>> CreateScheduler(const ServerConfig& config,
                                                           Engine* engine);
// The health monitor of the scheduled plan's results (docs/health.md): null without
// --schedule_plan. The expectations file and the state under --state_dir (created if missing)
// must be readable; a corrupt state file is an error naming it.
absl::StatusOr<std::unique_ptr<health::HealthMonitor>> OpenHealth(const ServerConfig& config,
                                                                  const Backend& backend);
absl::StatusOr<std::optional<TokenAuthenticator>> LoadTokens(const ServerConfig& config);
// Insecure credentials without TLS; otherwise the checked PEM material (mTLS with a client CA).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const ServerConfig::Tls& tls);
// GetServerInfo's part that main knows: build, start time (now), transport limits, TLS.
v1::GetServerInfoResponse ServerInfoFor(const ServerConfig& config);

// Step 6. Builds and starts the gRPC server: `service`, health (serving), reflection (with the
// health service's descriptors), no SO_REUSEPORT, the abuse limits, the RPC metrics
// interceptor. Writes the bound port to config.port_file. A taken or refused address is an
// error naming it.
struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};
absl::StatusOr<StartedServer> StartGrpcServer(const ServerConfig& config,
                                              std::shared_ptr<grpc::ServerCredentials> credentials,
                                              grpc::Service* service, Metrics* metrics);

// Step 7. SIGTERM and SIGINT blocked in this thread and every thread started after it (call
// first); WaitForStopSignal takes one of them and returns its number.
sigset_t BlockStopSignals();
int WaitForStopSignal(const sigset_t& stop_signals);
// Health NOT_SERVING, scheduler stopped, the engine given the grace period (none after a device
// fault), the server shut down. Returns the process exit code: kExitStopped or `exit_code`.
int DrainAndStop(const ServerConfig& config, int exit_code, grpc::Server* server,
                 Scheduler* scheduler, Engine* engine);

// Diagnostics. Binds a TCP socket to `host_port` ("127.0.0.1:50051", "[::]:50051",
// "localhost:9464") the way a server would (no SO_REUSEPORT) and releases it. OK when that works;
// otherwise an error naming the address and the reason (FAILED_PRECONDITION "address ... is
// already in use", ...).
absl::Status CheckAddressBindable(const std::string& host_port);

// Parses the PEM certificate chain and private key and checks that the key belongs to the
// certificate; `client_ca_pem`, when not empty, must hold at least one certificate.
// INVALID_ARGUMENT naming what is wrong.
absl::Status CheckTlsMaterial(const std::string& cert_chain_pem, const std::string& private_key_pem,
                              const std::string& client_ca_pem);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_STARTUP_H_
