// Hardening, end to end through real channels: what a newcomer's first hour and a hostile client
// or careless operator found, one test per finding.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "e2e/raw_http2.h"
#include "e2e/reflection_client.h"
#include "e2e/server_process.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "kernels/host_info.h"

namespace gpubench {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

std::unique_ptr<v1::Benchmark::Stub> StubOf(const ServerProcess& server) {
  return v1::Benchmark::NewStub(server.Channel());
}

void Deadline(grpc::ClientContext* c, double seconds_from_now = 60) {
  c->set_deadline(std::chrono::system_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(seconds_from_now * 1000)));
}

std::string TempDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/gpubench_hardening_" + std::to_string(getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Starts a server that must refuse to start: returns its exit code and log.
std::pair<int, std::string> StartupFailure(const std::vector<std::string>& flags) {
  ServerProcess server(flags, /*wait_for_port=*/false);
  const int code = server.SignalAndWait(0, seconds(15));
  return {code, server.Log()};
}

// ---- Found as a new user -------------------------------------------------------------------

// (1) grpcurl resolves grpc.health.v1.Health through reflection: a client that knows nothing
// but the reflection protocol builds the request from the descriptors it is sent and calls Check.
TEST(NewUser, HealthCheckThroughReflectionOnly) {
  ServerProcess server({});
  google::protobuf::DescriptorPool pool;
  {
    ReflectionClient reflection(server.Channel());
    ASSERT_TRUE(reflection.LoadSymbol("grpc.health.v1.Health", &pool));
    EXPECT_TRUE(reflection.Finish().ok());
  }
  const auto* service = pool.FindServiceByName("grpc.health.v1.Health");
  ASSERT_NE(service, nullptr);
  const auto* check = service->FindMethodByName("Check");
  ASSERT_NE(check, nullptr);

  // The call, built from the reflected schema only (generic stub, dynamic messages).
  google::protobuf::DynamicMessageFactory factory(&pool);
  std::unique_ptr<google::protobuf::Message> request(
      factory.GetPrototype(check->input_type())->New());
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(R"({"service":"gpubench.v1.Benchmark"})",
                                                          request.get())
                  .ok());
  grpc::GenericStub generic(server.Channel());
  grpc::ClientContext call;
  Deadline(&call, 10);
  grpc::ByteBuffer request_bytes, response_bytes;
  {
    const std::string serialized = request->SerializeAsString();
    grpc::Slice slice(serialized);
    request_bytes = grpc::ByteBuffer(&slice, 1);
  }
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  generic.UnaryCall(&call, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request_bytes,
                    &response_bytes, [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      status = s;
                      done = true;
                      cv.notify_one();
                    });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response_bytes.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  std::unique_ptr<google::protobuf::Message> response(
      factory.GetPrototype(check->output_type())->New());
  ASSERT_TRUE(response->ParseFromString(bytes));
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(*response, &json).ok());
  EXPECT_EQ(json, R"({"status":"SERVING"})");
}

// (2) A second server on a taken port fails at start-up and says which address; the same for the
// metrics port.
TEST(NewUser, TakenPortsFailStartupWithTheAddress) {
  ServerProcess first({});
  const std::string grpc_address = first.target();
  auto [code, log] = StartupFailure({"--listen=" + grpc_address});
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find("address " + grpc_address + " is already in use"), std::string::npos) << log;

  const std::string metrics_address = absl::StrCat("127.0.0.1:", first.metrics_port());
  auto [metrics_code, metrics_log] = StartupFailure({"--metrics_listen=" + metrics_address});
  EXPECT_EQ(metrics_code, 2) << metrics_log;
  EXPECT_NE(metrics_log.find("--metrics_listen=" + metrics_address), std::string::npos)
      << metrics_log;
  EXPECT_NE(metrics_log.find("already in use"), std::string::npos) << metrics_log;
  EXPECT_EQ(metrics_log.find("null context"), std::string::npos) << metrics_log;
}

// (3) --help per command, exit 0; unknown flags exit 2; bare `gpubench` and `gpubench help`
// list every command; --version.
TEST(NewUser, HelpListsEachCommandsFlagsAndBadFlagsExit2) {
  const CliResult help = RunCli("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* command : {"kernels", "devices", "info", "run", "sweep", "autotune", "fleet"}) {
    EXPECT_NE(help.out.find(absl::StrCat("  ", command, " ")), std::string::npos)
        << command << " missing from --help:\n"
        << help.out;
  }
  EXPECT_NE(help.out.find("--target"), std::string::npos);
  const CliResult run_help = RunCli("run --help");
  EXPECT_EQ(run_help.exit_code, 0);
  EXPECT_NE(run_help.out.find("--size"), std::string::npos) << run_help.out;
  EXPECT_NE(run_help.out.find("--warmup"), std::string::npos) << run_help.out;
  EXPECT_EQ(run_help.out.find("--plan"), std::string::npos) << "fleet's flag under run";
  EXPECT_EQ(run_help.out.find("/work/"), std::string::npos) << "build paths in help";
  const CliResult fleet_help = RunCli("fleet --help");
  EXPECT_EQ(fleet_help.exit_code, 0);
  EXPECT_NE(fleet_help.out.find("--plan"), std::string::npos);
  EXPECT_EQ(RunCli("help").exit_code, 0);
  EXPECT_NE(RunCli("help autotune").out.find("--apply"), std::string::npos);
  const CliResult bare = RunCli("", /*with_stderr=*/true);
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.out.find("autotune"), std::string::npos);
  EXPECT_NE(bare.out.find("fleet"), std::string::npos);
  const CliResult unknown = RunCli("run add_f32 --sise=2", /*with_stderr=*/true);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("did you mean --size"), std::string::npos) << unknown.out;
  EXPECT_EQ(RunCli("run add_f32 --device=abc").exit_code, 2);
  EXPECT_EQ(RunCli("run add_f32 --size").exit_code, 2);
  const CliResult version = RunCli("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("gpubench 0.", 0), 0u) << version.out;
  EXPECT_NE(version.out.find("(git "), std::string::npos);

  const std::string server = GPUBENCH_SERVER_BINARY;
  const auto run = [](const std::string& command) {
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
    const int status = pclose(pipe);
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
  };
  for (const std::string& helpfull :
       {server + " --helpfull", std::string(GPUBENCH_CLI_BINARY) + " --helpfull"}) {
    auto [code, text] = run(helpfull);
    EXPECT_EQ(code, 0) << helpfull;
    EXPECT_EQ(text.find("Flags from"), std::string::npos) << "build paths in " << helpfull;
    EXPECT_EQ(text.find(".cc:"), std::string::npos) << "build paths in " << helpfull;
  }
  auto [server_help_code, server_help] = run(server + " --help");
  EXPECT_EQ(server_help_code, 0);
  for (const char* flag : {"--listen", "--queue_capacity", "--max_warmup_seconds",
                           "--metrics_threads", "--max_concurrent_streams"}) {
    EXPECT_NE(server_help.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(run(server + " --listne=1").first, 2);
  EXPECT_EQ(run(server + " --version").first, 0);
}

// (4) Errors name the status code, and an unknown kernel gets the closest names.
TEST(NewUser, ErrorsNameCodesAndSuggestKernels) {
  ServerProcess server({});
  const CliResult r = RunCli("run add_f33 --size=1 --target=" + server.target(), true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("failed: NOT_FOUND: unknown kernel 'add_f33'; did you mean add_f32"),
            std::string::npos)
      << r.out;
  const CliResult deadline = RunCli(
      "run add_f32 --size=1Mi --min_time=5 --timeout=10 --rpc_timeout_seconds=0.5 --target=" +
          server.target(),
      true);
  EXPECT_EQ(deadline.exit_code, 3);
  EXPECT_NE(deadline.out.find("DEADLINE_EXCEEDED"), std::string::npos) << deadline.out;
}

// A CLI child with stdout and stderr in files, for signals.
struct CliChild {
  pid_t pid = -1;
  std::string out_path, err_path;
  std::string Out() const {
    std::ifstream in(out_path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string Err() const {
    std::ifstream in(err_path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  int Wait(seconds limit) {
    const auto until = steady_clock::now() + limit;
    while (steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  ~CliChild() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

CliChild SpawnCli(const std::vector<std::string>& args, const std::string& dir) {
  CliChild child;
  child.out_path = dir + "/cli.out";
  child.err_path = dir + "/cli.err";
  std::vector<std::string> all = {GPUBENCH_CLI_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, child.out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, child.err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_EQ(posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  return child;
}

// (5) Ctrl-C during a sweep prints what finished, in valid JSON, and exits 130.
TEST(NewUser, CtrlCDuringSweepPrintsFinishedResults) {
  ServerProcess server({});
  const std::string dir = TempDir("ctrl_c");
  std::string sizes;
  for (int i = 0; i < 40; ++i) absl::StrAppend(&sizes, i ? "," : "", 100000 + i);
  CliChild cli = SpawnCli({"sweep", "--kernels=add_f32", "--sizes=" + sizes, "--format=json",
                           "--min_time=0.1", "--target=" + server.target()},
                          dir);
  const auto until = steady_clock::now() + seconds(60);
  while (cli.Err().find("done:") == std::string::npos && steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(cli.Err().find("done:"), std::string::npos) << cli.Err();
  kill(cli.pid, SIGINT);
  EXPECT_EQ(cli.Wait(seconds(20)), 130) << cli.Err();
  const std::string out = cli.Out();
  ASSERT_FALSE(out.empty()) << cli.Err();
  // A JSON array of the finished results: parse each element as a RunResult.
  EXPECT_EQ(out.front(), '[');
  EXPECT_NE(out.find("\"runId\""), std::string::npos) << out;
  const size_t results = std::count(out.begin(), out.end(), '{') > 0;
  EXPECT_GT(results, 0u);
  google::protobuf::util::JsonParseOptions options;
  const std::string first = out.substr(out.find('{'), out.find("\n}") + 2 - out.find('{'));
  v1::RunResult parsed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(first, &parsed, options).ok()) << first;
  EXPECT_NE(cli.Err().find("interrupted"), std::string::npos);
}

// (6) Progress for each item comes in order: QUEUED, RUNNING, then its result.
TEST(NewUser, SweepProgressIsInOrder) {
  ServerProcess server({"--cpu_devices=2"});
  auto stub = StubOf(server);
  for (int attempt = 0; attempt < 5; ++attempt) {
    grpc::ClientContext c;
    Deadline(&c);
    v1::RunSweepRequest req;
    req.add_kernels("add_f32");
    req.add_kernels("copy_d2d");
    req.add_sizes(1000);
    req.add_sizes(2000);
    req.set_all_devices(true);
    req.mutable_measurement()->set_min_samples(2);
    req.mutable_measurement()->set_max_samples(3);
    auto reader = stub->RunSweep(&c, req);
    v1::RunSweepResponse e;
    std::map<int, std::vector<std::string>> states;
    while (reader->Read(&e)) {
      if (e.has_progress()) {
        states[e.progress().index()].push_back(
            e.progress().state() == v1::SweepProgress::QUEUED ? "queued" : "running");
      } else if (e.has_result()) {
        // Results carry no index: the last progress event of an item precedes its result.
        bool matched = false;
        for (auto& [index, s] : states) {
          if (!s.empty() && s.back() == "running") {
            s.push_back("result");
            matched = true;
            break;
          }
        }
        EXPECT_TRUE(matched);
      }
    }
    ASSERT_TRUE(reader->Finish().ok());
    ASSERT_EQ(states.size(), 8u);
    for (const auto& [index, s] : states) {
      EXPECT_EQ(s, (std::vector<std::string>{"queued", "running", "result"}))
          << "item " << index << " attempt " << attempt;
    }
  }
}

// (7) Only the documented size spellings.
TEST(NewUser, LowercaseMegaIsRefused) {
  const CliResult r = RunCli("run add_f32 --size=256m", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("case matters"), std::string::npos) << r.out;
}

// (8) and (9): --all_devices rows and progress name the device; library launches read the
// same in table and CSV; no occupancy on the CPU is "n/a"/empty, never 0; an absent copy
// ceiling is absent in JSON.
TEST(NewUser, OutputNamesDevicesAndIsConsistent) {
  ServerProcess server({"--cpu_devices=2"});
  const std::string t = " --target=" + server.target();
  const CliResult table = RunCli(
      "sweep --kernels=add_f32 --sizes=1000 --all_devices --min_samples=2 --max_samples=3" + t,
      true);
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("device 0 add_f32"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("device 1 add_f32"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("done: device 0 add_f32"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("done: device 1 add_f32"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("device"), std::string::npos);
  const CliResult csv = RunCli(
      "sweep --kernels=cub_add_f32 --sizes=1000 --min_samples=2 --max_samples=3 --format=csv" + t);
  ASSERT_EQ(csv.exit_code, 0) << csv.out;
  const std::vector<std::string> lines = absl::StrSplit(csv.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << csv.out;
  const std::vector<std::string> fields = absl::StrSplit(lines[1], ',');
  EXPECT_EQ(fields[3], "") << "library launch block size in CSV: " << lines[1];
  const CliResult lib_table =
      RunCli("sweep --kernels=cub_add_f32 --sizes=1000 --min_samples=2 --max_samples=3" + t);
  EXPECT_NE(lib_table.out.find("library"), std::string::npos) << lib_table.out;
  EXPECT_EQ(lib_table.out.find(" lib "), std::string::npos) << lib_table.out;

  const CliResult autotune_csv = RunCli(
      "autotune add_f32 --size=4Ki --block_sizes=64,128 --min_samples=2 --max_samples=3 "
      "--format=csv" +
      t);
  ASSERT_EQ(autotune_csv.exit_code, 0) << autotune_csv.out;
  const std::vector<std::string> rows = absl::StrSplit(autotune_csv.out, '\n', absl::SkipEmpty());
  ASSERT_GE(rows.size(), 3u);
  EXPECT_TRUE(absl::EndsWith(rows[1], ",")) << "occupancy must be empty on CPU: " << rows[1];
  const CliResult autotune_table = RunCli(
      "autotune add_f32 --size=4Ki --block_sizes=64,128 --min_samples=2 --max_samples=3" + t);
  EXPECT_NE(autotune_table.out.find("n/a"), std::string::npos) << autotune_table.out;
  EXPECT_EQ(autotune_table.out.find("0.0%"), std::string::npos) << autotune_table.out;

  const CliResult json =
      RunCli("run add_f32 --size=1000 --min_samples=2 --max_samples=3 --format=json" + t);
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_EQ(json.out.find("copyCeilingBytesPerSecond"), std::string::npos) << json.out;
}

// (12) GetServerInfo and --version agree; gRPC server metrics in the usual names.
TEST(NewUser, ServerInfoAndStandardGrpcMetrics) {
  ServerProcess server({});
  const CliResult info = RunCli("info --format=json --target=" + server.target());
  ASSERT_EQ(info.exit_code, 0);
  v1::GetServerInfoResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(info.out, &parsed).ok()) << info.out;
  const CliResult version = RunCli("--version");
  EXPECT_NE(version.out.find(parsed.version()), std::string::npos);
  EXPECT_NE(version.out.find(parsed.git_revision()), std::string::npos);
  EXPECT_EQ(parsed.backend(), "cpu");
  EXPECT_GT(parsed.start_time().seconds(), 0);
  EXPECT_EQ(parsed.limits().queue_capacity(), 64);
  EXPECT_EQ(parsed.limits().max_concurrent_streams(), 100);
  EXPECT_GT(parsed.limits().max_warmup_seconds(), 0);
  // One failing call, for a code label other than OK.
  RunCli("run nope --size=1 --target=" + server.target());
  const int fd = ConnectLoopback(server.metrics_port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n"));
  std::string body;
  char buffer[65536];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) body.append(buffer, n);
  close(fd);
  EXPECT_NE(body.find("grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"GetServerInfo\","
                      "grpc_service=\"gpubench.v1.Benchmark\",grpc_type=\"unary\"} 1"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("grpc_code=\"NOT_FOUND\",grpc_method=\"RunBenchmark\""), std::string::npos);
  EXPECT_NE(body.find("grpc_server_handling_seconds_bucket{"), std::string::npos);
  EXPECT_NE(body.find("grpc_server_started_total{"), std::string::npos);
  EXPECT_NE(body.find("gpubench_build_info{"), std::string::npos);
  EXPECT_NE(body.find("revision=\"" + parsed.git_revision() + "\""), std::string::npos);
}

// ---- Found by a hostile client and a careless operator --------------------------------------

// (1) Lists that multiply are counted before anything is built: Autotune and sweeps.
TEST(Hostile, MultipliedListsAreCountedBeforeBuilding) {
  ServerProcess server({});
  auto stub = StubOf(server);
  const int64_t rss_before = server.RssBytes();
  {
    v1::AutotuneRequest req;
    req.set_kernel("add_f32");
    req.set_elements(1024);
    for (int i = 0; i < 20000; ++i) {
      req.add_block_sizes(32 * (1 + i % 32));
      req.add_items_per_thread(1 + i % 8);
    }
    grpc::ClientContext c;
    Deadline(&c, 20);
    v1::AutotuneResponse resp;
    const grpc::Status s = stub->Autotune(&c, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  }
  {
    // 4 lists of 30000 entries: the product overflows 64 bits if multiplied naively.
    v1::RunSweepRequest req;
    for (int i = 0; i < 30000; ++i) {
      req.add_kernels("add_f32");
      req.add_sizes(1000);
      req.add_block_sizes(64);
      req.add_items_per_thread(1);
    }
    grpc::ClientContext c;
    Deadline(&c, 20);
    auto reader = stub->RunSweep(&c, req);
    v1::RunSweepResponse e;
    EXPECT_FALSE(reader->Read(&e));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_LT(server.RssBytes() - rss_before, int64_t{100} << 20);
}

// The CPU backend's cold flush buffer on this host: 2x its last-level cache, at least 4 MiB
// (kernels/cpu_backend.cc). A fake cgroup adds it to its budget so that a default run still fits
// at start-up (hosts with a 260 MiB L3 flush 520 MiB).
int64_t CpuFlushBytesOfThisHost() {
  const HostInfo host = ReadHostInfo();
  return 2 * std::max({host.l3_cache_bytes, host.l2_cache_bytes, int64_t{4} << 20});
}

// (2) Every buffer of a run counts against the smaller of MemAvailable and the cgroup limit
// (v2 here; v1 in common_test), answered before allocating.
TEST(Hostile, RunsMustFitTheCgroupLimit) {
  const std::string cgroup = TempDir("cgroup");
  std::ofstream(cgroup + "/memory.max") << (int64_t{256} << 20) + CpuFlushBytesOfThisHost() << "\n";
  std::ofstream(cgroup + "/memory.current") << (int64_t{16} << 20) << "\n";
  ServerProcess server({"--cgroup_root=" + cgroup});
  auto stub = StubOf(server);
  v1::RunBenchmarkRequest req;
  req.set_kernel("add_f32");
  req.set_elements(int64_t{16} << 20);  // 3 x 64 MiB buffers + 2 x 64 MiB inputs + read-back
  req.mutable_measurement()->set_min_samples(1);
  {
    grpc::ClientContext c;
    Deadline(&c);
    v1::RunBenchmarkResponse resp;
    const grpc::Status s = stub->RunBenchmark(&c, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_NE(s.error_message().find("cgroup limit"), std::string::npos) << s.error_message();
  }
  EXPECT_LT(server.RssBytes(), int64_t{200} << 20) << "allocated before refusing";
  req.set_elements(int64_t{1} << 20);
  grpc::ClientContext c;
  Deadline(&c);
  v1::RunBenchmarkResponse resp;
  EXPECT_TRUE(stub->RunBenchmark(&c, req, &resp).ok());
}

// The run just under the old bound (inputs, read-back and buffers only: 5 x 4 x n bytes plus the
// read-back) is refused now: the cold-mode flush buffer and the headroom are counted, and the
// message names the figures. A fake 256 MiB cgroup keeps the test cheap (the issue's example:
// add_f32 at 355M elements in 8 GiB, OOM-killed).
TEST(Hostile, RunJustUnderTheOldBoundIsRefused) {
  const std::string cgroup = TempDir("cgroup_bound");
  const int64_t budget = int64_t{256} << 20;  // what the run's buffers may use
  const int64_t limit = budget + CpuFlushBytesOfThisHost();
  std::ofstream(cgroup + "/memory.max") << limit << "\n";
  std::ofstream(cgroup + "/memory.current") << 0 << "\n";
  ServerProcess server({"--cgroup_root=" + cgroup});
  auto stub = StubOf(server);
  v1::RunBenchmarkRequest req;
  req.set_kernel("add_f32");
  const int64_t n = (budget - (int64_t{1} << 20)) / 24;  // 6 x 4 bytes an element: 1 MiB spare
  req.set_elements(n);
  req.mutable_measurement()->set_min_samples(1);
  grpc::ClientContext c;
  Deadline(&c);
  v1::RunBenchmarkResponse resp;
  const grpc::Status s = stub->RunBenchmark(&c, req, &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  for (const std::string& figure :
       {absl::StrCat("inputs and read-back ", 12 * n),
        absl::StrCat("cpu backend's buffers ", 12 * n), std::string("the cache flush buffer "),
        std::string(" headroom; the host can give "),
        absl::StrFormat("cgroup limit %.2f GiB at /", limit / double(int64_t{1} << 30))}) {
    EXPECT_NE(s.error_message().find(figure), std::string::npos) << figure << "\n"
                                                                 << s.error_message();
  }
  EXPECT_LT(server.RssBytes(), int64_t{200} << 20) << "allocated before refusing";
  // A run that leaves the headroom free is served (hot: no flush buffer, whatever this host's
  // last-level cache).
  req.set_elements(n / 2);
  req.mutable_measurement()->set_cache_mode(v1::HOT);
  grpc::ClientContext ok;
  Deadline(&ok);
  EXPECT_TRUE(stub->RunBenchmark(&ok, req, &resp).ok());
}

// (3) HTTP/2 rapid reset: streams opened and reset in a flood. gRPC 1.51 accepts every one of
// them as a call (about 10 KB, freed once gRPC has processed it); what the server holds is
// bounded by how fast it drains them, and glibc used to keep the freed memory for ever (the
// heap trimmer gives it back). A normal client keeps being served meanwhile.
struct FloodReport {
  int sent = 0, served = 0, failed = 0;
  int64_t rss_before = 0, peak_rss = 0, rss_after = 0;
};

// Four connections at a time reset streams on `path` for 8 s (at most 100k streams) while a
// normal client calls ListKernels every 100 ms (with `token`); then waits up to 20 s for the
// server's memory to come back.
FloodReport FloodWithRapidReset(const ServerProcess& server, const std::string& path,
                                const std::string& token) {
  FloodReport report;
  report.rss_before = server.RssBytes();
  std::atomic<int> flooding{4};
  std::atomic<int> sent{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < flooding.load(); ++i) {
    flood.emplace_back([&] {
      const auto until = steady_clock::now() + seconds(8);
      while (steady_clock::now() < until && sent.load() < 100000) {
        sent += RapidReset(server.port(), 2000, path);  // each connection's streams delivered
      }
      --flooding;
    });
  }
  auto stub = StubOf(server);
  while (flooding.load() > 0) {
    grpc::ClientContext c;
    Deadline(&c, 5);
    if (!token.empty()) c.AddMetadata("authorization", "Bearer " + token);
    v1::ListKernelsResponse resp;
    ++(stub->ListKernels(&c, {}, &resp).ok() ? report.served : report.failed);
    report.peak_rss = std::max(report.peak_rss, server.RssBytes());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& t : flood) t.join();
  report.sent = sent.load();
  // What gRPC still has to drain is processed, then the freed memory goes back to the system.
  report.rss_after = server.RssBytes();
  for (const auto until = steady_clock::now() + seconds(20);
       steady_clock::now() < until && report.rss_after - report.rss_before > (int64_t{64} << 20);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    report.rss_after = server.RssBytes();
    report.peak_rss = std::max(report.peak_rss, report.rss_after);
  }
  std::cerr << "rapid reset on " << path << ": " << report.sent
            << " streams reset; normal calls served " << report.served << ", failed "
            << report.failed << "; RSS " << (report.rss_before >> 20) << " MiB -> peak "
            << (report.peak_rss >> 20) << " MiB -> after " << (report.rss_after >> 20) << " MiB\n";
  return report;
}

// On the open health check and on an RPC that needs a token (the stream is reset before the
// token is checked). RR_FLAGS adds server flags: RR_FLAGS=--heap_trim_interval_seconds=0 shows
// the test failing without the defence.
TEST(Hostile, RapidResetFloodIsBounded) {
  std::vector<std::string> flags;
  if (const char* extra = std::getenv("RR_FLAGS")) {
    flags = absl::StrSplit(extra, ' ', absl::SkipEmpty());
  }
  const std::string dir = TempDir("rapid_reset");
  std::ofstream(dir + "/tokens") << "rapid-reset-token\n";
  std::vector<std::string> with_token = flags;
  with_token.push_back("--token_file=" + dir + "/tokens");
  for (const auto& [path, server_flags, token] :
       {std::tuple{std::string("/grpc.health.v1.Health/Check"), flags, std::string()},
        std::tuple{std::string("/gpubench.v1.Benchmark/ListKernels"), with_token,
                   std::string("rapid-reset-token")}}) {
    SCOPED_TRACE(path);
    ServerProcess server(server_flags);
    const FloodReport r = FloodWithRapidReset(server, path, token);
    EXPECT_GE(r.sent, 10000);  // 20,000-76,000 here; ~10 KB each would stay without the trimmer
    EXPECT_GT(r.served, 0);
    EXPECT_LE(r.failed, r.served / 4 + 1);
    EXPECT_LT(r.peak_rss - r.rss_before, int64_t{1} << 30);
    EXPECT_LT(r.rss_after - r.rss_before, int64_t{64} << 20) << "freed memory kept after the flood";
    grpc::ClientContext c;
    Deadline(&c, 10);
    c.AddMetadata("authorization", "Bearer rapid-reset-token");
    v1::ListKernelsResponse resp;
    EXPECT_TRUE(StubOf(server)->ListKernels(&c, {}, &resp).ok()) << "not serving after the flood";
  }
}

// (4) Warm-up honours the deadline (the device is free again at once) and shutdown.
TEST(Hostile, WarmupHonoursDeadlineAndShutdown) {
  ServerProcess server({"--shutdown_grace_seconds=1"});
  auto stub = StubOf(server);
  v1::RunBenchmarkRequest slow;
  slow.set_kernel("add_f32");
  slow.set_elements(int64_t{4} << 20);
  slow.mutable_measurement()->set_warmup_launches(1000);
  slow.set_verify(false);
  {
    grpc::ClientContext c;
    Deadline(&c, 1);
    v1::RunBenchmarkResponse resp;
    EXPECT_EQ(stub->RunBenchmark(&c, slow, &resp).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  {
    // The next run is not stuck behind the abandoned warm-up.
    const auto start = steady_clock::now();
    v1::RunBenchmarkRequest quick;
    quick.set_kernel("add_f32");
    quick.set_elements(1000);
    quick.mutable_measurement()->set_min_samples(2);
    grpc::ClientContext c;
    Deadline(&c, 30);
    v1::RunBenchmarkResponse resp;
    EXPECT_TRUE(stub->RunBenchmark(&c, quick, &resp).ok());
    EXPECT_LT(steady_clock::now() - start, seconds(4));
  }
  // SIGTERM during a long warm-up: out within the grace period, not after the warm-up.
  grpc::ClientContext c;
  Deadline(&c, 120);
  v1::RunBenchmarkResponse resp;
  std::thread call([&] { stub->RunBenchmark(&c, slow, &resp).error_code(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = steady_clock::now();
  EXPECT_EQ(server.SignalAndWait(SIGTERM, seconds(20)), 0);
  EXPECT_LT(steady_clock::now() - start, seconds(5));
  call.join();
}

// A run that ignores its cancellation (here a launch that never returns; in the field, input
// generation or buffer setup of a large run) does not hold shutdown past its grace: a second
// later its worker is ended and the client is told why.
TEST(Hostile, ShutdownAbandonsARunThatIgnoresItsCancellation) {
  ServerProcess server(
      {"--test_fault_kernels", "--worker_stall_seconds=600", "--shutdown_grace_seconds=1"});
  auto stub = StubOf(server);
  v1::RunBenchmarkRequest hang;
  hang.set_kernel("test_fault_hang");
  hang.set_elements(1024);
  grpc::ClientContext c;
  Deadline(&c, 120);
  v1::RunBenchmarkResponse resp;
  grpc::Status status;
  std::thread call([&] { status = stub->RunBenchmark(&c, hang, &resp); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // in its launch by now
  const auto start = steady_clock::now();
  EXPECT_EQ(server.SignalAndWait(SIGTERM, seconds(30)), 0);
  const auto took = steady_clock::now() - start;
  EXPECT_LT(took, seconds(6)) << "shutdown waited for the run";
  call.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_NE(status.error_message().find("shutdown grace (1s) ran out"), std::string::npos)
      << status.error_message();
}

// (5), (9), (10): partial TLS, flags that make no sense, directories and unusable locations
// all refuse to start, with a message naming the flag.
TEST(Hostile, BadOperatorConfigurationRefusesToStart) {
  const std::string dir = TempDir("operator");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--tls_client_ca=/etc/hostname"}, "partial TLS"},
      {{"--tls_cert=/etc/hostname"}, "partial TLS"},
      {{"--schedule_interval_seconds=1e-9"}, "--schedule_interval_seconds"},
      {{"--schedule_interval_seconds=inf"}, "--schedule_interval_seconds"},
      {{"--schedule_interval_seconds=nan"}, "--schedule_interval_seconds"},
      {{"--shutdown_grace_seconds=inf"}, "--shutdown_grace_seconds"},
      {{"--shutdown_grace_seconds=-1"}, "--shutdown_grace_seconds"},
      {{"--max_timeout_seconds=2", "--default_timeout_seconds=-1"}, "every default"},
      {{"--queue_capacity=0"}, "--queue_capacity"},
      {{"--max_elements=0"}, "--max_elements"},
      {{"--max_sweep_items=0"}, "--max_sweep_items"},
      {{"--default_min_samples=0"}, "--default_min_samples"},
      {{"--default_max_noise=nan"}, "--default_max_noise"},
      {{"--default_placement_pad_bytes=-1"}, "--default_placement_pad_bytes = -1 is outside"},
      {{"--default_placement_pad_bytes=1073741825"}, "[0, 1073741824] (1 GiB)"},
      {{"--cpu_devices=0"}, "--cpu_devices"},
      {{"--max_message_bytes=0"}, "--max_message_bytes"},
      {{"--max_warmup_seconds=0"}, "--max_warmup_seconds"},
      {{"--metrics_threads=0"}, "--metrics_threads"},
      {{"--schedule_plan=" + dir}, "--schedule_plan"},
      {{"--tuned_defaults_file=" + dir}, "is a directory"},
      {{"--tuned_defaults_file=" + dir + "/missing/t.json"}, "cannot create"},
      {{"--tls_cert=" + dir, "--tls_key=" + dir}, "--tls_cert"},
      {{"--token_file=" + dir}, "cannot read token file"},
      // A wrong --cgroup_root used to turn the memory check off silently.
      {{"--cgroup_root=" + dir + "/missing"}, "--cgroup_root=" + dir + "/missing is not a dir"},
      {{"--cgroup_root=" + dir}, "holds no readable memory cgroup"},
      // A directory was never written (and nothing said so); a FIFO hung start-up.
      {{"--port_file=" + dir}, "--port_file=" + dir + " is a directory"},
      {{"--port_file=" + dir + "/fifo"}, "/fifo is not a regular file"},
      {{"--metrics_port_file=" + dir + "/fifo"}, "--metrics_port_file=" + dir + "/fifo is not"},
      {{"--port_file=" + dir + "/missing/port"}, "cannot create it"},
      // An idle server trimming every nanosecond spun a core.
      {{"--heap_trim_interval_seconds=1e-9"}, "--heap_trim_interval_seconds=1e-09 must be in"},
      {{"--heap_trim_interval_seconds=0.5"}, "or 0 (off)"},
  };
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  for (const auto& [flags, expected] : cases) {
    auto [code, log] = StartupFailure(flags);
    EXPECT_EQ(code, 2) << flags[0] << "\n" << log;
    const std::string wanted = expected == "partial TLS" ? "a partial TLS configuration" : expected;
    EXPECT_NE(log.find(wanted), std::string::npos) << flags[0] << "\n" << log;
  }
}

// (9), the class: every numeric flag the server has (as its --helpfull lists them, so a flag
// added later is covered too) refuses NaN and values out of any sensible range at start-up.
TEST(Hostile, EveryNumericFlagIsValidated) {
  FILE* pipe = popen((std::string(GPUBENCH_SERVER_BINARY) + " --helpfull 2>&1").c_str(), "r");
  std::string help;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) help.append(buffer, n);
  pclose(pipe);
  std::vector<std::string> numeric;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    const size_t at = line.rfind("(default: ");
    if (!absl::StartsWith(line, "--") || at == absl::string_view::npos) continue;
    const absl::string_view value = line.substr(at + 10, line.size() - at - 11);
    double parsed;
    if (absl::SimpleAtod(value, &parsed)) numeric.emplace_back(line.substr(2, line.find(' ') - 2));
  }
  EXPECT_GE(numeric.size(), 20u) << help;
  for (const std::string& flag : numeric) {
    for (const char* value : {"nan", "1e300", "-1e300"}) {
      auto [code, log] = StartupFailure({absl::StrCat("--", flag, "=", value)});
      EXPECT_EQ(code, 2) << flag << "=" << value << "\n" << log;
      EXPECT_NE(log.find(flag), std::string::npos) << flag << "=" << value << "\n" << log;
    }
  }
}

// (6) Hundreds of idle connections do not stop scrapes; /metrics can require a token.
TEST(Hostile, MetricsSurviveIdleConnectionsAndCanRequireAToken) {
  const std::string dir = TempDir("metrics");
  std::ofstream(dir + "/tokens") << "scrape-secret\n";
  ServerProcess server(
      {"--metrics_request_timeout_ms=1000", "--metrics_token_file=" + dir + "/tokens"});
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = ConnectLoopback(server.metrics_port());
    if (fd >= 0) idle.push_back(fd);
  }
  ASSERT_GE(idle.size(), 250u);
  const auto scrape = [&](const std::string& extra_header) {
    return HttpGet(server.metrics_port(), "/metrics", extra_header);
  };
  const auto start = steady_clock::now();
  // "scrape:scrape-secret" in base64.
  const std::string ok = scrape("Authorization: Basic c2NyYXBlOnNjcmFwZS1zZWNyZXQ=\r\n");
  const auto took = steady_clock::now() - start;
  EXPECT_NE(ok.find("200 OK"), std::string::npos) << ok.substr(0, 200);
  EXPECT_NE(ok.find("gpubench_build_info"), std::string::npos);
  EXPECT_LT(took, seconds(6)) << "scrape behind idle connections";
  const std::string refused = scrape("");
  EXPECT_NE(refused.find("401"), std::string::npos) << refused.substr(0, 200);
  for (int fd : idle) close(fd);
}

// (6b) Idle connections that a client reopens as soon as the server closes them: each holds a
// /metrics thread for up to the request timeout, so the default threads and timeout must keep a
// scrape's wait behind 300 of them short (7 s with the old 64 threads and 2 s). METRICS_FLAGS
// adds server flags: METRICS_FLAGS="--metrics_threads=64 --metrics_request_timeout_ms=2000"
// shows the test failing with the old defaults.
TEST(Hostile, MetricsSurviveIdleConnectionsThatKeepReopening) {
  std::vector<std::string> flags;
  if (const char* extra = std::getenv("METRICS_FLAGS")) {
    flags = absl::StrSplit(extra, ' ', absl::SkipEmpty());
  }
  ServerProcess server(flags);
  const int port = server.metrics_port();
  ASSERT_GT(port, 0);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> reopened{0};
  std::vector<std::thread> holders;
  for (int h = 0; h < 4; ++h) {
    holders.emplace_back([&] {
      std::vector<pollfd> fds;
      for (int i = 0; i < 75; ++i) fds.push_back({ConnectLoopback(port), POLLIN, 0});
      while (!stop.load()) {
        if (poll(fds.data(), fds.size(), 50) <= 0) continue;
        for (pollfd& p : fds) {
          if (p.fd >= 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
          char byte;
          if (p.fd >= 0 && recv(p.fd, &byte, 1, MSG_DONTWAIT) > 0) continue;  // not closed yet
          if (p.fd >= 0) close(p.fd);
          p.fd = ConnectLoopback(port);  // at once, idle again
          p.revents = 0;
          ++reopened;
        }
      }
      for (pollfd& p : fds) {
        if (p.fd >= 0) close(p.fd);
      }
    });
  }
  std::this_thread::sleep_for(seconds(3));  // every thread busy, connections cycling
  std::vector<double> waits;
  for (int i = 0; i < 5; ++i) {
    const auto start = steady_clock::now();
    const std::string body = HttpGet(port, "/metrics", "", 10);
    waits.push_back(std::chrono::duration<double>(steady_clock::now() - start).count());
    EXPECT_NE(body.find("gpubench_build_info"), std::string::npos) << "scrape " << i << " failed";
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  stop = true;
  for (std::thread& t : holders) t.join();
  std::cerr << "300 reopening idle connections (" << reopened.load() << " reopened); scrapes took";
  for (double w : waits) std::cerr << " " << w << " s";
  std::cerr << "\n";
  EXPECT_GT(reopened.load(), 100) << "the server never closed an idle connection";
  for (double w : waits) EXPECT_LT(w, 3.0);
}

// (7) Client strings are echoed bounded: a huge kernel name still gets NOT_FOUND.
TEST(Hostile, HugeClientStringsGetTheirRealStatus) {
  ServerProcess server({});
  auto stub = StubOf(server);
  for (size_t size : {size_t{9} << 10, size_t{100} << 10, size_t{1} << 20}) {
    v1::RunBenchmarkRequest req;
    req.set_kernel(std::string(size, 'k'));
    req.set_elements(1);
    grpc::ClientContext c;
    Deadline(&c, 10);
    v1::RunBenchmarkResponse resp;
    const grpc::Status s = stub->RunBenchmark(&c, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << size << ": " << s.error_message();
    EXPECT_LT(s.error_message().size(), 4096u);
    v1::RunSweepRequest sweep;
    sweep.add_kernels(std::string(size, 'k'));
    sweep.add_sizes(1);
    sweep.set_device_uuid(std::string(size, 'u'));
    grpc::ClientContext sc;
    Deadline(&sc, 10);
    auto reader = stub->RunSweep(&sc, sweep);
    v1::RunSweepResponse e;
    while (reader->Read(&e)) {
    }
    const grpc::Status ss = reader->Finish();
    EXPECT_TRUE(ss.error_code() == grpc::StatusCode::NOT_FOUND) << ss.error_message().size();
    EXPECT_LT(ss.error_message().size(), 4096u);
  }
}

// (8) The CLI reads token files as the server does and refuses unusable tokens with exit 4.
TEST(Hostile, CliTokensAreReadLikeTheServers) {
  const std::string dir = TempDir("tokens");
  std::ofstream(dir + "/server") << "tok-123\n";
  std::ofstream(dir + "/crlf") << "# mine\r\n\r\ntok-123\r\n";
  std::ofstream(dir + "/spaces") << "tok 123\n";
  ServerProcess server({"--token_file=" + dir + "/server"});
  const std::string t = " --target=" + server.target();
  EXPECT_EQ(RunCli("kernels --token_file=" + dir + "/crlf" + t).exit_code, 0);
  EXPECT_EQ(RunCli("kernels" + t).exit_code, 4);
  const CliResult spaces = RunCli("kernels --token_file=" + dir + "/spaces" + t, true);
  EXPECT_EQ(spaces.exit_code, 4) << spaces.out;
  EXPECT_NE(spaces.out.find("cannot travel in a header"), std::string::npos) << spaces.out;
  EXPECT_EQ(RunCli("kernels --token_file=" + dir + t).exit_code, 2);  // a directory
  // GPUBENCH_TOKEN with a trailing newline works; with a control character it is refused.
  setenv("GPUBENCH_TOKEN", "tok-123\n", 1);
  EXPECT_EQ(RunCli("kernels" + t).exit_code, 0);
  setenv("GPUBENCH_TOKEN", "tok\001x", 1);
  EXPECT_EQ(RunCli("kernels" + t).exit_code, 4);
  unsetenv("GPUBENCH_TOKEN");
}

// (11) A sweep once streaming is not aborted when others fill the queue between its items.
TEST(Hostile, AdmittedSweepIsNotAbortedByAFullQueue) {
  ServerProcess server({"--queue_capacity=2"});
  auto stub = StubOf(server);
  grpc::ClientContext c;
  Deadline(&c, 120);
  v1::RunSweepRequest req;
  req.add_kernels("add_f32");
  for (int i = 0; i < 4; ++i) req.add_sizes(20000 + i);
  req.mutable_measurement()->set_min_time_seconds(0.2);
  auto reader = stub->RunSweep(&c, req);
  v1::RunSweepResponse e;
  ASSERT_TRUE(reader->Read(&e));  // admitted
  // Others keep the queue full while the sweep runs.
  std::atomic<bool> stop{false};
  std::vector<std::thread> fillers;
  for (int f = 0; f < 4; ++f) {
    fillers.emplace_back([&] {
      while (!stop.load()) {
        v1::RunBenchmarkRequest one;
        one.set_kernel("add_f32");
        one.set_elements(20000);
        one.mutable_measurement()->set_min_time_seconds(0.2);
        grpc::ClientContext fc;
        Deadline(&fc, 60);
        v1::RunBenchmarkResponse r;
        if (!stub->RunBenchmark(&fc, one, &r).ok()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
    });
  }
  int results = 0;
  while (reader->Read(&e)) {
    if (e.has_result()) ++results;
    EXPECT_FALSE(e.has_error()) << e.error().message();
  }
  const grpc::Status s = reader->Finish();
  stop = true;
  for (auto& f : fillers) f.join();
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(results, 4);
}

// The sum of every gpubench_runs_total series: how many runs the server has finished.
int64_t RunsFinished(const ServerProcess& server) {
  int64_t total = 0;
  for (absl::string_view line : absl::StrSplit(HttpGet(server.metrics_port(), "/metrics"), '\n')) {
    if (!absl::StartsWith(line, "gpubench_runs_total")) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &value)) total += value;
  }
  return total;
}

// (12) A sweep whose client stops reading stalls instead of buffering every result: the server
// runs no more than what flow control and the stream's bound hold, other clients are served (the
// stalled sweeps hold no queue slot), and once the client reads again it gets every item.
TEST(Hostile, SweepWhoseClientStopsReadingStalls) {
  ServerProcess server({"--queue_capacity=4"});
  constexpr int kItems = 900;
  constexpr int kStalled = 6;  // more streams than the queue has slots
  v1::RunSweepRequest req;
  req.add_kernels("add_f32");
  for (int i = 0; i < kItems; ++i) req.add_sizes(1000 + i);
  req.mutable_measurement()->set_min_samples(1);
  req.mutable_measurement()->set_max_samples(1);
  req.mutable_measurement()->set_min_time_seconds(0);
  req.mutable_measurement()->set_warmup_launches(0);
  req.set_verify(false);
  struct Stalled {
    std::unique_ptr<v1::Benchmark::Stub> stub;
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::RunSweepResponse>> reader;
  };
  std::vector<std::unique_ptr<Stalled>> stalled;
  const int64_t rss_before = server.RssBytes();
  int64_t runs = 0;
  for (int i = 0; i < kStalled; ++i) {
    // Its own connection, with a fixed 64 KiB window (no BDP growth): what the client's
    // transport takes in without the application reading stays small.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("gpubench.test.connection", i);
    auto s = std::make_unique<Stalled>();
    s->stub = v1::Benchmark::NewStub(
        grpc::CreateCustomChannel(server.target(), grpc::InsecureChannelCredentials(), args));
    Deadline(&s->context, 300);
    s->reader = s->stub->RunSweep(&s->context, req);
    v1::RunSweepResponse first;
    // Admitted (a queue slot was free: the sweeps before stalled and gave theirs back); then the
    // client reads nothing.
    ASSERT_TRUE(s->reader->Read(&first))
        << "sweep " << i << ": " << s->reader->Finish().error_message();
    stalled.push_back(std::move(s));
    // The runs stop: the count settles.
    for (int settled = 0, j = 0; settled < 3 && j < 100; ++j) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const int64_t now = RunsFinished(server);
      settled = now == runs ? settled + 1 : 0;
      runs = now;
    }
  }
  std::cerr << "stalled sweeps: " << runs << " of " << kStalled * kItems << " items run; RSS "
            << (rss_before >> 20) << " -> " << (server.RssBytes() >> 20) << " MiB\n";
  EXPECT_LT(runs, kStalled * kItems / 4) << "the sweeps did not stall";
  EXPECT_LT(server.RssBytes() - rss_before, int64_t{64} << 20);
  // A normal client is served at once: the stalled sweeps hold no queue slot.
  {
    v1::RunBenchmarkRequest one;
    one.set_kernel("add_f32");
    one.set_elements(1000);
    grpc::ClientContext c;
    Deadline(&c, 10);
    v1::RunBenchmarkResponse resp;
    const grpc::Status s = StubOf(server)->RunBenchmark(&c, one, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  // Reading again resumes the sweep: every item arrives, none lost.
  for (auto& s : stalled) {
    int results = 0;
    v1::RunSweepResponse e;
    while (s->reader->Read(&e)) results += e.has_result() || e.has_error();
    const grpc::Status finished = s->reader->Finish();
    EXPECT_TRUE(finished.ok()) << finished.error_message();
    EXPECT_EQ(results, kItems);
  }
}

}  // namespace
}  // namespace gpubench
