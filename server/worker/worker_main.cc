// gpubench_worker: owns one device's context for gpubench_server and measures the runs the
// server sends it (docs/workers.md). Started by the server, never by hand: it talks the private
// protocol of proto/gpubench/worker/v1/worker.proto on an inherited socket (--channel_fd) and
// exits when the server closes it or dies. A fault here (a sticky CUDA error, a signal, a hung
// kernel the server kills) ends this process only.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/build_info.h"
#include "common/command_line.h"
#include "common/parallel.h"
#include "kernels/catalog.h"
#include "kernels/test_faults.h"
#include "server/engine/measurement.h"
#include "server/worker/open_backend.h"
#include "server/worker/user_compiler.h"
#include "server/worker/user_kernel_run.h"
#include "server/worker/wire.h"
#include "server/worker/worker_exit.h"

ABSL_FLAG(int, channel_fd, 3, "The socket to the server (inherited).");
ABSL_FLAG(int, device, 0, "The device this worker measures on.");
ABSL_FLAG(std::string, role, "catalog",
          "catalog: catalog runs (the device's own context); user: user kernels and the built-ins "
          "--compare measures beside them, in a context of their own (docs/workers.md).");
ABSL_FLAG(int, parent_pid, 0, "The server's pid: the worker exits when its parent is another.");
ABSL_FLAG(std::string, backend, "auto", "auto | cpu | cuda, as the server's --backend.");
ABSL_FLAG(int, cpu_devices, 1, "As the server's flag.");
ABSL_FLAG(int, cpu_threads, 0, "As the server's flag.");
ABSL_FLAG(std::string, cpu_device_name, "", "As the server's flag.");
ABSL_FLAG(std::string, cpu_uuid_seed, "", "As the server's flag (already defaulted).");
ABSL_FLAG(double, cpu_min_launch_seconds, 0, "As the server's flag.");
ABSL_FLAG(int, heartbeat_interval_ms, 200, "How often the worker says it is alive.");
ABSL_FLAG(int64_t, device_malloc_heap_bytes, 8 << 20,
          "The device-side malloc heap of this worker's context (CUDA).");
ABSL_FLAG(int64_t, device_printf_fifo_bytes, 1 << 20,
          "The device-side printf FIFO of this worker's context (CUDA).");
ABSL_FLAG(bool, test_fault_kernels, false, "Register the test-only fault variants.");
ABSL_FLAG(int, test_device_lost_exit_delay_ms, 0,
          "TEST ONLY: wait this long between answering a run with a sticky device error and "
          "exiting, as tearing a CUDA context down may take (a CPU backend's exit is instant).");
ABSL_FLAG(bool, allow_user_kernels, false,
          "As the server's flag, given to user-kernel workers (--role=user) only: without it, the "
          "worker refuses user kernel runs.");
ABSL_FLAG(int64_t, max_user_kernel_bytes, int64_t{1} << 20, "As the server's flag.");
ABSL_FLAG(std::string, user_kernel_include_dir, gpubench::DefaultUserKernelIncludeDir(),
          "Where NVRTC finds cuda_fp16.h and cuda_bf16.h (the CUDA toolkit's include/).");
ABSL_FLAG(int, user_kernel_cache_entries, 64, "Compiled user kernels kept (LRU).");
ABSL_FLAG(int64_t, user_kernel_cache_bytes, int64_t{64} << 20,
          "Bytes of compiled user kernels kept (LRU).");

namespace gpubench {
namespace {

namespace wv1 = worker::v1;

// The worker's outbound side: responses and heartbeats from several threads, one frame at a time.
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  int fd() const { return fd_; }
  void Send(const wv1::Response& response) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!WriteFrame(fd_, response).ok()) _exit(kWorkerExitChannelLost);  // the server is gone
  }

 private:
  const int fd_;
  std::mutex mu_;
};

// One run at a time on its own thread, so the reader can answer queries and take a Cancel while
// it measures. A user-kernel worker (`user`) also holds the compile cache.
class Runner {
 public:
  Runner(Backend* backend, Channel* channel, bool user) : backend_(backend), channel_(channel) {
    if (user) {
      compiler_.emplace(
          UserCompilerOptions{.max_code_bytes = absl::GetFlag(FLAGS_max_user_kernel_bytes),
                              .cache_entries = absl::GetFlag(FLAGS_user_kernel_cache_entries),
                              .cache_bytes = absl::GetFlag(FLAGS_user_kernel_cache_bytes),
                              .include_dir = absl::GetFlag(FLAGS_user_kernel_include_dir)});
    }
  }

  uint64_t progress() const { return progress_.load(); }
  bool running() const { return running_.load(); }
  // The last run taken (its request's id) and whether it still compiles a user kernel. Read the
  // id first: Start sets `compiling` before the id, so a heartbeat naming a run sees its state.
  uint64_t run_id() const { return run_id_.load(); }
  bool compiling() const { return compiling_.load(); }

  void Start(uint64_t id, const wv1::Run& run) {
    if (running_.exchange(true)) {
      wv1::Response busy;
      busy.set_id(id);
      StatusToWire(absl::FailedPreconditionError("the worker is already measuring a run"),
                   busy.mutable_status());
      channel_->Send(busy);
      return;
    }
    if (thread_.joinable()) thread_.join();
    compiling_.store(true);  // until the run is decoded (not a user kernel) or compiled
    run_id_.store(id);
    cancelled_.store(false);
    thread_ = std::thread([this, id, run] { Measure(id, run); });
  }

  void Cancel(uint64_t run_request_id) {
    if (run_id_.load() == run_request_id) cancelled_.store(true);
  }

 private:
  void Measure(uint64_t id, const wv1::Run& run) {
    wv1::Response response;
    response.set_id(id);
    absl::StatusOr<RunResult> result = MeasureDecoded(run);
    compiling_.store(false);
    const bool device_lost = !result.ok() && IsDeviceLost(result.status());
    if (result.ok()) {
      response.set_result(EncodeRunResult(*result));
    }
    StatusToWire(result.status(), response.mutable_status());
    // Before the reply: the server may send the next run as soon as it has this one.
    if (!device_lost) running_.store(false);
    channel_->Send(response);
    if (device_lost) {
      // The context is poisoned: every later run here would fail. The server restarts us.
      spdlog::critical("device {} lost: {}; exiting", device_index_,
                       std::string(result.status().message()));
      if (const int delay = absl::GetFlag(FLAGS_test_device_lost_exit_delay_ms); delay > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      }
      _exit(kWorkerExitDeviceLost);
    }
  }

  absl::StatusOr<RunResult> MeasureDecoded(const wv1::Run& run) {
    absl::StatusOr<RunSpec> spec = DecodeRunSpec(run.spec());
    if (!spec.ok()) return spec.status();
    absl::StatusOr<DeviceInfo> device = DecodeDeviceInfo(run.device());
    if (!device.ok()) return device.status();
    device_index_ = spec->device_index;
    // The server routes by role (RoleFor); a run of the other role here is a server bug that
    // would put user code in the catalog context, or a catalog run in the user one: refused.
    const bool user_run = spec->user_kernel != nullptr || spec->user_context;
    if (user_run != compiler_.has_value()) {
      return absl::InternalError(absl::StrCat(
          "the ", compiler_.has_value() ? "user-kernel" : "catalog", " worker of device ",
          device_index_, " was sent a ", user_run ? "user-kernel" : "catalog",
          " run; the server routes each to its own worker"));
    }
    const absl::Time deadline = run.deadline_unix_nanos() == 0
                                    ? absl::InfiniteFuture()
                                    : absl::FromUnixNanos(run.deadline_unix_nanos());
    if (spec->user_kernel == nullptr) compiling_.store(false);
    // Polled at every sample and phase boundary: also the progress the heartbeats carry.
    auto cancelled = [this, deadline] {
      progress_.fetch_add(1);
      return cancelled_.load() || absl::Now() >= deadline;
    };
    absl::StatusOr<RunResult> result =
        spec->user_kernel != nullptr
            ? MeasureUserKernel(*spec, *device, cancelled)
            : MeasureRun(*backend_, *spec, *device, cancelled, &pool_);
    if (!result.ok() && absl::IsCancelled(result.status()) && absl::Now() >= deadline) {
      return absl::DeadlineExceededError("deadline passed while the run was measuring");
    }
    return result;
  }

  absl::StatusOr<RunResult> MeasureUserKernel(const RunSpec& spec, const DeviceInfo& device,
                                              const CancelledFn& cancelled) {
    if (!absl::GetFlag(FLAGS_allow_user_kernels)) {
      return absl::FailedPreconditionError(
          "this worker was started without --allow_user_kernels");
    }
    // The compile is over when this runs: the server's compile limit no longer applies.
    return MeasureUserKernelRun(*backend_, &*compiler_, spec, device, cancelled, &pool_, [this] {
      compiling_.store(false);
      progress_.fetch_add(1);
    });
  }

  Backend* const backend_;
  Channel* const channel_;
  std::optional<UserCompiler> compiler_;  // user-kernel workers only
  ParallelPool pool_{0};
  std::atomic<uint64_t> progress_{0};
  std::atomic<bool> running_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<uint64_t> run_id_{0};
  std::atomic<bool> compiling_{false};
  int device_index_ = 0;
  std::thread thread_;
};

void Reply(Channel* channel, uint64_t id, const absl::Status& status, wv1::Response response = {}) {
  response.set_id(id);
  StatusToWire(status, response.mutable_status());
  channel->Send(response);
}

void Answer(const wv1::Request& request, Backend* backend, Runner* runner, Channel* channel) {
  const uint64_t id = request.id();
  switch (request.kind_case()) {
    case wv1::Request::kHello: {
      wv1::Response response;
      wv1::HelloReply* hello = response.mutable_hello();
      hello->set_protocol_version(wv1::PROTOCOL_VERSION_CURRENT);
      hello->set_backend(std::string(backend->name()));
      hello->set_device_count(backend->device_count());
      hello->set_capabilities(EncodeCapabilities(backend->capabilities()));
      hello->set_pid(getpid());
      hello->set_version(absl::StrCat(kGpubenchVersion, " ", kGpubenchGitRevision));
      const bool same = request.hello().protocol_version() == wv1::PROTOCOL_VERSION_CURRENT;
      Reply(channel, id,
            same ? absl::OkStatus()
                 : absl::FailedPreconditionError("the server speaks another worker protocol"),
            response);
      return;
    }
    case wv1::Request::kDescribe: {
      absl::StatusOr<DeviceInfo> info = backend->Describe(request.describe().device());
      wv1::Response response;
      if (info.ok()) response.set_device_info(EncodeDeviceInfo(*info));
      Reply(channel, id, info.status(), response);
      return;
    }
    case wv1::Request::kOccupancy: {
      absl::StatusOr<const KernelVariant*> k = FindKernel(request.occupancy().kernel());
      wv1::Response response;
      if (k.ok()) {
        response.set_blocks(backend->MaxActiveBlocksPerMultiprocessor(
            **k, request.occupancy().device(), request.occupancy().block_size()));
      }
      Reply(channel, id, k.status(), response);
      return;
    }
    case wv1::Request::kCheckLaunchSize: {
      const wv1::CheckLaunchSize& c = request.check_launch_size();
      absl::StatusOr<const KernelVariant*> k = FindKernel(c.kernel());
      RunShape shape{.elements = c.elements(), .m = c.m(), .n = c.n(), .k = c.k()};
      Reply(channel, id, k.ok() ? backend->CheckLaunchSize(**k, shape) : k.status());
      return;
    }
    case wv1::Request::kRun:
      runner->Start(id, request.run());
      return;
    case wv1::Request::kCancel:
      runner->Cancel(request.cancel().run_request_id());
      return;
    case wv1::Request::kReleaseBuffers:
      // Between runs (the server sends it after a run's reply); the cache is thread-safe.
      backend->ReleaseCachedBuffers(request.release_buffers().device());
      Reply(channel, id, absl::OkStatus());
      return;
    case wv1::Request::KIND_NOT_SET:
      break;
  }
  Reply(channel, id, absl::InvalidArgumentError("unknown worker request"));
}

int Main() {
  const int fd = absl::GetFlag(FLAGS_channel_fd);
  const int device = absl::GetFlag(FLAGS_device);
  int type = 0;
  socklen_t length = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0) {
    std::cerr << "gpubench_worker: no channel to a server on fd " << fd
              << ": gpubench_server starts its workers; run gpubench_server instead\n";
    return kWorkerExitBadStartup;
  }
  // The server may die without closing the channel cleanly (SIGKILL): take the worker with it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (absl::GetFlag(FLAGS_parent_pid) != 0 && getppid() != absl::GetFlag(FLAGS_parent_pid)) {
    return kWorkerExitChannelLost;  // the parent died before PDEATHSIG was set
  }
  signal(SIGPIPE, SIG_IGN);
  // Under memory pressure the kernel's OOM killer takes this process before the server.
  if (FILE* f = std::fopen("/proc/self/oom_score_adj", "w"); f != nullptr) {
    std::fputs("1000", f);
    std::fclose(f);
  }
  const std::string role = absl::GetFlag(FLAGS_role);
  if (role != "catalog" && role != "user") {
    std::cerr << "gpubench_worker: --role must be catalog or user (got '" << role << "')\n";
    return kWorkerExitBadStartup;
  }
  spdlog::set_pattern(absl::StrCat("[%Y-%m-%d %H:%M:%S.%e] [worker ", device,
                                   role == "user" ? " user" : "", "] [%l] %v"));
  if (absl::GetFlag(FLAGS_test_fault_kernels)) {
    if (absl::Status s = RegisterTestFaultVariants(); !s.ok()) {
      spdlog::critical("{}", s.ToString());
      return kWorkerExitBadStartup;
    }
  }
  CpuBackendOptions cpu{.devices = absl::GetFlag(FLAGS_cpu_devices),
                        .threads_per_device = absl::GetFlag(FLAGS_cpu_threads),
                        .device_name = absl::GetFlag(FLAGS_cpu_device_name),
                        .uuid_seed = absl::GetFlag(FLAGS_cpu_uuid_seed),
                        .min_launch_seconds = absl::GetFlag(FLAGS_cpu_min_launch_seconds)};
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      OpenBackend(absl::GetFlag(FLAGS_backend), cpu);
  Channel channel(fd);
  if (!backend.ok()) {
    spdlog::critical("{}", backend.status().ToString());
    return kWorkerExitBadStartup;
  }
  if (device < 0 || device >= (*backend)->device_count()) {
    spdlog::critical("device {} out of range: {} device(s)", device, (*backend)->device_count());
    return kWorkerExitBadStartup;
  }
  if (absl::Status limits = (*backend)->ApplyDeviceLimits(
          device, {.malloc_heap_bytes = absl::GetFlag(FLAGS_device_malloc_heap_bytes),
                   .printf_fifo_bytes = absl::GetFlag(FLAGS_device_printf_fifo_bytes)});
      !limits.ok()) {
    spdlog::critical("device {}: {}", device, limits.ToString());
    return kWorkerExitBadStartup;
  }

  Runner runner(backend->get(), &channel, role == "user");
  std::thread heartbeat([&] {
    const auto interval = std::chrono::milliseconds(absl::GetFlag(FLAGS_heartbeat_interval_ms));
    for (;;) {
      wv1::Response beat;
      beat.mutable_heartbeat()->set_run_request_id(runner.run_id());
      beat.mutable_heartbeat()->set_compiling(runner.compiling());
      beat.mutable_heartbeat()->set_progress(runner.progress());
      beat.mutable_heartbeat()->set_running(runner.running());
      channel.Send(beat);
      std::this_thread::sleep_for(interval);
    }
  });
  heartbeat.detach();
  for (;;) {
    wv1::Request request;
    absl::Status read = ReadFrame(fd, &request);
    if (!read.ok()) {
      // The server closed the channel (shutdown) or died: nothing left to measure for. _exit:
      // a run in flight may hold the device; the OS tears the context down.
      if (read.message() != "closed") spdlog::warn("channel: {}", read.ToString());
      _exit(read.message() == "closed" ? kWorkerExitStopped : kWorkerExitChannelLost);
    }
    Answer(request, backend->get(), &runner, &channel);
  }
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  gpubench::ProgramSpec spec;
  spec.program = "gpubench_worker";
  spec.description =
      "gpubench_worker: measures one device for gpubench_server, which starts it (never run it "
      "by hand; see docs/workers.md).";
  const std::vector<std::string> args = gpubench::ParseCommandLineOrExit(argc, argv, spec);
  if (args.size() > 1) {
    std::cerr << "gpubench_worker: unexpected argument\n";
    return gpubench::kWorkerExitBadStartup;
  }
  return gpubench::Main();
}
