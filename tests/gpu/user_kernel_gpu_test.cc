// User kernels on a real GPU (docs/user-kernels.md), the way the worker runs them
// (MeasureUserKernelRun): the built-in add_f32's source resubmitted verifies with the same
// registers; a kernel that writes nothing, or corrupts the last element, fails verification; the
// cheats (UserKernelGpuCheat) are each caught by the integrity check they name; a trap fails with
// the CUDA error as a device-lost status. Run:
//   build/tests/gpu_test --gtest_filter='UserKernelGpu.*:UserKernelGpuCheat.*'
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
                                    UserCodeKind kind = UserCodeKind::kSource,
                                    CacheMode mode = CacheMode::kCold) {
    RunRequest r = Quick("", n);
    r.cache_mode = mode;
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
  static bool HasCheck(const RunResult& r, const std::string& prefix) {
    if (!r.user_kernel.has_value()) return false;
    for (const std::string& c : r.user_kernel->integrity_checks) {
      if (c.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }
  static bool HasNote(const RunResult& r, const std::string& part) {
    for (const std::string& n : r.notes) {
      if (n.find(part) != std::string::npos) return true;
    }
    return false;
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
  // The timed-sample check verified at least the first timed sample and found it right.
  ASSERT_TRUE(user->timed_sample_check.has_value());
  EXPECT_GE(user->timed_sample_check->verified, 1);
  EXPECT_EQ(user->timed_sample_check->failure, "");
  EXPECT_TRUE(HasCheck(*user, "timed_launch_verified: "));
  EXPECT_TRUE(HasCheck(*user, "persisting_l2_reset: "));
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
  // The first timed sample, always verified, was wrong there too: a note, not a second verdict.
  EXPECT_TRUE(HasNote(*r, "timed_launch_verified: timed sample 1 ")) << r->notes.size();
}

// Kernels that game the measurement, each caught by the check it names.
class UserKernelGpuCheat : public UserKernelGpu {};

// Output cached in a __device__ global: each element computed on the kernel's first launch and
// copied from the cache afterwards (one 4-byte read instead of two). Right on the separate
// verified launch (the run's inputs), wrong on a timed sample whose inputs were regenerated from
// a fresh seed: FAILED_PRECONDITION naming timed_launch_verified. (A cache from an earlier run
// would not survive: the module is loaded per run, and the run's seed is fresh.)
TEST_F(UserKernelGpuCheat, OutputCachedInADeviceGlobalFailsTheTimedLaunchCheck) {
  absl::StatusOr<RunResult> r = RunUser(R"(
__device__ float cache[1 << 20];
__device__ unsigned char have[1 << 20];
extern "C" __global__ void cached(const float* a, const float* b, float* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n || i >= (1 << 20)) return;
  if (have[i] == 0) {
    cache[i] = a[i] + b[i];
    have[i] = 1;
  }
  c[i] = cache[i];
}
)",
                                        "cached", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("timed_launch_verified failed: timed sample 1 "));
  EXPECT_THAT(r.status().message(), HasSubstr("the separate verified launch matched"));
}

// Only some elements computed (the even ones): every_element_verified fails with the odd half,
// and the timed-sample check saw the same in its note.
TEST_F(UserKernelGpuCheat, OnlySomeElementsComputedFailsVerification) {
  constexpr int64_t n = 1 << 20;
  absl::StatusOr<RunResult> r = RunUser(R"(
extern "C" __global__ void half(const float* a, const float* b, float* c, long long n) {
  const long long i = 2 * (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x);
  if (i < n) c[i] = a[i] + b[i];
}
)",
                                        "half", n);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->verification.has_value());
  EXPECT_FALSE(r->verification->passed);
  EXPECT_EQ(r->verification->mismatches, n / 2);
  EXPECT_EQ(r->verification->first_mismatch_index, 1);
  EXPECT_TRUE(HasCheck(*r, "every_element_verified: "));
  EXPECT_TRUE(HasNote(*r, "timed_launch_verified: timed sample 1 "));
}

// Full work only on the first launch (a per-element "done" flag in a __device__ global), nothing
// afterwards: the first timed sample, always verified, comes after the warm-up's launches.
TEST_F(UserKernelGpuCheat, FullWorkOnlyOnTheFirstLaunchIsCaughtOnTheFirstTimedSample) {
  constexpr int64_t n = 1 << 20;
  absl::StatusOr<RunResult> r = RunUser(R"(
__device__ unsigned char done[1 << 20];
extern "C" __global__ void once(const float* a, const float* b, float* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n || i >= (1 << 20) || done[i] != 0) return;
  c[i] = a[i] + b[i];
  done[i] = 1;
}
)",
                                        "once", n);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->verification->passed);
  EXPECT_EQ(r->verification->mismatches, n);  // the verified launch wrote nothing either
  EXPECT_TRUE(HasNote(*r, "timed_launch_verified: timed sample 1 "));
  ASSERT_TRUE(r->timed_sample_check.has_value());
  EXPECT_EQ(r->timed_sample_check->mismatches, n);
}

// Computes a block's elements only where its first output still holds the poison (all-ones
// bytes): before, only the verified samples started from poisoned outputs, so every verified
// launch was right and the others read one line per block and returned (a hot batch's later
// launches too). Every timed sample now starts from poisoned outputs and is one launch, so the
// kernel does the whole work on each: its median is an honest add's, cold and hot.
TEST_F(UserKernelGpuCheat, ComputingOnlyOnPoisonedOutputsGainsNothing) {
  constexpr char kSly[] = R"(
extern "C" __global__ void sly(const float* a, const float* b, float* c, long long n) {
  __shared__ int poisoned;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x;
  if (threadIdx.x == 0) poisoned = __float_as_uint(c[first]) == 0xffffffffu;
  __syncthreads();
  const long long i = first + threadIdx.x;
  if (poisoned && i < n) c[i] = a[i] + b[i];
}
)";
  constexpr int64_t n = int64_t{16} << 20;
  for (const CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
    SCOPED_TRACE(mode == CacheMode::kCold ? "cold" : "hot");
    absl::StatusOr<RunResult> honest =
        RunUser(kAddF32Source, "AddF32Kernel", n, UserCodeKind::kSource, mode);
    absl::StatusOr<RunResult> sly = RunUser(kSly, "sly", n, UserCodeKind::kSource, mode);
    ASSERT_TRUE(honest.ok()) << honest.status();
    ASSERT_TRUE(sly.ok()) << sly.status();
    EXPECT_TRUE(sly->verification->passed);
    EXPECT_EQ(sly->hot_batch_size, 1);
    EXPECT_TRUE(HasCheck(*sly, "outputs_poisoned: every output set to all-ones bytes before every "
                               "timed sample"));
    EXPECT_GT(sly->stats.median_seconds, 0.8 * honest->stats.median_seconds)
        << "sly " << sly->stats.median_seconds << " s, honest " << honest->stats.median_seconds
        << " s";
  }
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
