// Hostile user kernels against a real CUDA server and its worker processes (docs/user-kernels.md,
// "Faults"): each gets a precise status, the server keeps serving, and the next user kernel on the
// same device verifies. ctest label gpu; every test skips, saying why, where no CUDA device is
// visible. Run: build/tests/user_kernel_gpu_e2e_test
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "tests/e2e/server_process.h"

namespace gpubench {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr char kAdd[] = R"(
extern "C" __global__ void my_add(const float* a, const float* b, float* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

// A kernel `my_add` whose body is `body` (i, a, b, c and n in scope) after `prefix`.
std::string Kernel(const std::string& body, const std::string& prefix = "") {
  return absl::StrCat(prefix, R"(
extern "C" __global__ void my_add(const float* a, const float* b, float* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  )",
                      body, "\n}\n");
}

v1::RunBenchmarkRequest UserRun(const std::string& source, int64_t elements = 1 << 20) {
  v1::RunBenchmarkRequest r;
  r.set_elements(elements);
  v1::UserKernel* k = r.mutable_user_kernel();
  k->set_source(source);
  k->set_entry("my_add");
  k->set_family("elementwise_add");
  k->set_dtype("f32");
  k->mutable_launch()->set_block_size(256);
  return r;
}

class UserKernelGpuE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      skip_ = new std::string(e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
      return;
    }
    server_ =
        new ServerProcess({"--backend=cuda", "--allow_user_kernels", "--worker_stall_seconds=10",
                           "--user_kernel_compile_seconds=20", "--default_timeout_seconds=2"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (skip_ != nullptr) GTEST_SKIP() << "no usable CUDA GPU: " << *skip_;
  }

  static grpc::Status Run(const v1::RunBenchmarkRequest& request,
                          v1::RunBenchmarkResponse* response = nullptr) {
    auto stub = v1::Benchmark::NewStub(server_->Channel());
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    v1::RunBenchmarkResponse ignored;
    return stub->RunBenchmark(&c, request, response != nullptr ? response : &ignored);
  }
  // The device still serves: a correct user kernel verifies, naming the timed-launch check.
  static void ExpectNextRunVerifies() {
    v1::RunBenchmarkResponse response;
    const grpc::Status s = Run(UserRun(kAdd), &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(response.result().verification().passed());
    bool timed = false;
    for (const std::string& c : response.result().user_kernel().integrity_checks()) {
      timed = timed || c.rfind("timed_launch_verified: ", 0) == 0;
    }
    EXPECT_TRUE(timed);
  }

  static inline ServerProcess* server_ = nullptr;
  static inline std::string* skip_ = nullptr;
};

TEST_F(UserKernelGpuE2e, TrapEndsOnlyTheWorker) {
  const grpc::Status s = Run(UserRun(Kernel("__trap();")));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("cudaError"));
  ExpectNextRunVerifies();
}

// User kernels run in the device's user-kernel worker (a second process and CUDA context): a
// trap poisons that context only. The catalog worker's process is the same before and after, and
// its next catalog run verifies; the trap's worker is replaced by the next user kernel's.
TEST_F(UserKernelGpuE2e, ATrapLeavesTheCatalogWorkersContextAlone) {
  v1::RunBenchmarkRequest catalog;
  catalog.set_kernel("add_f32");
  catalog.set_elements(1 << 20);
  v1::RunBenchmarkResponse response;
  ASSERT_TRUE(Run(catalog, &response).ok());
  const std::set<pid_t> catalog_workers = WorkerPidsOfRole(server_->pid(), "catalog");
  ASSERT_FALSE(catalog_workers.empty());
  ExpectNextRunVerifies();  // starts the user-kernel worker
  const std::set<pid_t> user_before = WorkerPidsOfRole(server_->pid(), "user");
  ASSERT_EQ(user_before.size(), 1u);
  const grpc::Status s = Run(UserRun(Kernel("__trap();")));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("the user-kernel worker of GPU-"));
  EXPECT_EQ(WorkerPidsOfRole(server_->pid(), "catalog"), catalog_workers);
  const grpc::Status again = Run(catalog, &response);
  ASSERT_TRUE(again.ok()) << again.error_message();
  EXPECT_TRUE(response.result().verification().passed());
  ExpectNextRunVerifies();
  EXPECT_NE(WorkerPidsOfRole(server_->pid(), "user"), user_before);
  EXPECT_EQ(WorkerPidsOfRole(server_->pid(), "catalog"), catalog_workers);
}

TEST_F(UserKernelGpuE2e, OutOfBoundsStoreIsAnIllegalAddress) {
  const grpc::Status s = Run(UserRun(Kernel("if (i < n) c[i + (1LL << 40)] = a[i];")));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("cudaErrorIllegalAddress"));
  ExpectNextRunVerifies();
}

TEST_F(UserKernelGpuE2e, InfiniteLoopIsKilledByTheStallWatchdog) {
  const grpc::Status s =
      // __nanosleep is volatile asm: the loop cannot be removed (a volatile local's was).
      Run(UserRun(Kernel("for (;;) __nanosleep(1000);\n  c[i] = 0;")));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("was killed: no progress for "));
  EXPECT_THAT(s.error_message(), HasSubstr("(a kernel that never returns?)"));
  ExpectNextRunVerifies();
}

// Device printf is bounded by the worker's FIFO (--device_printf_fifo_bytes) and goes to
// /dev/null, not into the server's log. 4096 threads: a printf in every thread costs ~12 us on the
// H200 (64Ki threads: 0.82 s a launch; at 1Mi one launch outlasted the 10 s stall watchdog,
// bench/results/2026-12-04-h200.md); ~20 launches still print 80k lines.
TEST_F(UserKernelGpuE2e, PrintfFloodNeitherFailsNorFillsTheLog) {
  const size_t log_before = server_->Log().size();
  v1::RunBenchmarkResponse response;
  const grpc::Status s = Run(
      UserRun(
          Kernel("if (i < n) {\n    printf(\"flood %lld\\n\", i);\n    c[i] = a[i] + b[i];\n  }"),
          4096),
      &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(response.result().verification().passed());
  EXPECT_LT(server_->Log().size() - log_before, size_t{64} << 10);
  EXPECT_THAT(server_->Log(), ::testing::Not(HasSubstr("flood 1")));
  ExpectNextRunVerifies();
}

// malloc from every thread until the worker's small heap (--device_malloc_heap_bytes) runs out:
// NULL, not a fault; the kernel still computes.
TEST_F(UserKernelGpuE2e, DeviceMallocStormIsBoundedByTheHeap) {
  v1::RunBenchmarkResponse response;
  const grpc::Status s = Run(UserRun(Kernel(R"(for (int k = 0; k < 16; ++k) {
    void* p = malloc(1 << 20);
    if (p == nullptr) break;
    static_cast<char*>(p)[0] = 1;
  }
  if (i < n) c[i] = a[i] + b[i];)"),
                                     1 << 16),
                             &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(response.result().verification().passed());
  ExpectNextRunVerifies();
}

TEST_F(UserKernelGpuE2e, TooMuchSharedMemoryIsRefused) {
  // Static: 256 KiB, over the 48 KiB of static shared memory a block may declare (ptxas).
  const grpc::Status fixed =
      Run(UserRun(Kernel("big[threadIdx.x] = 1;\n  if (i < n) c[i] = a[i] + b[i] + big[0] - 1;",
                         "__shared__ float big[64 * 1024];\n")));
  EXPECT_EQ(fixed.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << fixed.error_message();
  EXPECT_THAT(fixed.error_message(), HasSubstr("shared"));
  // Dynamic: more than the device's opt-in per-block limit (227 KiB on the H200).
  v1::RunBenchmarkRequest dynamic = UserRun(kAdd);
  dynamic.mutable_user_kernel()->mutable_launch()->set_dynamic_shared_bytes(512 << 10);
  const grpc::Status refused = Run(dynamic);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("allows at most"));
  ExpectNextRunVerifies();
}

// --compare: the plain add beside the family's f32 built-ins and cub_add_f32, measured the same
// way: its speed within a factor of two of the fastest built-in's (the tuned variants are
// faster at 16Mi, not 2x).
TEST_F(UserKernelGpuE2e, CompareMeasuresTheBuiltinsAndTheVendorBaseline) {
  v1::RunBenchmarkRequest request = UserRun(kAdd, int64_t{16} << 20);
  request.mutable_user_kernel()->set_compare(true);
  v1::RunBenchmarkResponse response;
  const grpc::Status s = Run(request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const auto& c = response.result().user_kernel().comparisons();
  ASSERT_EQ(c.size(), 2);
  EXPECT_EQ(c[0].role(), "best_builtin");
  EXPECT_THAT(c[0].kernel(), ::testing::StartsWith("add_f32")) << c[0].note();
  EXPECT_GT(c[0].candidates(), 5);
  EXPECT_GT(c[0].speedup(), 0.5);
  EXPECT_LT(c[0].speedup(), 2.0);
  EXPECT_EQ(c[1].kernel(), "cub_add_f32") << c[1].note();
  EXPECT_GT(c[1].speedup(), 0.5);
}

// The compile-bomb and size cases need no GPU: tests/e2e/user_kernel_e2e_test.cc has them on the
// CPU backend. Here, the same bomb on the CUDA worker, for the sm_90 compile.
TEST_F(UserKernelGpuE2e, CompileBombIsStopped) {
  const grpc::Status s = Run(UserRun(
      Kernel("if (i < n) c[i] = a[i] + b[i] + static_cast<float>(X<30, 0>::v - (1LL << 30));",
             "template <int N, int K> struct X {\n"
             "  static constexpr long long v = X<N - 1, 2 * K>::v + X<N - 1, 2 * K + 1>::v;\n};\n"
             "template <int K> struct X<0, K> { static constexpr long long v = 1; };\n")));
  EXPECT_THAT(s.error_code(),
              AnyOf(grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::INVALID_ARGUMENT))
      << s.error_message();
  EXPECT_THAT(s.error_message(),
              AnyOf(HasSubstr("the user kernel's compile ran over"), HasSubstr("user.cu(")));
  ExpectNextRunVerifies();
}

}  // namespace
}  // namespace gpubench
