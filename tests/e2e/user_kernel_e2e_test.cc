// User kernels through the real server, its CPU-backend workers and the CLI (docs/user-kernels.md):
// off without --allow_user_kernels; with it, every compile check runs in the worker (NVRTC for
// compute_90) and the CPU backend then answers FAILED_PRECONDITION with the reason; a bad source
// gets INVALID_ARGUMENT with NVRTC's file:line and the device keeps serving; the server refuses to
// start with the flag on a non-loopback address without a token or mutual TLS. User kernels run
// in each device's user-kernel worker: started by the first user-kernel run, stopped when idle,
// its faults its own; sweeps carry a user kernel; scheduled plans refuse one.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "tests/e2e/raw_http2.h"
#include "tests/e2e/server_process.h"
#include "tests/eventually.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

constexpr char kAddF16[] = R"(
extern "C" __global__ void my_add(const __half* a, const __half* b, __half* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = __hadd(a[i], b[i]);
}
)";

v1::RunBenchmarkRequest UserRun(const std::string& source) {
  v1::RunBenchmarkRequest r;
  r.set_elements(1 << 16);
  v1::UserKernel* k = r.mutable_user_kernel();
  k->set_source(source);
  k->set_entry("my_add");
  k->set_family("elementwise_add");
  k->set_dtype("f16");
  k->mutable_launch()->set_block_size(256);
  return r;
}

grpc::Status RunRpc(const ServerProcess& server, const v1::RunBenchmarkRequest& request,
                    v1::RunBenchmarkResponse* response = nullptr) {
  auto stub = v1::Benchmark::NewStub(server.Channel());
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::RunBenchmarkResponse ignored;
  return stub->RunBenchmark(&c, request, response != nullptr ? response : &ignored);
}

grpc::Status RunRpcAs(const ServerProcess& server, const std::string& token,
                      const v1::RunBenchmarkRequest& request) {
  auto stub = v1::Benchmark::NewStub(server.Channel());
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  c.AddMetadata("authorization", "Bearer " + token);
  v1::RunBenchmarkResponse ignored;
  return stub->RunBenchmark(&c, request, &ignored);
}

// A small catalog run: what a device still serves after a user kernel was refused or failed.
v1::RunBenchmarkRequest CatalogRun() {
  v1::RunBenchmarkRequest plain;
  plain.set_kernel("add_f32");
  plain.set_elements(1024);
  return plain;
}

void ExpectAVerifiedCatalogRun(const ServerProcess& server) {
  v1::RunBenchmarkResponse response;
  const grpc::Status s = RunRpc(server, CatalogRun(), &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(response.result().verification().passed());
}

// PTX is passed to the device as is: these runs need no NVRTC, and the CPU backend's user-kernel
// worker answers them FAILED_PRECONDITION "cannot run a user kernel".
constexpr char kPtx[] = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry my_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 n) { ret; }
)";

v1::RunBenchmarkRequest PtxRun() {
  v1::RunBenchmarkRequest r = UserRun("");
  r.mutable_user_kernel()->set_ptx(kPtx);
  r.mutable_user_kernel()->set_dtype("f32");
  return r;
}

void ExpectTheCpuBackendsAnswer(const grpc::Status& s) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("cannot run a user kernel"));
}

std::set<pid_t> WorkersOfRole(const ServerProcess& server, const std::string& role) {
  return WorkerPidsOfRole(server.pid(), role);
}

// The value of the first series of `name` on /metrics whose labels hold every one of `labels`,
// or -1.
double Series(const ServerProcess& server, const std::string& name,
              const std::vector<std::string>& labels) {
  return SeriesValue(HttpGet(server.metrics_port(), "/metrics"), name, labels);
}

// How long the tests below wait for the server's workers and metrics to change.
constexpr absl::Duration kWait = absl::Seconds(15);
constexpr absl::Duration kPoll = absl::Milliseconds(50);

std::pair<int, std::string> StartupFailure(const std::vector<std::string>& flags) {
  ServerProcess server(flags, /*wait_for_port=*/false);
  const int code = server.SignalAndWait(0, std::chrono::seconds(15));
  return {code, server.Log()};
}

TEST(UserKernels, RefusedWithoutTheFlag) {
  ServerProcess server({});
  grpc::Status s = RunRpc(server, UserRun(kAddF16));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("--allow_user_kernels"));
  // The contract is public either way.
  const CliResult contract =
      RunCli(absl::StrCat("contract elementwise_add --dtype=f16 --target=", server.target()));
  EXPECT_EQ(contract.exit_code, 0);
  EXPECT_THAT(contract.out, HasSubstr("extern \"C\" __global__ void my_kernel(const __half* a, "
                                      "const __half* b, __half* c, long long n)"));
  const CliResult refused =
      RunCli(absl::StrCat("contract latency --dtype=u64 --target=", server.target()), true);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.out, HasSubstr("takes no user kernels"));
}

TEST(UserKernels, CpuBackendAnswersFailedPreconditionAfterTheCompileChecks) {
  ServerProcess server({"--allow_user_kernels", "--cpu_devices=1"});
  const std::string file = server.dir() + "/my_add.cu";
  std::ofstream(file) << kAddF16;
  const CliResult run = RunCli(absl::StrCat("run --source=", file,
                                            " --entry=my_add --family=elementwise_add --dtype=f16 "
                                            "--size=16Mi --target=",
                                            server.target()),
                               /*with_stderr=*/true);
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_THAT(run.out, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(run.out, HasSubstr("the cpu backend cannot run a user kernel"));
#if GPUBENCH_TEST_HAVE_NVRTC
  EXPECT_THAT(run.out, HasSubstr("passed the compile checks for compute_90 (signature checked"));
  // The same source again: the worker's compile cache.
  grpc::Status again = RunRpc(server, UserRun(kAddF16));
  EXPECT_EQ(again.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(again.error_message(), HasSubstr("compile cache hit"));

  // A syntax error: INVALID_ARGUMENT with NVRTC's file:line, from the worker.
  grpc::Status syntax = RunRpc(server, UserRun("extern \"C\" __global__ void my_add(\n  oops;\n"));
  EXPECT_EQ(syntax.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(syntax.error_message(), HasSubstr("user.cu(2)"));
  // A mismatching entry: refused at compile time, never launched.
  grpc::Status mismatch =
      RunRpc(server, UserRun("extern \"C\" __global__ void my_add(const float* a, const float* b, "
                             "float* c, long long n) {}\n"));
  EXPECT_EQ(mismatch.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(mismatch.error_message(), HasSubstr("does not have the contract of elementwise_add"));
#endif
  // Refused before any worker: an option outside the whitelist, a fixed seed, a source too big.
  v1::RunBenchmarkRequest rdc = UserRun(kAddF16);
  rdc.mutable_user_kernel()->mutable_compile()->add_defines("-rdc=true");
  EXPECT_EQ(RunRpc(server, rdc).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::RunBenchmarkRequest seeded = UserRun(kAddF16);
  seeded.set_seed(1);
  EXPECT_EQ(RunRpc(server, seeded).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status big = RunRpc(server, UserRun(std::string(2 << 20, ' ')));
  EXPECT_EQ(big.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(big.error_message(), HasSubstr("--max_user_kernel_bytes"));
  grpc::Status include =
      RunRpc(server, UserRun(absl::StrCat("#include \"/etc/passwd\"\n", kAddF16)));
  EXPECT_EQ(include.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // The device kept serving a catalog kernel through all of it.
  ExpectAVerifiedCatalogRun(server);
}

#if GPUBENCH_TEST_HAVE_NVRTC
// Hostile sources that need no GPU (the CPU backend's worker compiles them for compute_90): a
// compile bomb is stopped by the compile limit (or by NVRTC itself), a 10 MiB source meets
// gRPC's message limit or, with both limits raised, compiles; the device serves after each. The
// stall watchdog's 1 s does not apply to a compile (the compile limit does: on the H200 a 10 s
// watchdog killed the bomb first, naming a kernel that never returns).
TEST(UserKernels, CompileBombAndTenMebibyteSourceGetPreciseStatuses) {
  ServerProcess server({"--allow_user_kernels", "--cpu_devices=1", "--worker_stall_seconds=1",
                        "--user_kernel_compile_seconds=3", "--max_message_bytes=33554432",
                        "--max_user_kernel_bytes=16777216"});
  // 2^30 distinct instantiations: never done in 3 s.
  const std::string bomb = absl::StrCat(
      "template <int N, int K> struct X {\n"
      "  static constexpr long long v = X<N - 1, 2 * K>::v + X<N - 1, 2 * K + 1>::v;\n};\n"
      "template <int K> struct X<0, K> { static constexpr long long v = 1; };\n"
      "__device__ long long sink = X<30, 0>::v;\n",
      kAddF16);
  const auto start = std::chrono::steady_clock::now();
  grpc::Status s = RunRpc(server, UserRun(bomb));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("the user kernel's compile ran over 3s"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  // Deep rather than wide: NVRTC's own instantiation-depth limit, a compile error with the line.
  grpc::Status deep = RunRpc(
      server, UserRun(absl::StrCat("template <int N> struct D { static constexpr int v = D<N - "
                                   "1>::v + 1; };\n__device__ int deep = D<100000>::v;\n",
                                   kAddF16)));
  EXPECT_EQ(deep.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << deep.error_message();
  EXPECT_THAT(deep.error_message(), HasSubstr("user.cu("));
  // 10 MiB: a kernel and a comment, within both raised limits; the compile checks pass.
  const std::string big = absl::StrCat(kAddF16, "// ", std::string(10 << 20, 'x'), "\n");
  grpc::Status ten = RunRpc(server, UserRun(big));
  EXPECT_EQ(ten.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << ten.error_message();
  EXPECT_THAT(ten.error_message(), HasSubstr("passed the compile checks"));
  ExpectAVerifiedCatalogRun(server);

  // With the default limits, gRPC refuses the 10 MiB message before the service sees it.
  ServerProcess defaults({"--allow_user_kernels", "--cpu_devices=1"});
  grpc::Status refused = RunRpc(defaults, UserRun(big));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
}
#endif

// Per-client limits through real RPCs: each token of --token_file is one client, with its own
// submissions per minute; catalog runs are not counted.
TEST(UserKernels, SubmissionsPerMinuteArePerClient) {
  const std::string tokens =
      ::testing::TempDir() + "/gpubench_uk_rate_tokens_" + std::to_string(getpid());
  std::ofstream(tokens) << "alpha\nbeta\n";
  ServerProcess server({"--allow_user_kernels", "--cpu_devices=1", "--token_file=" + tokens,
                        "--user_kernel_submissions_per_minute=2"});
  for (int i = 0; i < 2; ++i) {
    grpc::Status s = RunRpcAs(server, "alpha", UserRun(kAddF16));
    EXPECT_NE(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  }
  grpc::Status third = RunRpcAs(server, "alpha", UserRun(kAddF16));
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << third.error_message();
  EXPECT_THAT(third.error_message(), HasSubstr("client token #1 submitted 2 user kernels"));
  EXPECT_THAT(third.error_message(), HasSubstr("--user_kernel_submissions_per_minute=2"));
  grpc::Status other = RunRpcAs(server, "beta", UserRun(kAddF16));
  EXPECT_NE(other.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << other.error_message();
  EXPECT_TRUE(RunRpcAs(server, "alpha", CatalogRun()).ok());
}

// A client's runs in flight: its first user run waits behind a long catalog run (queued counts),
// its second is refused at once, and once the first is done it may submit again.
TEST(UserKernels, RunsInFlightArePerClient) {
  ServerProcess server(
      {"--allow_user_kernels", "--cpu_devices=1", "--user_kernel_runs_per_client=1"});
  v1::RunBenchmarkRequest hold;
  hold.set_kernel("add_f32");
  hold.set_elements(1 << 22);
  hold.mutable_measurement()->set_min_time_seconds(2);
  hold.mutable_measurement()->set_timeout_seconds(5);
  std::thread holder([&] { EXPECT_TRUE(RunRpc(server, hold).ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  grpc::Status first;
  std::thread queued([&] { first = RunRpc(server, UserRun(kAddF16)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  grpc::Status second = RunRpc(server, UserRun(kAddF16));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << second.error_message();
  EXPECT_THAT(second.error_message(), HasSubstr("client ipv4:127.0.0.1 has 1 user-kernel runs"));
  EXPECT_THAT(second.error_message(), HasSubstr("--user_kernel_runs_per_client=1"));
  holder.join();
  queued.join();
  EXPECT_NE(first.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << first.error_message();
  grpc::Status again = RunRpc(server, UserRun(kAddF16));
  EXPECT_NE(again.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << again.error_message();
}

// The first user-kernel run starts the device's user-kernel worker (a second gpubench_worker,
// --role=user; /metrics' gpubench_user_kernel_worker_running goes 1); catalog runs go on in the
// catalog worker, whose process is the same; after --user_kernel_worker_idle_seconds without a
// run the user-kernel worker exits (the gauge 0 again) and the next user kernel starts a new one.
TEST(UserKernels, TheUserWorkerStartsOnDemandAndStopsWhenIdle) {
  ServerProcess server(
      {"--allow_user_kernels", "--cpu_devices=1", "--user_kernel_worker_idle_seconds=2"});
  const std::vector<std::string> device0 = {"device=\"0\""};
  const std::set<pid_t> catalog = WorkersOfRole(server, "catalog");
  ASSERT_EQ(catalog.size(), 1u) << server.Log();
  EXPECT_TRUE(WorkersOfRole(server, "user").empty());
  EXPECT_EQ(Series(server, "gpubench_user_kernel_worker_running", device0), 0);
  auto stub = v1::Benchmark::NewStub(server.Channel());
  grpc::ClientContext info_context;
  v1::GetServerInfoResponse info;
  ASSERT_TRUE(stub->GetServerInfo(&info_context, {}, &info).ok());
  EXPECT_EQ(info.limits().user_kernel_worker_idle_seconds(), 2);
  EXPECT_TRUE(info.limits().user_kernel_sweeps());

  ExpectAVerifiedCatalogRun(server);
  EXPECT_TRUE(WorkersOfRole(server, "user").empty()) << "a catalog run started the user worker";

  ExpectTheCpuBackendsAnswer(RunRpc(server, PtxRun()));
  const std::set<pid_t> user = WorkersOfRole(server, "user");
  EXPECT_EQ(user.size(), 1u);
  EXPECT_EQ(Series(server, "gpubench_user_kernel_worker_running", device0), 1);
  // The user-kernel worker refuses catalog runs: a verified one came from the catalog worker.
  ExpectAVerifiedCatalogRun(server);
  EXPECT_EQ(WorkersOfRole(server, "catalog"), catalog);

  EXPECT_TRUE(Eventually([&] { return WorkersOfRole(server, "user").empty(); }, kWait, kPoll))
      << server.Log();
  EXPECT_TRUE(Eventually(
      [&] { return Series(server, "gpubench_user_kernel_worker_running", device0) == 0; }, kWait,
      kPoll));
  EXPECT_THAT(server.Log(), HasSubstr("stopped after 2s without a run"));
  ExpectTheCpuBackendsAnswer(RunRpc(server, PtxRun()));
  const std::set<pid_t> again = WorkersOfRole(server, "user");
  EXPECT_EQ(again.size(), 1u);
  EXPECT_NE(again, user);
  EXPECT_EQ(WorkersOfRole(server, "catalog"), catalog);
  // No fault was counted: an idle stop is not one.
  EXPECT_EQ(Series(server, "gpubench_worker_restarts_total", {}), -1);
  // A stop signal ends both workers, the running user-kernel worker too.
  EXPECT_EQ(server.SignalAndWait(SIGTERM, std::chrono::seconds(15)), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::set<pid_t> all = again;
  all.insert(catalog.begin(), catalog.end());
  for (pid_t w : all) {
    // Gone, or at most a zombie of a parent that exited (init reaps it).
    std::ifstream stat(absl::StrCat("/proc/", w, "/stat"));
    const std::string text((std::istreambuf_iterator<char>(stat)), {});
    EXPECT_TRUE(text.empty() || absl::StrContains(text, ") Z ")) << text;
  }
}

#if GPUBENCH_TEST_HAVE_NVRTC
// The user-kernel worker killed in the middle of a run (compiling a source that would take long):
// the run answers UNAVAILABLE naming the user-kernel worker; the fault counts as
// {fault="user_kernel", worker="user"} and not toward the device, which stays SERVING and up even
// with --worker_max_faults=1; the catalog worker's process is the same; the next user kernel gets
// a new user-kernel worker.
TEST(UserKernels, AUserWorkerKilledMidRunRestartsOnlyItself) {
  ServerProcess server({"--allow_user_kernels", "--cpu_devices=1", "--worker_max_faults=1",
                        "--user_kernel_compile_seconds=120"});
  const std::set<pid_t> catalog = WorkersOfRole(server, "catalog");
  ASSERT_EQ(catalog.size(), 1u) << server.Log();
  const std::string slow = absl::StrCat(
      "template <int N, int K> struct X {\n"
      "  static constexpr long long v = X<N - 1, 2 * K>::v + X<N - 1, 2 * K + 1>::v;\n};\n"
      "template <int K> struct X<0, K> { static constexpr long long v = 1; };\n"
      "__device__ long long sink = X<30, 0>::v;\n",
      kAddF16);
  grpc::Status killed;
  std::thread run([&] { killed = RunRpc(server, UserRun(slow)); });
  ASSERT_TRUE(Eventually([&] { return !WorkersOfRole(server, "user").empty(); }, kWait, kPoll));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // its Hello, then the compile
  const std::set<pid_t> user = WorkersOfRole(server, "user");
  ASSERT_EQ(user.size(), 1u);
  kill(*user.begin(), SIGKILL);
  run.join();
  EXPECT_EQ(killed.error_code(), grpc::StatusCode::UNAVAILABLE) << killed.error_message();
  EXPECT_THAT(killed.error_message(), HasSubstr("the user-kernel worker of CPU-"));
  EXPECT_THAT(killed.error_message(), HasSubstr("died with SIGKILL during user_kernel 64Ki cold"));
  EXPECT_THAT(killed.error_message(), HasSubstr("not counted toward the device's health"));
  EXPECT_EQ(WorkersOfRole(server, "catalog"), catalog);
  EXPECT_EQ(RunProgram(GPUBENCH_HEALTH_CHECK_BINARY, server.target() + " gpubench/device/0").out,
            "SERVING\n");
  EXPECT_EQ(Series(server, "gpubench_device_up", {"device=\"0\""}), 1);
  EXPECT_EQ(Series(server, "gpubench_worker_restarts_total",
                   {"fault=\"user_kernel\"", "worker=\"user\""}),
            1);
  EXPECT_EQ(Series(server, "gpubench_worker_restarts_total", {"worker=\"catalog\""}), -1);
  ExpectAVerifiedCatalogRun(server);
  ExpectTheCpuBackendsAnswer(RunRpc(server, PtxRun()));
  const std::set<pid_t> next = WorkersOfRole(server, "user");
  EXPECT_EQ(next.size(), 1u);
  EXPECT_NE(next, user);
  EXPECT_EQ(WorkersOfRole(server, "catalog"), catalog);
}
#endif

// A sweep that carries a user kernel streams one answer per size x block size (here each the CPU
// backend's FAILED_PRECONDITION, as an item error naming its size and launch) and ends OK; the
// CLI's `sweep --ptx` sends the same. A sweep with kernels beside it, or on a server without
// --allow_user_kernels, fails as a whole at once.
TEST(UserKernels, ASweepOfAUserKernelAnswersEachItem) {
  ServerProcess server({"--allow_user_kernels", "--cpu_devices=1"});
  v1::RunSweepRequest sweep;
  *sweep.mutable_user_kernel() = PtxRun().user_kernel();
  for (int64_t size : {1024, 2048, 4096}) sweep.add_sizes(size);
  for (int block : {128, 256}) sweep.add_block_sizes(block);
  auto stub = v1::Benchmark::NewStub(server.Channel());
  {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    auto reader = stub->RunSweep(&c, sweep);
    v1::RunSweepResponse event;
    std::vector<v1::SweepItemError> errors;
    int results = 0;
    while (reader->Read(&event)) {
      if (event.has_error()) errors.push_back(event.error());
      results += event.has_result();
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(results, 0);
    ASSERT_EQ(errors.size(), 6u);
    for (size_t i = 0; i < errors.size(); ++i) {
      EXPECT_EQ(errors[i].index(), static_cast<int>(i) + 1);
      EXPECT_EQ(errors[i].kernel(), "user_kernel");
      EXPECT_EQ(errors[i].elements(), sweep.sizes(static_cast<int>(i) / 2));
      EXPECT_EQ(errors[i].block_size(), sweep.block_sizes(static_cast<int>(i) % 2));
      EXPECT_EQ(errors[i].code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
      EXPECT_THAT(errors[i].message(), HasSubstr("cannot run a user kernel"));
    }
  }
  const std::string ptx = server.dir() + "/my_add.ptx";
  std::ofstream(ptx) << kPtx;
  const CliResult cli = RunCli(absl::StrCat("sweep --ptx=", ptx,
                                            " --entry=my_add --family=elementwise_add --dtype=f32 "
                                            "--sizes=1Ki,4Ki --format=jsonl --target=",
                                            server.target()),
                               /*with_stderr=*/true);
  EXPECT_EQ(cli.exit_code, 1) << cli.out;  // items failed
  std::vector<std::string> lines = absl::StrSplit(cli.out, '\n', absl::SkipEmpty());
  int error_lines = 0;
  for (const std::string& line : lines) {  // jsonl's lines; the progress on stderr is not one
    error_lines +=
        absl::StartsWith(line, "{\"error\"") && absl::StrContains(line, "cannot run a user kernel");
  }
  EXPECT_EQ(error_lines, 2) << cli.out;
  // gpubench autotune does not take a user kernel: a sweep of its block sizes does that job.
  const CliResult autotune =
      RunCli(absl::StrCat("autotune --ptx=", ptx, " --size=1Ki --target=", server.target()), true);
  EXPECT_EQ(autotune.exit_code, 2) << autotune.out;
  EXPECT_THAT(autotune.out, HasSubstr("for a user kernel, sweep its block sizes"));

  v1::RunSweepRequest mixed = sweep;
  mixed.add_kernels("add_f32");
  grpc::ClientContext c1;
  auto r1 = stub->RunSweep(&c1, mixed);
  v1::RunSweepResponse ignored;
  while (r1->Read(&ignored)) {
  }
  grpc::Status s1 = r1->Finish();
  EXPECT_EQ(s1.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s1.error_message(), HasSubstr("kernels and user_kernel are exclusive"));

  ServerProcess off({"--cpu_devices=1"});
  auto off_stub = v1::Benchmark::NewStub(off.Channel());
  grpc::ClientContext c2;
  auto r2 = off_stub->RunSweep(&c2, sweep);
  while (r2->Read(&ignored)) {
  }
  grpc::Status s2 = r2->Finish();
  EXPECT_EQ(s2.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s2.error_message(), HasSubstr("--allow_user_kernels"));
}

// A scheduled plan carrying a user kernel: the server refuses to start, saying so.
TEST(UserKernels, AScheduledPlanWithAUserKernelIsRefusedAtStart) {
  const std::string plan =
      ::testing::TempDir() + "/gpubench_uk_schedule_" + std::to_string(getpid()) + ".json";
  std::ofstream(plan) << R"({"sweeps": [{"kernels": ["add_f32"], "sizes": ["1024"]},
      {"userKernel": {"ptx": "x", "entry": "my_add", "family": "elementwise_add",
       "dtype": "f32", "launch": {"blockSize": 256}}, "sizes": ["1024"]}]})";
  auto [code, log] = StartupFailure({"--allow_user_kernels", "--schedule_plan=" + plan});
  EXPECT_EQ(code, 2) << log;
  EXPECT_THAT(log, HasSubstr("sweep 2 of the plan carries a user_kernel: scheduled plans run "
                             "catalog kernels only"));
}

TEST(UserKernels, StartupRefusesANonLoopbackAddressWithoutAuthentication) {
  auto [code, log] = StartupFailure({"--listen=0.0.0.0:0", "--allow_user_kernels"});
  EXPECT_EQ(code, 2) << log;
  EXPECT_THAT(log, HasSubstr("--allow_user_kernels on the non-loopback address 0.0.0.0:0 needs "
                             "--token_file or mutual TLS"));
  auto [in_process, log2] = StartupFailure({"--allow_user_kernels", "--worker_mode=in_process"});
  EXPECT_EQ(in_process, 2) << log2;
  EXPECT_THAT(log2, HasSubstr("--allow_user_kernels needs --worker_mode=process"));
  // With a token, a non-loopback address is accepted.
  const std::string tokens =
      ::testing::TempDir() + "/gpubench_uk_tokens_" + std::to_string(getpid());
  std::ofstream(tokens) << "secret\n";
  ServerProcess ok({"--listen=0.0.0.0:0", "--allow_user_kernels", "--token_file=" + tokens});
  EXPECT_GT(ok.port(), 0) << ok.Log();
}

}  // namespace
}  // namespace gpubench
