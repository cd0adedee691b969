// User kernels on a real GPU (docs/user-kernels.md), the way the worker runs them
// (MeasureUserKernelRun): the built-in add_f32's source resubmitted verifies with the same
// registers; a kernel that writes nothing, or corrupts the last element, fails verification; a
// trap fails with the CUDA error as a device-lost status. Run:
//   build/tests/gpu_test --gtest_filter='UserKernelGpu.*'
//   build/tests/gpu_test --gtest_filter='UserKernelGpuTrap.*'   (alone: it poisons the context)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/engine/resolve.h"
#include "server/worker/user_compiler.h"
#include "server/worker/user_kernel_run.h"
#include "tests/gpu/cuda_test.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

// add_f32's kernel from kernels/cuda/add_kernels.cu (AddF32Kernel), with GlobalThreadIndex()
// (launch_helpers.cuh) written out and int64_t spelled long long, the contract's type (NVRTC has
// no <cstdint>; int64_t is long on the host).
constexpr char kAddF32Source[] = R"(
__device__ __forceinline__ long long GlobalThreadIndex() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
extern "C" __global__ void AddF32Kernel(const float* a, const float* b, float* c, long long n) {
  const long long i = GlobalThreadIndex();
  if (i < n) c[i] = a[i] + b[i];
}
)";

class UserKernelGpu : public CudaTest {
 protected:
  absl::StatusOr<RunResult> RunUser(const std::string& source, const std::string& entry, int64_t n,
                                    UserCodeKind kind = UserCodeKind::kSource) {
    RunRequest r = Quick("", n);
    r.kernel.clear();
    r.user_kernel = UserKernelRequest{.kind = kind,
                                      .code = source,
                                      .entry = entry,
                                      .family = "elementwise_add",
                                      .dtype = "f32",
                                      .launch = {.block_size = 256}};
    ServerLimits limits;
    limits.user_kernels.allowed = true;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *backend_, limits);
    if (!spec.ok()) return spec.status();
    absl::StatusOr<DeviceInfo> device = backend_->Describe(spec->device_index);
    if (!device.ok()) return device.status();
    return MeasureUserKernelRun(
        *backend_, &compiler_, *spec, *device, [] { return false; }, &pool_, nullptr);
  }
  UserCompiler compiler_{{.include_dir = DefaultUserKernelIncludeDir()}};
};

// The built-in's source as a user kernel: verified, every element; its registers are the
// built-in's (nvcc and NVRTC share the back end), and the result names the checks.
TEST_F(UserKernelGpu, BuiltinSourceResubmittedVerifiesWithTheSameResources) {
  constexpr int64_t n = int64_t{16} << 20;
  absl::StatusOr<RunResult> user = RunUser(kAddF32Source, "AddF32Kernel", n);
  ASSERT_TRUE(user.ok()) << user.status();
  ASSERT_TRUE(user->verification.has_value());
  EXPECT_TRUE(user->verification->passed);
  EXPECT_EQ(user->verification->checked, n);
  EXPECT_FALSE(user->verification->sampled);
  ASSERT_TRUE(user->resources.available) << user->resources.unavailable_reason;
  EXPECT_GT(user->resources.registers_per_thread, 0);
  ASSERT_TRUE(user->user_kernel.has_value());
  EXPECT_TRUE(user->user_kernel->signature_checked);
  EXPECT_EQ(user->user_kernel->lowered_name, "AddF32Kernel");
  EXPECT_THAT(user->user_kernel->architecture, HasSubstr("sm_"));
  bool floor = false;
  for (const std::string& c : user->user_kernel->integrity_checks) {
    floor = floor || c.rfind("physical_floor: median", 0) == 0;
  }
  EXPECT_TRUE(floor);
  RunRequest builtin = Quick("add_f32", n);
  builtin.block_size = 256;
  absl::StatusOr<RunResult> ref = Run(builtin);
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(user->resources.registers_per_thread, ref->resources.registers_per_thread);
  ASSERT_TRUE(user->occupancy.has_value() && ref->occupancy.has_value());
  EXPECT_EQ(user->occupancy->theoretical_occupancy, ref->occupancy->theoretical_occupancy);
  // The second submission of the same source is a compile-cache hit.
  absl::StatusOr<RunResult> again = RunUser(kAddF32Source, "AddF32Kernel", 1 << 20);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->user_kernel->compile_cache_hit);
}

TEST_F(UserKernelGpu, PtxRunsWithItsSignatureUnchecked) {
  absl::StatusOr<CompiledUserKernel> ptx =
      compiler_.Compile(**MakeUserKernelSpec({.code = kAddF32Source,
                                              .entry = "AddF32Kernel",
                                              .family = "elementwise_add",
                                              .dtype = "f32",
                                              .launch = {.block_size = 256}},
                                             1 << 20),
                        "compute_90");
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  absl::StatusOr<RunResult> r = RunUser(ptx->image, "AddF32Kernel", 1 << 20, UserCodeKind::kPtx);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->verification->passed);
  EXPECT_FALSE(r->user_kernel->signature_checked);
}

TEST_F(UserKernelGpu, AKernelThatWritesNothingFailsVerification) {
  absl::StatusOr<RunResult> r = RunUser(
      "extern \"C\" __global__ void lazy(const float* a, const float* b, float* c, long long n) "
      "{}\n",
      "lazy", 1 << 20);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->verification.has_value());
  EXPECT_FALSE(r->verification->passed);
  EXPECT_EQ(r->verification->mismatches, 1 << 20);  // every element still poisoned
}

TEST_F(UserKernelGpu, WrongInTheLastElementFailsVerificationThere) {
  constexpr int64_t n = 1 << 20;
  absl::StatusOr<RunResult> r = RunUser(R"(
extern "C" __global__ void almost(const float* a, const float* b, float* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = i == n - 1 ? a[i] : a[i] + b[i];
}
)",
                                        "almost", n);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->verification->passed);
  EXPECT_EQ(r->verification->mismatches, 1);
  EXPECT_EQ(r->verification->first_mismatch_index, n - 1);
}

// Last, and alone: a trap poisons this process's context (in the server, the worker's, which
// exits; worker_pool restarts it without charging the device).
class UserKernelGpuTrap : public UserKernelGpu {};
TEST_F(UserKernelGpuTrap, TrapFailsWithAPreciseStatus) {
  absl::StatusOr<RunResult> r = RunUser(
      "extern \"C\" __global__ void boom(const float* a, const float* b, float* c, long long n) "
      "{ __trap(); }\n",
      "boom", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsDeviceLost(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("cuda"));
}

}  // namespace
}  // namespace gpubench
