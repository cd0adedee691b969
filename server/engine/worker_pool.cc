#include "server/engine/worker_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/sizes.h"
#include "kernels/user_kernel.h"
#include "server/worker/wire.h"
#include "server/worker/worker_exit.h"

extern char** environ;

namespace gpubench {

namespace wv1 = worker::v1;

const char* WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kStarting:
      return "starting";
    case WorkerState::kReady:
      return "ready";
    case WorkerState::kRestarting:
      return "restarting";
    case WorkerState::kUnhealthy:
      return "unhealthy";
    case WorkerState::kStopped:
      return "stopped";
    case WorkerState::kIdle:
      return "idle";
  }
  return "unknown";
}

const char* WorkerRoleName(WorkerRole role) {
  return role == WorkerRole::kUser ? "user" : "catalog";
}

WorkerRole RoleFor(const RunSpec& spec) {
  return spec.user_kernel != nullptr || spec.user_context ? WorkerRole::kUser
                                                          : WorkerRole::kCatalog;
}

namespace {

constexpr absl::Duration kTick = absl::Milliseconds(20);
constexpr absl::Duration kQueryTimeout = absl::Seconds(10);
constexpr absl::Duration kQueryWaitForStart = absl::Seconds(5);
// A worker asked to exit (its channel closed) that is still there after this is killed.
constexpr absl::Duration kExitGrace = absl::Seconds(1);
// A worker that reported a sticky device error exits at once; tearing a CUDA context down may take
// a while, so it is killed only past this.
constexpr absl::Duration kStickyExitGrace = absl::Seconds(10);

// "SIGSEGV" for 11.
std::string SignalName(int signal_number) {
  const char* abbrev = sigabbrev_np(signal_number);
  return abbrev != nullptr ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", signal_number);
}

// "add_f32 16Mi cold", what a fault message says the worker was doing.
std::string RunLabel(const RunSpec& spec) {
  return absl::StrCat(spec.kernel->name, " ", FormatElementCount(spec.elements), " ",
                      CacheModeName(spec.cache_mode));
}

int64_t ResidentBytes(pid_t pid) {
  std::FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/statm").c_str(), "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

}  // namespace

// One device's worker of one role: its process, channel, watchdog and restarts. Thread-safe.
class WorkerProcess {
 public:
  WorkerProcess(int device, WorkerRole role, const WorkerOptions* options,
                std::function<void(const WorkerEvent&)> on_event)
      : device_(device), role_(role), options_(options), on_event_(std::move(on_event)) {}
  ~WorkerProcess() { Stop(); }

  WorkerRole role() const { return role_; }

  // A user-kernel worker: no process yet (kIdle); the watchdog runs from now on, and the first
  // run that needs the worker starts it (EnsureStarted).
  void StartIdle() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = WorkerState::kIdle;
    }
    watchdog_ = std::thread([this] { Watch(); });
  }

  // Starts an idle worker and waits for its Hello, or for the start or stop in progress. OK once
  // it is ready; its start's error otherwise (the worker is idle again, the next run tries anew).
  absl::Status EnsureStarted(const CancelledFn& cancelled) {
    std::unique_lock<std::mutex> lock(mu_);
    return EnsureStartedLocked(lock, cancelled);
  }

  // Spawns the worker and waits for its Hello. The watchdog runs from then on.
  absl::StatusOr<wv1::HelloReply> Start() {
    absl::StatusOr<wv1::HelloReply> hello = Spawn();
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = hello.ok() ? WorkerState::kReady : WorkerState::kStopped;
    }
    if (hello.ok()) {
      Emit(Event(WorkerState::kReady));
      watchdog_ = std::thread([this] { Watch(); });
    }
    return hello;
  }

  void Stop() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      state_ = WorkerState::kStopped;
      if (fd_ >= 0) shutdown(fd_, SHUT_WR);  // the worker reads EOF and exits
    }
    cv_.notify_all();
    // First the watchdog, the only thread that spawns after Start: a start it is making sees
    // kStopped and gives up, so nothing spawns after this.
    if (watchdog_.joinable()) watchdog_.join();
    const pid_t pid = this->pid();
    if (pid > 0) {
      // A worker blocked in a kernel never reads its channel: a second, then SIGKILL.
      const absl::Time until = absl::Now() + absl::Seconds(1);
      while (absl::Now() < until && kill(pid, 0) == 0 && !exited_.load()) {
        absl::SleepFor(kTick);
      }
      kill(pid, SIGKILL);
    }
    if (reader_.joinable()) reader_.join();
    if (watchdog_.joinable()) watchdog_.join();
  }

  // Shutdown: stopped for good (Exited counts no fault and restarts nothing), the worker killed
  // with `why` as its reason.
  void Abandon(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = WorkerState::kStopped;
      Kill("shutdown", why);
    }
    cv_.notify_all();
  }

  pid_t pid() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pid_;
  }
  WorkerState state() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  std::string unhealthy_reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unhealthy_reason_;
  }

  // A query answered by the worker's reader (concurrently with a run). Waits a little for a
  // restarting worker.
  absl::StatusOr<wv1::Response> Call(wv1::Request request) {
    std::shared_ptr<Pending> pending;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const absl::Time give_up = absl::Now() + kQueryWaitForStart;
      while (state_ != WorkerState::kReady) {
        if (state_ == WorkerState::kUnhealthy || state_ == WorkerState::kStopped ||
            absl::Now() >= give_up) {
          return NotReady();
        }
        cv_.wait_for(lock, absl::ToChronoMilliseconds(kTick));
      }
      pending = Register(&request);
    }
    Send(request);
    return Await(pending, absl::Now() + kQueryTimeout, nullptr);
  }

  absl::StatusOr<RunResult> Run(const RunSpec& spec, const DeviceInfo& device,
                                absl::Time deadline, const CancelledFn& cancelled) {
    wv1::Request request;
    request.mutable_run()->set_spec(EncodeRunSpec(spec));
    request.mutable_run()->set_device(EncodeDeviceInfo(device));
    if (deadline != absl::InfiniteFuture()) {
      request.mutable_run()->set_deadline_unix_nanos(absl::ToUnixNanos(deadline));
    }
    std::shared_ptr<Pending> pending;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // A restarting worker: the queued run waits for its successor; an idle one is started.
      if (absl::Status ready = EnsureStartedLocked(lock, cancelled); !ready.ok()) return ready;
      pending = Register(&request);
      run_ = InFlight{.request_id = request.id(),
                      .deadline = deadline,
                      .label = RunLabel(spec),
                      .last_progress_at = absl::Now(),
                      .started_at = absl::Now(),
                      .user_kernel = spec.user_kernel != nullptr};
    }
    Send(request);
    absl::StatusOr<wv1::Response> response = Await(pending, absl::InfiniteFuture(), &cancelled);
    {
      std::lock_guard<std::mutex> lock(mu_);
      run_.reset();
      idle_since_ = absl::Now();
    }
    if (!response.ok()) return response.status();
    absl::Status status = StatusFromWire(response->status());
    if (!status.ok()) {
      if (IsDeviceLost(status)) {
        return absl::Status(
            status.code(),
            absl::StrCat(status.message(), "; ", Who(), Name(),
                         " exits to drop the poisoned context and is ",
                         role_ == WorkerRole::kUser ? "started again by the next user-kernel run"
                                                    : "restarted"));
      }
      return status;
    }
    return DecodeRunResult(response->result());
  }

 private:
  struct Pending {
    bool done = false;
    wv1::Response response;
    absl::Status failure;  // the worker died before answering
  };
  struct InFlight {
    uint64_t request_id = 0;
    absl::Time deadline;
    std::string label;
    absl::Time last_progress_at;
    uint64_t progress = 0;
    absl::Time started_at;
    bool user_kernel = false;
    // From this run's own heartbeats (their run_request_id): whether one has come yet and
    // whether the worker still compiles its user kernel. Until one says the compile is over, a
    // user kernel is bounded by the compile limit, not by the stall rule.
    bool seen = false;
    bool compiling = true;
    bool Compiling() const { return user_kernel && (!seen || compiling); }
  };

  // "GPU-9830e61e-… (device 0)", or "device 0" before a description.
  std::string Name() const {
    std::lock_guard<std::mutex> lock(name_mu_);
    return uuid_.empty() ? absl::StrCat("device ", device_)
                         : absl::StrCat(uuid_, " (device ", device_, ")");
  }
  // What messages call this worker, before its Name().
  const char* Who() const {
    return role_ == WorkerRole::kUser ? "the user-kernel worker of " : "the worker of ";
  }

  // See EnsureStarted. mu_ held by `lock`; released while a start runs.
  absl::Status EnsureStartedLocked(std::unique_lock<std::mutex>& lock,
                                   const CancelledFn& cancelled) {
    // A worker that answered a run with a sticky device error exits next: the run waits for its
    // successor rather than being sent to it.
    while (state_ != WorkerState::kReady || retiring_ || exit_expected_at_.has_value()) {
      if (state_ == WorkerState::kUnhealthy || state_ == WorkerState::kStopped) {
        return NotReady();
      }
      if (cancelled()) return absl::CancelledError("run cancelled while its worker restarted");
      if (state_ == WorkerState::kIdle) {
        // The watchdog starts it: a worker's PR_SET_PDEATHSIG fires when the thread that spawned
        // it ends, and the watchdog lives as long as this object, a run's thread may not.
        state_ = WorkerState::kStarting;
        start_requested_ = true;
        const uint64_t generation = start_generation_;
        cv_.notify_all();
        cv_.wait(lock, [&] {
          return start_generation_ != generation || state_ == WorkerState::kStopped;
        });
        if (state_ == WorkerState::kStopped) return NotReady();
        if (!last_start_.ok()) return last_start_;
        continue;
      }
      cv_.wait_for(lock, absl::ToChronoMilliseconds(kTick));
    }
    return absl::OkStatus();
  }

  // An idle user-kernel worker's start, on the watchdog's thread for the run that asked for it
  // (start_requested_). A failed start
  // leaves it idle (the next run tries again) and is counted (fault "start") but, as every fault
  // of this role, not toward the device's health.
  absl::Status StartOnDemand() {
    absl::StatusOr<wv1::HelloReply> hello = Spawn();
    WorkerEvent event = Event(WorkerState::kReady);
    absl::Status status = absl::OkStatus();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == WorkerState::kStopped) return NotReady();  // Spawn gave up: shutting down
      if (hello.ok()) {
        state_ = WorkerState::kReady;
        idle_since_ = absl::Now();
        event.reason = absl::StrCat(Who(), Name(), " started for a user-kernel run");
      } else {
        state_ = WorkerState::kIdle;
        event.state = state_;
        event.fault = "start";
        event.reason = std::string(hello.status().message());
        status = hello.status();
      }
      cv_.notify_all();
    }
    if (!hello.ok()) spdlog::error("{}", event.reason);  // Spawn logged a start
    Emit(event);
    return status;
  }

 public:
  void SetUuid(const std::string& uuid) {
    std::lock_guard<std::mutex> lock(name_mu_);
    uuid_ = uuid;
  }

 private:
  absl::Status NotReady() const {  // mu_ held
    if (state_ == WorkerState::kUnhealthy) {
      return absl::UnavailableError(absl::StrCat("device ", device_, " is unhealthy: ",
                                                 unhealthy_reason_));
    }
    if (state_ == WorkerState::kStopped) {
      return absl::UnavailableError("server is shutting down; not accepting runs");
    }
    return absl::UnavailableError(
        absl::StrCat(Who(), "device ", device_, " is restarting; retry shortly"));
  }

  std::shared_ptr<Pending> Register(wv1::Request* request) {  // mu_ held
    request->set_id(++next_id_);
    auto pending = std::make_shared<Pending>();
    pending_[request->id()] = pending;
    return pending;
  }

  void Send(const wv1::Request& request) {
    int fd;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fd = fd_;
    }
    std::lock_guard<std::mutex> lock(write_mu_);
    // A failed write means the worker is gone: the reader sees it and fails the pending call.
    if (absl::Status s = WriteFrame(fd, request); !s.ok()) {
      spdlog::warn("{}device {}: {}", Who(), device_, s.ToString());
    }
  }

  absl::StatusOr<wv1::Response> Await(const std::shared_ptr<Pending>& pending, absl::Time until,
                                      const CancelledFn* cancelled) {
    bool cancel_sent = false;
    std::unique_lock<std::mutex> lock(mu_);
    while (!pending->done) {
      if (absl::Now() >= until || (state_ == WorkerState::kStopped && cancelled == nullptr)) {
        for (auto it = pending_.begin(); it != pending_.end(); ++it) {
          if (it->second == pending) {
            pending_.erase(it);
            break;
          }
        }
        if (state_ == WorkerState::kStopped) return NotReady();
        return absl::DeadlineExceededError(
            absl::StrCat(Who(), "device ", device_, " did not answer in time"));
      }
      if (cancelled != nullptr && !cancel_sent && run_.has_value() && (*cancelled)()) {
        wv1::Request cancel;
        cancel.mutable_cancel()->set_run_request_id(run_->request_id);
        cancel_sent = true;
        lock.unlock();
        Send(cancel);
        lock.lock();
        continue;
      }
      cv_.wait_for(lock, absl::ToChronoMilliseconds(kTick));
    }
    if (!pending->failure.ok()) return pending->failure;
    return pending->response;
  }

  absl::StatusOr<wv1::HelloReply> Spawn() {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return absl::InternalError(absl::StrCat("socketpair: ", strerror(errno)));
    }
    std::vector<std::string> args = {options_->binary, absl::StrCat("--device=", device_),
                                     absl::StrCat("--parent_pid=", getpid()), "--channel_fd=3",
                                     absl::StrCat("--role=", WorkerRoleName(role_))};
    args.insert(args.end(), options_->args.begin(), options_->args.end());
    if (role_ == WorkerRole::kUser) {
      args.insert(args.end(), options_->user_args.begin(), options_->user_args.end());
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 3);  // dup2 clears close-on-exec
    // The worker writes nothing to stdout but device-side printf (a user kernel's), which would
    // otherwise fill the server's log at every synchronization: it goes to /dev/null.
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    // Its own process group, so a terminal's Ctrl-C reaches the server alone (which then stops
    // its workers); the server's blocked stop signals are not inherited.
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    pid_t pid = -1;
    const int rc =
        posix_spawn(&pid, options_->binary.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(sv[1]);
    if (rc != 0) {
      close(sv[0]);
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot start the worker ", options_->binary, ": ", strerror(rc),
          " (--worker_binary; it is installed beside gpubench_server)"));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      pid_ = pid;
      fd_ = sv[0];
      kill_reason_.clear();
      exit_expected_at_.reset();
      last_heartbeat_at_ = absl::Now();
      exited_.store(false);
    }
    if (reader_.joinable()) reader_.join();
    reader_ = std::thread([this, fd = sv[0], pid] { Read(fd, pid); });

    wv1::Request hello;
    hello.mutable_hello()->set_protocol_version(wv1::PROTOCOL_VERSION_CURRENT);
    std::shared_ptr<Pending> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending = Register(&hello);
    }
    Send(hello);
    absl::StatusOr<wv1::Response> reply =
        Await(pending, absl::Now() + options_->start_timeout, nullptr);
    absl::Status status = reply.ok() ? StatusFromWire(reply->status()) : reply.status();
    if (status.ok() && !reply->has_hello()) status = absl::DataLossError("no Hello reply");
    if (!status.ok()) {
      kill(pid, SIGKILL);
      if (reader_.joinable()) reader_.join();
      return absl::UnavailableError(
          absl::StrCat(Who(), "device ", device_, " did not start: ", status.message(),
                       last_exit_.empty() ? "" : " (", last_exit_, last_exit_.empty() ? "" : ")"));
    }
    spdlog::info("{} of device {} started: pid {}, backend {}",
                 role_ == WorkerRole::kUser ? "user-kernel worker" : "worker", device_, pid,
                 reply->hello().backend());
    return reply->hello();
  }

  // The channel's reader: answers to pending calls, heartbeats; at the end of the channel, the
  // worker's exit.
  void Read(int fd, pid_t pid) {
    absl::Status end;
    for (;;) {
      wv1::Response response;
      end = ReadFrame(fd, &response);
      if (!end.ok()) break;
      std::lock_guard<std::mutex> lock(mu_);
      if (response.has_heartbeat()) {
        const wv1::Heartbeat& beat = response.heartbeat();
        last_heartbeat_at_ = absl::Now();
        // Only the run's own heartbeats count: one sent before the worker took the run carries
        // the previous run's progress, which would look like this run's.
        if (run_.has_value() && beat.run_request_id() == run_->request_id &&
            (!run_->seen || beat.progress() != run_->progress ||
             beat.compiling() != run_->compiling)) {
          run_->seen = true;
          run_->progress = beat.progress();
          run_->compiling = beat.compiling();
          run_->last_progress_at = absl::Now();
        }
        continue;
      }
      auto it = pending_.find(response.id());
      if (it == pending_.end()) continue;  // a query that timed out
      if (run_.has_value() && response.id() == run_->request_id &&
          IsDeviceLost(StatusFromWire(response.status()))) {
        // The worker exits next; with a user kernel, that exit is its doing, not the device's.
        exit_expected_at_ = absl::Now();
        if (run_->user_kernel) user_kernel_exit_expected_ = true;
      }
      it->second->response = std::move(response);
      it->second->done = true;
      pending_.erase(it);
      cv_.notify_all();
    }
    // The channel ended: the worker exited, was killed, or broke the protocol (kill it then).
    kill(pid, SIGKILL);
    int wait_status = 0;
    while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    exited_.store(true);
    Exited(fd, wait_status);
  }

  // How the worker ended, in words and as a fault kind.
  std::pair<std::string, std::string> DescribeExit(int wait_status) const {  // mu_ held
    if (!kill_reason_.empty()) return {kill_fault_, absl::StrCat("was killed: ", kill_reason_)};
    if (WIFSIGNALED(wait_status)) {
      return {"signal", absl::StrCat("died with ", SignalName(WTERMSIG(wait_status)))};
    }
    const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
    if (code == kWorkerExitDeviceLost) return {"device_lost", "exited after a sticky device error"};
    return {"exit", absl::StrCat("exited with code ", code)};
  }

  void Exited(int fd, int wait_status) {
    std::vector<std::shared_ptr<Pending>> failed;
    WorkerEvent event = Event(WorkerState::kStarting);
    bool retired = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      close(fd);
      if (fd_ == fd) fd_ = -1;
      pid_ = -1;
      auto [fault, how] = DescribeExit(wait_status);
      last_exit_ = how;
      const bool was_retiring = std::exchange(retiring_, false);
      for (auto& [id, p] : pending_) failed.push_back(p);
      pending_.clear();
      if (state_ == WorkerState::kStopped || state_ == WorkerState::kStarting) {
        // Shutting down, or a start that failed (Spawn reports it).
        for (auto& p : failed) {
          p->failure = absl::UnavailableError(absl::StrCat(Who(), Name(), " ", how));
          p->done = true;
        }
        cv_.notify_all();
        return;
      }
      const absl::Time now = absl::Now();
      std::string message;
      if (was_retiring && !run_.has_value()) {
        // Stopped for being idle (its channel closed, no run in flight): not a fault.
        retired = true;
        state_ = WorkerState::kIdle;
        message = absl::StrCat(Who(), Name(), " stopped after ",
                               absl::FormatDuration(options_->user_worker_idle),
                               " without a run (--user_kernel_worker_idle_seconds); the next "
                               "user-kernel run starts it again");
      } else if (role_ == WorkerRole::kUser) {
        // Whatever ends the user-kernel worker says nothing about the device: user code ran in
        // its context. It is started again by the next run that needs it, at once (no backoff:
        // each start is a run's) and its faults never count toward the unhealthy verdict.
        if (run_.has_value() || exit_expected_at_.has_value()) fault = "user_kernel";
        state_ = WorkerState::kIdle;
        message = absl::StrCat(
            Who(), Name(), " ", how, run_.has_value() ? absl::StrCat(" during ", run_->label) : "",
            "; restarted by the next user-kernel run (a fault of the user-kernel "
            "worker: not counted toward the device's health)");
      } else {
        // A user kernel that traps, hangs or kills its worker says nothing about the device: the
        // worker restarts at once and the fault does not count toward the unhealthy verdict.
        // (User kernels run in the user-kernel worker; this holds where one reached this one.)
        const bool user_fault =
            (run_.has_value() && run_->user_kernel) || user_kernel_exit_expected_;
        const int recent = user_fault ? CountFaults(now) : RecordFault(now);
        std::string during = run_.has_value() ? absl::StrCat(" during ", run_->label) : "";
        std::string next;
        if (user_fault) {
          state_ = WorkerState::kRestarting;
          restart_at_ = now;
          next = "; restarted (a user kernel's fault: not counted toward the device's health)";
          fault = "user_kernel";
        } else if (recent >= options_->max_faults) {
          state_ = WorkerState::kUnhealthy;
          MarkUnhealthy(now,
                        absl::StrFormat("%d worker faults in %s, the last: the worker %s%s", recent,
                                        absl::FormatDuration(options_->fault_window), how, during));
          next = absl::StrCat("; the device is marked unhealthy (", recent, " faults in ",
                              absl::FormatDuration(options_->fault_window), ")");
        } else {
          state_ = WorkerState::kRestarting;
          // A run broke the worker: the next queued run needs a new one now. A worker that ends
          // with no run in flight may be crash-looping: 0.5 s doubling up to max_backoff.
          const absl::Duration backoff = run_.has_value() ? absl::ZeroDuration() : Backoff(recent);
          restart_at_ = now + backoff;
          next = backoff == absl::ZeroDuration()
                     ? "; restarted"
                     : absl::StrCat("; restarted after ", absl::FormatDuration(backoff));
        }
        message = absl::StrCat(Who(), Name(), " ", how, during, next);
      }
      user_kernel_exit_expected_ = false;
      exit_expected_at_.reset();
      for (auto& p : failed) {
        p->failure = absl::UnavailableError(message);
        p->done = true;
      }
      event.state = state_;
      if (!retired) event.fault = fault;
      event.reason = message;
      cv_.notify_all();
    }
    if (retired) {
      spdlog::info("{}", event.reason);
    } else {
      spdlog::error("{}", event.reason);
    }
    Emit(event);
  }

  // Counts a fault at `now`; returns the faults within the window. mu_ held.
  int RecordFault(absl::Time now) {
    faults_.push_back(now);
    return CountFaults(now);
  }
  // The faults within the window, without adding one. mu_ held.
  int CountFaults(absl::Time now) {
    while (!faults_.empty() && faults_.front() < now - options_->fault_window) faults_.pop_front();
    return static_cast<int>(faults_.size());
  }

  void MarkUnhealthy(absl::Time now, std::string reason) {  // mu_ held
    state_ = WorkerState::kUnhealthy;
    unhealthy_reason_ = std::move(reason);
    retry_at_ = options_->unhealthy_retry > absl::ZeroDuration() ? now + options_->unhealthy_retry
                                                                 : absl::InfiniteFuture();
  }

  absl::Duration Backoff(int recent_faults) const {
    return std::min(options_->max_backoff,
                    absl::Milliseconds(500) * (1 << std::clamp(recent_faults - 1, 0, 16)));
  }

  void Kill(const std::string& fault, const std::string& reason) {  // mu_ held
    if (pid_ <= 0 || !kill_reason_.empty()) return;
    kill_fault_ = fault;
    kill_reason_ = reason;
    kill(pid_, SIGKILL);
  }

  // Every tick: hung or runaway workers are killed; a restarting (or retried unhealthy) one is
  // started once its time comes, and an idle one when a run asks (every spawn after Start is here).
  void Watch() {
    for (;;) {
      bool start = false;
      bool on_demand = false;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, absl::ToChronoMilliseconds(kTick));
        if (state_ == WorkerState::kStopped) return;
        const absl::Time now = absl::Now();
        if (state_ == WorkerState::kReady && pid_ > 0) {
          if (now - last_heartbeat_at_ > options_->heartbeat_timeout) {
            Kill("heartbeat", absl::StrCat("no heartbeat for ",
                                           absl::FormatDuration(now - last_heartbeat_at_)));
          } else if (run_.has_value() && run_->deadline != absl::InfiniteFuture() &&
                     now > run_->deadline + options_->deadline_grace) {
            Kill("hang", absl::StrCat("still running ", absl::FormatDuration(now - run_->deadline),
                                      " after the run's deadline"));
          } else if (exit_expected_at_.has_value() && now - *exit_expected_at_ > kStickyExitGrace) {
            Kill("device_lost", "it did not exit after a sticky device error");
          } else if (run_.has_value() && run_->Compiling() &&
                     now - run_->started_at > options_->user_kernel_compile_limit) {
            Kill("user_kernel", absl::StrCat("the user kernel's compile ran over ",
                                             absl::FormatDuration(
                                                 options_->user_kernel_compile_limit),
                                             " (--user_kernel_compile_seconds)"));
          } else if (run_.has_value() && !run_->Compiling() &&
                     now - run_->last_progress_at > options_->stall_timeout) {
            // A user kernel still compiling is bounded by the compile limit above, not by this.
            Kill("stall", absl::StrCat("no progress for ",
                                       absl::FormatDuration(now - run_->last_progress_at),
                                       " (a kernel that never returns?)"));
          } else if (options_->max_memory_bytes > 0) {
            const int64_t rss = ResidentBytes(pid_);
            if (rss > options_->max_memory_bytes) {
              Kill("memory", absl::StrCat("resident memory ", rss >> 20, " MiB over its limit of ",
                                          options_->max_memory_bytes >> 20,
                                          " MiB (--worker_max_memory_bytes)"));
            }
          }
          if (role_ == WorkerRole::kUser && !run_.has_value() && kill_reason_.empty()) {
            RetireWhenIdle(now);
          }
        }
        if ((state_ == WorkerState::kRestarting && now >= restart_at_) ||
            (state_ == WorkerState::kUnhealthy && now >= retry_at_)) {
          state_ = WorkerState::kStarting;
          start = true;
        }
        on_demand = std::exchange(start_requested_, false);
      }
      if (start) Restart();
      if (on_demand) {
        absl::Status started = StartOnDemand();
        std::lock_guard<std::mutex> lock(mu_);
        last_start_ = std::move(started);
        ++start_generation_;
        cv_.notify_all();
      }
    }
  }

  // A user-kernel worker without a run for user_worker_idle is asked to exit (its channel
  // closed), and killed if it has not after kExitGrace; Exited then leaves it idle. mu_ held.
  void RetireWhenIdle(absl::Time now) {
    if (!retiring_ && now - idle_since_ >= options_->user_worker_idle) {
      retiring_ = true;
      retire_started_ = now;
      if (fd_ >= 0) shutdown(fd_, SHUT_WR);  // the worker reads EOF and exits
    } else if (retiring_ && now - retire_started_ > kExitGrace) {
      Kill("idle", "it did not exit when idle");
    }
  }

  void Restart() {
    absl::StatusOr<wv1::HelloReply> hello = Spawn();
    WorkerEvent event = Event(WorkerState::kStarting);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == WorkerState::kStopped) return;
      if (hello.ok()) {
        state_ = WorkerState::kReady;
        event.reason = "worker restarted";
      } else {
        // A failed start is a fault too: it moves towards unhealthy like any other.
        const absl::Time now = absl::Now();
        const int recent = RecordFault(now);
        if (recent >= options_->max_faults) {
          MarkUnhealthy(now, std::string(hello.status().message()));
        } else {
          state_ = WorkerState::kRestarting;
          restart_at_ = now + Backoff(recent);
        }
        event.fault = "start";
        event.reason = std::string(hello.status().message());
      }
      event.state = state_;
      cv_.notify_all();
    }
    if (!hello.ok()) spdlog::error("{}", event.reason);
    Emit(event);
  }

  WorkerEvent Event(WorkerState state) const {
    WorkerEvent event;
    event.device = device_;
    event.role = role_;
    event.state = state;
    return event;
  }

  void Emit(const WorkerEvent& event) {
    if (on_event_) on_event_(event);
  }

  const int device_;
  const WorkerRole role_;
  const WorkerOptions* const options_;
  const std::function<void(const WorkerEvent&)> on_event_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  WorkerState state_ = WorkerState::kStarting;
  pid_t pid_ = -1;
  int fd_ = -1;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::optional<InFlight> run_;
  absl::Time last_heartbeat_at_;
  std::string kill_fault_, kill_reason_;
  std::string last_exit_;
  std::deque<absl::Time> faults_;
  bool user_kernel_exit_expected_ = false;  // a user kernel's run answered with a sticky error
  // When any run answered with one: the worker exits next. Unset while no exit is expected.
  std::optional<absl::Time> exit_expected_at_;
  // A user-kernel worker: when its last run ended (or it started); asked to exit for being idle
  // (and when); a device queue's thread is starting it.
  absl::Time idle_since_;
  bool retiring_ = false;
  absl::Time retire_started_;
  // A run asked the watchdog to start the idle worker; each start it makes on demand is counted
  // and its outcome kept for the run waiting on it.
  bool start_requested_ = false;
  uint64_t start_generation_ = 0;
  absl::Status last_start_;
  absl::Time restart_at_, retry_at_ = absl::InfiniteFuture();
  std::string unhealthy_reason_;
  std::atomic<bool> exited_{false};

  mutable std::mutex name_mu_;
  std::string uuid_;

  std::mutex write_mu_;
  std::thread reader_;
  std::thread watchdog_;
};

// The supervisor's Backend: the workers answer what the engine asks of a backend outside a run.
class WorkerBackend final : public Backend {
 public:
  WorkerBackend(WorkerPool* pool, BackendKind kind, BackendCapabilities capabilities)
      : pool_(pool), kind_(kind), capabilities_(capabilities) {}

  BackendKind kind() const override { return kind_; }
  BackendCapabilities capabilities() const override { return capabilities_; }
  std::string SampleMethod(bool, int, TimerStrategy, bool) const override {
    return "measured in the device's worker process";  // MeasureRun there sets the real text
  }
  int device_count() const override { return pool_->device_count(); }

  absl::StatusOr<DeviceInfo> Describe(int device) const override {
    if (device < 0 || device >= device_count()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device index ", device, " out of range: ", device_count(), " device(s)"));
    }
    wv1::Request request;
    request.mutable_describe()->set_device(device);
    absl::StatusOr<wv1::Response> response = pool_->workers_[device]->Call(request);
    absl::Status status = response.ok() ? StatusFromWire(response->status()) : response.status();
    std::lock_guard<std::mutex> lock(mu_);
    if (status.ok()) {
      absl::StatusOr<DeviceInfo> info = DecodeDeviceInfo(response->device_info());
      if (info.ok()) {
        last_[device] = *info;
        pool_->workers_[device]->SetUuid(info->uuid);
        if (device < static_cast<int>(pool_->user_workers_.size())) {
          pool_->user_workers_[device]->SetUuid(info->uuid);
        }
      }
      return info;
    }
    // A worker that is down still has a device the fleet must see: its last description.
    if (auto it = last_.find(device); it != last_.end()) return it->second;
    return status;
  }

  int MaxActiveBlocksPerMultiprocessor(const KernelVariant& variant, int device,
                                       int block_size) const override {
    if (device < 0 || device >= device_count()) return 0;
    wv1::Request request;
    request.mutable_occupancy()->set_kernel(std::string(variant.name));
    request.mutable_occupancy()->set_device(device);
    request.mutable_occupancy()->set_block_size(block_size);
    absl::StatusOr<wv1::Response> response = pool_->workers_[device]->Call(request);
    if (!response.ok() || !StatusFromWire(response->status()).ok()) return 0;
    return response->blocks();
  }

  // Asked of the first worker that answers; where none does, the worker's Open checks again.
  absl::Status CheckLaunchSize(const KernelVariant& variant, const RunShape& shape) const override {
    // Not in the workers' catalogs; the worker refuses it on a CPU backend, whose limit this is.
    if (IsUserKernel(variant)) return absl::OkStatus();
    wv1::Request request;
    wv1::CheckLaunchSize* c = request.mutable_check_launch_size();
    c->set_kernel(std::string(variant.name));
    c->set_elements(shape.elements);
    c->set_m(shape.m);
    c->set_n(shape.n);
    c->set_k(shape.k);
    for (const auto& worker : pool_->workers_) {
      absl::StatusOr<wv1::Response> response = worker->Call(request);
      if (response.ok()) return StatusFromWire(response->status());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Session>> Open(const DeviceInfo&, const KernelVariant&,
                                                const LaunchGeometry&, const HostData&) override {
    return absl::FailedPreconditionError("runs are measured in the device's worker process");
  }

  // Waits for the answer, so that the next run's admission sees the memory free. A worker that
  // does not answer (down, restarting) holds nothing: its successor starts empty.
  void ReleaseCachedBuffers(int device) override {
    if (device < 0 || device >= device_count()) return;
    wv1::Request request;
    request.mutable_release_buffers()->set_device(device);
    absl::StatusOr<wv1::Response> response = pool_->workers_[device]->Call(request);
    if (!response.ok()) {
      spdlog::warn("device {}: releasing the buffers kept for a sweep: {}", device,
                   response.status().ToString());
    }
  }

 private:
  WorkerPool* const pool_;
  const BackendKind kind_;
  const BackendCapabilities capabilities_;  // the worker's, from its Hello
  mutable std::mutex mu_;
  mutable std::map<int, DeviceInfo> last_;
};

absl::StatusOr<std::unique_ptr<WorkerPool>> WorkerPool::Start(
    WorkerOptions options, std::function<void(const WorkerEvent&)> on_event) {
  std::unique_ptr<WorkerPool> pool(new WorkerPool());
  pool->options_ = std::move(options);
  auto first = std::make_unique<WorkerProcess>(0, WorkerRole::kCatalog, &pool->options_, on_event);
  absl::StatusOr<wv1::HelloReply> hello = first->Start();
  if (!hello.ok()) return hello.status();
  pool->backend_name_ = hello->backend();
  absl::StatusOr<BackendCapabilities> capabilities = DecodeCapabilities(hello->capabilities());
  if (!capabilities.ok()) return capabilities.status();
  pool->capabilities_ = *capabilities;
  pool->workers_.push_back(std::move(first));
  for (int d = 1; d < hello->device_count(); ++d) {
    auto worker =
        std::make_unique<WorkerProcess>(d, WorkerRole::kCatalog, &pool->options_, on_event);
    absl::StatusOr<wv1::HelloReply> started = worker->Start();
    if (!started.ok()) return started.status();
    pool->workers_.push_back(std::move(worker));
  }
  // The user-kernel workers start idle: no process, no context, until a run needs one.
  if (pool->options_.user_kernels) {
    for (int d = 0; d < hello->device_count(); ++d) {
      auto worker =
          std::make_unique<WorkerProcess>(d, WorkerRole::kUser, &pool->options_, on_event);
      worker->StartIdle();
      pool->user_workers_.push_back(std::move(worker));
    }
  }
  return pool;
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Abandon(int device, const std::string& why) {
  // Whichever of the two has the run in flight; the other, if idle or between runs, is stopped
  // too (the server is going).
  if (device >= 0 && device < device_count()) workers_[device]->Abandon(why);
  if (device >= 0 && device < static_cast<int>(user_workers_.size())) {
    user_workers_[device]->Abandon(why);
  }
}

void WorkerPool::Stop() {
  for (auto& w : user_workers_) w->Stop();
  for (auto& w : workers_) w->Stop();
}

std::unique_ptr<Backend> WorkerPool::MakeBackend() {
  return std::make_unique<WorkerBackend>(
      this, backend_name_ == "cuda" ? BackendKind::kCuda : BackendKind::kCpu, capabilities_);
}

std::set<pid_t> WorkerPool::Pids() const {
  std::set<pid_t> pids;
  for (const auto* workers : {&workers_, &user_workers_}) {
    for (const auto& w : *workers) {
      if (const pid_t p = w->pid(); p > 0) pids.insert(p);
    }
  }
  return pids;
}

pid_t WorkerPool::Pid(int device, WorkerRole role) const {
  const auto& workers = role == WorkerRole::kUser ? user_workers_ : workers_;
  if (device < 0 || device >= static_cast<int>(workers.size())) return -1;
  const pid_t p = workers[device]->pid();
  return p > 0 ? p : -1;
}

bool WorkerPool::Healthy(int device) const {
  if (device < 0 || device >= device_count()) return false;
  const WorkerState s = workers_[device]->state();
  return s != WorkerState::kUnhealthy && s != WorkerState::kStopped;
}

absl::Status WorkerPool::Available(int device) const {
  if (device < 0 || device >= device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("device_index ", device, " out of range"));
  }
  if (workers_[device]->state() == WorkerState::kUnhealthy) {
    return absl::UnavailableError(
        absl::StrCat("device ", device, " is unhealthy: ", workers_[device]->unhealthy_reason()));
  }
  return absl::OkStatus();
}

// The worker of the run's role: user kernels (and --compare's built-ins) never run in the catalog
// worker's context, catalog runs never in the user-kernel worker's.
static absl::StatusOr<WorkerProcess*> WorkerFor(
    const RunSpec& spec, const std::vector<std::unique_ptr<WorkerProcess>>& catalog,
    const std::vector<std::unique_ptr<WorkerProcess>>& user) {
  const bool user_role = RoleFor(spec) == WorkerRole::kUser;
  const auto& workers = user_role ? user : catalog;
  if (spec.device_index < 0 || spec.device_index >= static_cast<int>(workers.size())) {
    if (user_role && user.empty()) {
      return absl::FailedPreconditionError(
          "user kernels are off on this server: it must be started with --allow_user_kernels "
          "(docs/user-kernels.md)");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("device_index ", spec.device_index, " out of range"));
  }
  return workers[spec.device_index].get();
}

absl::Status WorkerPool::Prepare(const RunSpec& spec, const CancelledFn& cancelled) {
  if (RoleFor(spec) != WorkerRole::kUser) return absl::OkStatus();
  absl::StatusOr<WorkerProcess*> worker = WorkerFor(spec, workers_, user_workers_);
  if (!worker.ok()) return worker.status();
  return (*worker)->EnsureStarted(cancelled);
}

absl::StatusOr<RunResult> WorkerPool::Measure(const RunSpec& spec, const DeviceInfo& device,
                                              absl::Time deadline, const CancelledFn& cancelled) {
  absl::StatusOr<WorkerProcess*> worker = WorkerFor(spec, workers_, user_workers_);
  if (!worker.ok()) return worker.status();
  return (*worker)->Run(spec, device, deadline, cancelled);
}

}  // namespace gpubench
