// Test helpers: a real gpubench_server child process on ephemeral loopback ports, and the CLI.
#ifndef GPUBENCH_TESTS_E2E_SERVER_PROCESS_H_
#define GPUBENCH_TESTS_E2E_SERVER_PROCESS_H_

#include <dirent.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace gpubench {

// A running gpubench_server child process.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra_flags, bool wait_for_port = true) {
    dir_ = ::testing::TempDir() + "/gpubench_e2e_" + std::to_string(getpid()) + "_" +
           std::to_string(counter_++);
    // A folder of an earlier run with the same pid would hand out its stale port file.
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string port_file = dir_ + "/port";
    std::vector<std::string> args = {GPUBENCH_SERVER_BINARY,
                                     "--listen=127.0.0.1:0",
                                     "--port_file=" + port_file,
                                     "--backend=cpu",
                                     "--metrics_listen=127.0.0.1:0",
                                     "--metrics_port_file=" + dir_ + "/metrics_port",
                                     "--default_min_time_seconds=0.01",
                                     "--default_timeout_seconds=1"};
    args.insert(args.end(), extra_flags.begin(), extra_flags.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = dir_ + "/server.log";
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 200 && port_ == 0 && wait_for_port; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::ifstream in(port_file);
      in >> port_;
    }
    if (wait_for_port) {
      EXPECT_GT(port_, 0) << "server did not start; log: " << Log();
    }
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel(target(), grpc::InsecureChannelCredentials());
  }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  // The bound metrics port (from --metrics_port_file), or 0.
  int metrics_port() const {
    int port = 0;
    std::ifstream(dir_ + "/metrics_port") >> port;
    return port;
  }
  // Resident memory of the server now, in bytes (0 when it cannot be read).
  int64_t RssBytes() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
    }
    return 0;
  }
  std::string Log() const {
    std::ifstream in(dir_ + "/server.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Sends `signal` and waits up to `wait` for the exit; returns the exit status or -1.
  int SignalAndWait(int signal, std::chrono::seconds wait) {
    kill(pid_, signal);
    const auto until = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  static inline int counter_ = 0;
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// The live gpubench_worker children of the server `parent` (from /proc); with `role`, only those
// started with --role=`role` ("catalog": one per device; "user": a device's user-kernel worker
// while it runs).
inline std::set<pid_t> WorkerPidsOfRole(pid_t parent, const std::string& role = "") {
  std::set<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    const std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t close = text.rfind(')');
    // The kernel keeps 15 characters of the name: gpubench_worker exactly.
    if (close == std::string::npos || text.find("(gpubench_worker)") == std::string::npos) continue;
    std::vector<std::string> rest = absl::StrSplit(text.substr(close + 2), ' ');
    if (rest.size() < 2 || rest[0] == "Z" || atoi(rest[1].c_str()) != parent) continue;
    std::ifstream cmdline(absl::StrCat("/proc/", pid, "/cmdline"));
    const std::string args((std::istreambuf_iterator<char>(cmdline)), {});
    if (role.empty() ||
        absl::StrContains(args, absl::StrCat("--role=", role, std::string(1, '\0')))) {
      pids.insert(pid);
    }
  }
  closedir(proc);
  return pids;
}

// The value of the first series of `name` in the exposition `body` whose labels contain every one
// of `labels`, or -1.
inline double SeriesValue(const std::string& body, const std::string& name,
                          const std::vector<std::string>& labels) {
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (!absl::StartsWith(line, name + "{")) continue;
    bool all = true;
    for (const std::string& l : labels) all = all && absl::StrContains(line, l);
    if (all) return std::stod(std::string(line.substr(line.rfind(' ') + 1)));
  }
  return -1;
}

struct CliResult {
  int exit_code;
  std::string out;
};

// Runs `binary` with `args` through the shell; `out` is its stdout, plus its stderr when
// `with_stderr`.
inline CliResult RunProgram(const std::string& binary, const std::string& args,
                            bool with_stderr = false) {
  const std::string command =
      absl::StrCat(binary, " ", args, with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  CliResult r{-1, ""};
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs the CLI with `args` (RunProgram's contract).
inline CliResult RunCli(const std::string& args, bool with_stderr = false) {
  return RunProgram(GPUBENCH_CLI_BINARY, args, with_stderr);
}

}  // namespace gpubench

#endif  // GPUBENCH_TESTS_E2E_SERVER_PROCESS_H_
