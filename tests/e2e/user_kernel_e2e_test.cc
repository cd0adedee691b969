// User kernels through the real server, its CPU-backend workers and the CLI (docs/user-kernels.md):
// off without --allow_user_kernels; with it, every compile check runs in the worker (NVRTC for
// compute_90) and the CPU backend then answers FAILED_PRECONDITION with the reason; a bad source
// gets INVALID_ARGUMENT with NVRTC's file:line and the device keeps serving; the server refuses to
// start with the flag on a non-loopback address without a token or mutual TLS.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "tests/e2e/server_process.h"

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
  v1::RunBenchmarkRequest plain;
  plain.set_kernel("add_f32");
  plain.set_elements(1024);
  v1::RunBenchmarkResponse response;
  EXPECT_TRUE(RunRpc(server, plain, &response).ok());
  EXPECT_TRUE(response.result().verification().passed());
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
