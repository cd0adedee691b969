// Device workers through the real server, CLI, health service and /metrics (CPU backend): a
// fault or a hung kernel ends that device's worker only; restarts, the unhealthy transition and
// the other device's runs.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <fstream>
#include <future>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/raw_http2.h"
#include "tests/e2e/server_process.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::set<pid_t> WorkerPids(pid_t parent) { return WorkerPidsOfRole(parent); }

std::string Scrape(const ServerProcess& server) {
  return HttpGet(server.metrics_port(), "/metrics");
}

CliResult Health(const ServerProcess& server, const std::string& service) {
  return RunProgram(GPUBENCH_HEALTH_CHECK_BINARY, absl::StrCat(server.target(), " ", service),
                    /*with_stderr=*/true);
}

std::string RunArgs(const ServerProcess& server, const std::string& args) {
  return absl::StrCat("run ", args, " --target=", server.target());
}

bool Verified(const CliResult& r) {
  return r.exit_code == 0 && absl::StrContains(r.out, "verification  pass");
}

TEST(Workers, EachDeviceHasItsOwnWorkerProcess) {
  ServerProcess server({"--cpu_devices=2"});
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(WorkerPids(server.pid()).size(), 2u) << server.Log();
  EXPECT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki --device=1"), true)));
  EXPECT_EQ(Health(server, "gpubench/device/0").out, "SERVING\n");
  EXPECT_EQ(Health(server, "gpubench/device/1").out, "SERVING\n");
  const std::string metrics = Scrape(server);
  EXPECT_EQ(SeriesValue(metrics, "gpubench_device_up", {"device=\"0\""}), 1) << metrics;
  EXPECT_EQ(SeriesValue(metrics, "gpubench_device_up", {"device=\"1\""}), 1);
}

// Each fault kind on device 0: the run answers UNAVAILABLE saying how the worker ended, the
// server (its pid, its memory) is untouched, a new worker takes the next verified run.
TEST(Workers, EachFaultEndsOnlyItsWorker) {
  ServerProcess server({"--cpu_devices=2", "--test_fault_kernels", "--worker_stall_seconds=1",
                        "--worker_max_faults=100"});
  ASSERT_GT(server.port(), 0);
  ASSERT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki"), true)));
  const struct {
    const char* kernel;
    const char* says;
    const char* fault;
  } faults[] = {
      {"test_fault_trap", "died with SIGABRT", "signal"},
      {"test_fault_oob", "died with SIGSEGV", "signal"},
      {"test_fault_exit", "exited with code 7", "exit"},
      {"test_fault_hang", "was killed: no progress for", "stall"},
  };
  for (const auto& f : faults) {
    SCOPED_TRACE(f.kernel);
    const std::set<pid_t> before = WorkerPids(server.pid());
    const CliResult failed = RunCli(RunArgs(server, absl::StrCat(f.kernel, " --size=1Ki")), true);
    EXPECT_NE(failed.exit_code, 0);
    EXPECT_THAT(failed.out, HasSubstr("UNAVAILABLE"));
    EXPECT_THAT(failed.out, HasSubstr(absl::StrCat("(device 0) ", f.says)));
    EXPECT_THAT(failed.out, HasSubstr(absl::StrCat("during ", f.kernel, " 1Ki cold; restarted")));
    const CliResult next = RunCli(RunArgs(server, "add_f32 --size=4Ki"), true);
    EXPECT_TRUE(Verified(next)) << next.out;
    const std::set<pid_t> after = WorkerPids(server.pid());
    EXPECT_EQ(after.size(), 2u);
    EXPECT_NE(before, after);  // device 0's worker is a new process
    EXPECT_GT(SeriesValue(Scrape(server), "gpubench_worker_restarts_total",
                          {"device=\"0\"", absl::StrCat("fault=\"", f.fault, "\"")}),
              0);
  }
  EXPECT_EQ(kill(server.pid(), 0), 0);
  EXPECT_EQ(SeriesValue(Scrape(server), "gpubench_worker_restarts_total", {"device=\"1\""}), -1);
}

// A host allocation without bound: the memory guard kills the worker (the stall watchdog is set
// far out, so a slow, loaded host cannot make it the one that fires); the server does not grow.
TEST(Workers, AnAllocationStormIsKilledByTheMemoryGuard) {
  ServerProcess server({"--test_fault_kernels", "--worker_max_memory_bytes=536870912"});
  ASSERT_GT(server.port(), 0);
  ASSERT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki"), true)));
  const int64_t rss_before = server.RssBytes();
  const CliResult failed = RunCli(RunArgs(server, "test_fault_alloc --size=1Ki"), true);
  EXPECT_THAT(failed.out, HasSubstr("was killed: resident memory"));
  EXPECT_THAT(failed.out, HasSubstr("over its limit of 512 MiB (--worker_max_memory_bytes)"));
  EXPECT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki"), true)));
  EXPECT_EQ(SeriesValue(Scrape(server), "gpubench_worker_restarts_total", {"fault=\"memory\""}), 1);
  EXPECT_LT(server.RssBytes(), rss_before + (int64_t{64} << 20));
}

// Device 1's sweep runs while device 0's worker is faulted three ways: every item verified.
TEST(Workers, AFaultOnOneDeviceNeverDisturbsTheOther) {
  ServerProcess server({"--cpu_devices=2", "--test_fault_kernels", "--worker_stall_seconds=1",
                        "--worker_max_faults=100"});
  ASSERT_GT(server.port(), 0);
  auto sweep = std::async(std::launch::async, [&] {
    return RunCli(absl::StrCat("sweep --kernels=add_f32,add_f32x4,add_f16 --sizes=1Ki,4Ki,16Ki "
                               "--device=1 --format=csv --target=",
                               server.target()),
                  true);
  });
  for (const char* kernel : {"test_fault_trap", "test_fault_oob", "test_fault_hang"}) {
    EXPECT_NE(RunCli(RunArgs(server, absl::StrCat(kernel, " --size=1Ki")), true).exit_code, 0);
  }
  const CliResult swept = sweep.get();
  EXPECT_EQ(swept.exit_code, 0) << swept.out;
  int rows = 0;
  for (absl::string_view line : absl::StrSplit(swept.out, '\n')) {
    // A result row: ...,verification,backend,device,
    if (!absl::StartsWith(line, "add_")) continue;
    ++rows;
    EXPECT_THAT(std::string(line), HasSubstr(",pass,cpu,1,")) << line;
  }
  EXPECT_EQ(rows, 9) << swept.out;
  EXPECT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki --device=0"), true)));
}

// Repeated faults mark the device unhealthy: its runs answer UNAVAILABLE at once, its health
// names say NOT_SERVING, gpubench_device_up is 0; the other device serves on; after the retry
// delay a new worker brings it back.
TEST(Workers, RepeatedFaultsMarkTheDeviceUnhealthyUntilTheRetry) {
  ServerProcess server({"--cpu_devices=2", "--test_fault_kernels", "--worker_max_faults=2",
                        "--worker_unhealthy_retry_seconds=3"});
  ASSERT_GT(server.port(), 0);
  EXPECT_THAT(RunCli(RunArgs(server, "test_fault_exit --size=1Ki"), true).out,
              HasSubstr("restarted"));
  EXPECT_THAT(RunCli(RunArgs(server, "test_fault_exit --size=1Ki"), true).out,
              HasSubstr("the device is marked unhealthy (2 faults in 10m)"));
  const auto start = std::chrono::steady_clock::now();
  const CliResult refused = RunCli(RunArgs(server, "add_f32 --size=1Ki"), true);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_THAT(refused.out, HasSubstr("UNAVAILABLE: device 0 is unhealthy: 2 worker faults"));
  EXPECT_EQ(Health(server, "gpubench/device/0").out, "NOT_SERVING\n");
  EXPECT_EQ(Health(server, "gpubench/device/1").out, "SERVING\n");
  EXPECT_EQ(Health(server, "").out, "SERVING\n");  // the server itself serves on
  const std::string metrics = Scrape(server);
  EXPECT_EQ(SeriesValue(metrics, "gpubench_device_up", {"device=\"0\""}), 0) << metrics;
  EXPECT_EQ(
      SeriesValue(metrics, "gpubench_worker_restarts_total", {"device=\"0\"", "fault=\"exit\""}),
      2);
  EXPECT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki --device=1"), true)));
  // The devices RPC still lists the failing GPU.
  EXPECT_THAT(RunCli("devices --target=" + server.target()).out, HasSubstr("device 0"));
  // The retry comes 3 s after the device was marked; a loaded host may take longer to start it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < until &&
         Health(server, "gpubench/device/0").out != "SERVING\n") {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(Health(server, "gpubench/device/0").out, "SERVING\n") << server.Log();
  EXPECT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki"), true)));
}

// A hung run whose client set a deadline: the worker is killed once the deadline and the grace
// have passed, well before the stall timeout.
TEST(Workers, AHungRunIsKilledAfterItsDeadline) {
  ServerProcess server({"--test_fault_kernels", "--worker_stall_seconds=600",
                        "--worker_deadline_grace_seconds=0.5"});
  ASSERT_GT(server.port(), 0);
  const CliResult hung =
      RunCli(RunArgs(server, "test_fault_hang --size=1Ki --rpc_timeout_seconds=1"), true);
  EXPECT_EQ(hung.exit_code, 3) << hung.out;  // the client's deadline
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until &&
         SeriesValue(Scrape(server), "gpubench_worker_restarts_total", {"fault=\"hang\""}) < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(SeriesValue(Scrape(server), "gpubench_worker_restarts_total", {"fault=\"hang\""}), 1);
  EXPECT_THAT(server.Log(), HasSubstr("after the run's deadline"));
  EXPECT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki"), true)));
}

TEST(Workers, AStopSignalEndsEveryWorker) {
  ServerProcess server({"--cpu_devices=2"});
  ASSERT_GT(server.port(), 0);
  const std::set<pid_t> workers = WorkerPids(server.pid());
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(server.SignalAndWait(SIGTERM, std::chrono::seconds(10)), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (pid_t w : workers) {
    // Gone, or at most a zombie of a parent that exited (init reaps it).
    std::ifstream stat(absl::StrCat("/proc/", w, "/stat"));
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    EXPECT_TRUE(text.empty() || absl::StrContains(text, ") Z ")) << text;
  }
}

TEST(Workers, TheFaultKernelsAreNotInTheProductionCatalog) {
  ServerProcess server({});
  ASSERT_GT(server.port(), 0);
  EXPECT_THAT(RunCli("kernels --target=" + server.target()).out, Not(HasSubstr("test_fault")));
  EXPECT_THAT(RunCli(RunArgs(server, "test_fault_trap --size=1Ki"), true).out,
              HasSubstr("NOT_FOUND"));
}

TEST(Workers, InProcessModeStillMeasures) {
  ServerProcess server({"--worker_mode=in_process", "--cpu_devices=2"});
  ASSERT_GT(server.port(), 0);
  EXPECT_TRUE(WorkerPids(server.pid()).empty());
  EXPECT_TRUE(Verified(RunCli(RunArgs(server, "add_f32 --size=4Ki --device=1"), true)));
}

// Buffer reuse (docs/measurement.md, "buffer reuse") across the worker boundary and in-process:
// the sweep's second item runs on the first's buffers and says so; on the buffers a correct add
// of the same seed left, a kernel that writes nothing still fails verification.
TEST(Workers, ASweepReusesItsBuffersAndStillCatchesWrongResults) {
  for (const char* mode : {"--worker_mode=process", "--worker_mode=in_process"}) {
    ServerProcess server({mode, "--test_fault_kernels"});
    ASSERT_GT(server.port(), 0) << mode;
    const std::string t = " --target=" + server.target();
    CliResult sweep = RunCli("sweep --kernels=add_f32,add_f32x4 --sizes=1Mi --format=jsonl" + t);
    ASSERT_EQ(sweep.exit_code, 0) << sweep.out;
    std::vector<std::string> lines = absl::StrSplit(sweep.out, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), 2u) << sweep.out;
    EXPECT_THAT(lines[0], HasSubstr("\"buffersReused\":false,\"buffersKept\":true")) << mode;
    EXPECT_THAT(lines[0], Not(HasSubstr("buffers reused")));
    EXPECT_THAT(lines[1], HasSubstr("\"buffersReused\":true,\"buffersKept\":false")) << mode;
    EXPECT_THAT(lines[1], HasSubstr("buffers reused from the previous run of this sweep"));
    EXPECT_THAT(lines[1], HasSubstr("\"passed\":true"));

    // A single run keeps nothing.
    CliResult single = RunCli(RunArgs(server, "add_f32 --size=1Mi --format=jsonl"));
    ASSERT_EQ(single.exit_code, 0) << single.out;
    EXPECT_THAT(single.out, HasSubstr("\"buffersReused\":false,\"buffersKept\":false"));

    CliResult wrong = RunCli(
        "sweep --kernels=add_f32,test_write_nothing_add_f32 --sizes=1Mi --seed=7 --format=jsonl" +
            t,
        true);
    EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
    EXPECT_THAT(wrong.out, HasSubstr("verification failed for test_write_nothing_add_f32")) << mode;
    EXPECT_THAT(wrong.out, HasSubstr("1048576 of 1048576 elements")) << mode;
  }
}

TEST(Workers, UnusableWorkerFlagsStopStartUp) {
  for (const std::string& flag :
       {std::string("--worker_mode=threads"), std::string("--worker_binary=/nonexistent/worker"),
        std::string("--worker_max_faults=0")}) {
    SCOPED_TRACE(flag);
    ServerProcess server({flag}, /*wait_for_port=*/false);
    EXPECT_EQ(server.SignalAndWait(0, std::chrono::seconds(10)), 2) << server.Log();
    EXPECT_THAT(server.Log(), HasSubstr(flag.substr(2, flag.find('=') - 2)));
  }
}

}  // namespace
}  // namespace gpubench
