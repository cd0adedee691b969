// HTTP/2 rapid reset (CVE-2023-44487) from a raw-frame flooder that never reads
// (bench/h2flood), against the server behind the optional proxy sidecar
// (deploy/kubernetes/components/h2-proxy: Debian's nginx with the same nginx.conf), on loopback,
// bounded in streams and time. Figures: bench/results/loadtest-cpu.md.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "e2e/raw_http2.h"
#include "e2e/server_process.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

std::string FindNginx() {
  for (const char* p : {"/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

int64_t RssOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// nginx with the sidecar's nginx.conf, its listen port and upstream moved to `port` and
// `upstream_port`, its pid and temporary files under a test folder.
class Nginx {
 public:
  Nginx(const std::string& binary, int port, int upstream_port) : port_(port) {
    dir_ = ::testing::TempDir() + "/gpubench_h2proxy_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ifstream in(std::string(GPUBENCH_SOURCE_DIR) +
                     "/deploy/kubernetes/components/h2-proxy/nginx.conf");
    std::stringstream conf;
    conf << in.rdbuf();
    const std::string text = absl::StrReplaceAll(
        conf.str(), {{"listen 50051", absl::StrCat("listen 127.0.0.1:", port)},
                     {"127.0.0.1:50052", absl::StrCat("127.0.0.1:", upstream_port)},
                     {"/tmp/", dir_ + "/"}});
    std::ofstream(dir_ + "/nginx.conf") << text;
    std::vector<std::string> args = {binary, "-p",         dir_, "-c", dir_ + "/nginx.conf",
                                     "-g",   "daemon off;"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = dir_ + "/nginx.log";
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 100; ++i) {  // listening
      const int fd = ConnectLoopback(port);
      if (fd >= 0) {
        close(fd);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "nginx did not start: " << Log();
  }
  ~Nginx() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }
  // The master and its worker(s).
  int64_t RssBytes() const {
    int64_t total = RssOf(pid_);
    std::ifstream children("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) +
                           "/children");
    pid_t child;
    while (children >> child) total += RssOf(child);
    return total;
  }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }
  std::string Log() const {
    std::ifstream in(dir_ + "/nginx.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_;
};

// A number field of h2flood's one-line JSON.
int64_t JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  int64_t value = -1;
  const std::string rest = json.substr(at + key.size() + 4);
  (void)absl::SimpleAtoi(rest.substr(0, rest.find_first_of(",}")), &value);
  return value;
}

// 16 connections that never read, flooding reset streams through the proxy for 8 s (at most 2M
// streams), while a normal client calls ListKernels through the same proxy every 100 ms. The
// server's memory stays where it was and the normal client is served; the proxy stays bounded.
TEST(RapidReset, RawFloodThroughTheProxyLeavesTheServerAlone) {
  const std::string nginx = FindNginx();
  if (nginx.empty()) {
    GTEST_SKIP() << "nginx is not installed (apt-get install nginx-light): the proxy sidecar's "
                    "flood test did not run";
  }
  ServerProcess server({});
  ASSERT_GT(server.port(), 0);
  Nginx proxy(nginx, FreeLoopbackPort(), server.port());
  auto stub = v1::Benchmark::NewStub(
      grpc::CreateChannel(proxy.target(), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + seconds(10));
    v1::ListKernelsResponse resp;
    const grpc::Status s = stub->ListKernels(&c, {}, &resp);
    ASSERT_TRUE(s.ok()) << "not served through the proxy: " << s.error_message() << "\n"
                        << proxy.Log();
  }
  const int64_t server_before = server.RssBytes();
  const int64_t proxy_before = proxy.RssBytes();
  std::atomic<bool> flooding{true};
  std::string flood_json;
  std::thread flood([&] {
    flood_json = RunProgram(GPUBENCH_H2FLOOD_BINARY,
                            absl::StrCat("--target=", proxy.target(),
                                         " --connections=16 --seconds=8 --max_streams=2000000"
                                         " --settle_seconds=2 --watch_pid=",
                                         server.pid()))
                     .out;
    flooding = false;
  });
  int served = 0, failed = 0;
  int64_t proxy_peak = proxy_before;
  while (flooding.load()) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + seconds(5));
    v1::ListKernelsResponse resp;
    ++(stub->ListKernels(&c, {}, &resp).ok() ? served : failed);
    proxy_peak = std::max(proxy_peak, proxy.RssBytes());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  flood.join();
  const int64_t streams = JsonNumber(flood_json, "streams_sent");
  const int64_t server_peak = JsonNumber(flood_json, "peak_rss_bytes");
  std::cerr << "through the proxy: " << flood_json << "normal calls served " << served
            << ", failed " << failed << "; server RSS " << (server_before >> 20) << " -> peak "
            << (server_peak >> 20) << " MiB; proxy RSS " << (proxy_before >> 20) << " -> peak "
            << (proxy_peak >> 20) << " MiB\n";
  EXPECT_GE(streams, 100000) << flood_json;  // the flood happened
  EXPECT_GT(served, 20);
  EXPECT_LE(failed, served / 5 + 1);
  // Without the proxy the same flood takes the server past 2 GiB (OOM-killed there).
  EXPECT_LT(server_peak - server_before, int64_t{256} << 20) << "the flood reached the server";
  EXPECT_LT(proxy_peak - proxy_before, int64_t{256} << 20);
  EXPECT_TRUE(proxy.alive()) << proxy.Log();
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + seconds(10));
  v1::ListKernelsResponse resp;
  EXPECT_TRUE(stub->ListKernels(&c, {}, &resp).ok()) << "not serving after the flood";
}

}  // namespace
}  // namespace gpubench
