// User kernels on a real GPU (docs/user-kernels.md), the way the worker runs them
// (MeasureUserKernelRun): the built-in add_f32's source resubmitted verifies with the same
// registers; a kernel that writes nothing, or corrupts the last element, fails verification; the
// cheats (UserKernelGpuCheat) are each caught by the integrity check they name; a trap fails with
// the CUDA error as a device-lost status; the launch count sees each timed window's own launches
// and a kernel another stream started inside one (UserKernelGpuWindows). Run:
//   F='UserKernelGpu.*:UserKernelGpuCheat.*:UserKernelGpuWindows.*'
//   build/tests/gpu_test --gtest_filter="$F"
//   build/tests/gpu_test --gtest_filter='UserKernelGpuTrap.*'   (alone: it poisons the context)
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "kernels/cuda/cupti_activity.h"
#include "kernels/cuda/timing.h"
#include "kernels/reference.h"
#include "server/engine/resolve.h"
#include "server/engine/user_kernel_checks.h"
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
                                    CacheMode mode = CacheMode::kCold,
                                    TimerChoice timer = TimerChoice::kAuto) {
    RunRequest r = Quick("", n);
    r.cache_mode = mode;
    r.measurement.timer = timer;
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

// An honest kernel passes every check, and the result names each with its figures: exactly one
// kernel in every timed window (CUPTI activity), the event timer at or above the kernel's own
// duration, and the floor of the bound that applies (DRAM cold at 16Mi; L2 hot at 1Mi, whose 12 MiB
// fit in the L2).
TEST_F(UserKernelGpu, AnHonestKernelPassesEveryCheckAndNamesThem) {
  struct Case {
    CacheMode mode;
    int64_t n;
    const char* bound;
  };
  for (const Case& c : {Case{CacheMode::kCold, int64_t{16} << 20, "dram"},
                        Case{CacheMode::kHot, int64_t{1} << 20, "l2"}}) {
    const bool cold = c.mode == CacheMode::kCold;
    SCOPED_TRACE(cold ? "cold" : "hot");
    absl::StatusOr<RunResult> r =
        RunUser(kAddF32Source, "AddF32Kernel", c.n, UserCodeKind::kSource, c.mode);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->verification.has_value() && r->verification->passed);
    for (const char* check :
         {"fresh_seed: ", "outputs_poisoned: ", "every_element_verified: ", "no_device_runtime: ",
          "timed_launch_verified: ", "signature_checked: ", "launch_count: each of the ",
          "timer_cross_check: the cuda_event timer's ", "physical_floor: median "}) {
      EXPECT_TRUE(HasCheck(*r, check)) << check;
    }
    EXPECT_EQ(HasCheck(*r, "persisting_l2_reset: "), cold);
    const UserKernelIntegrity& g = r->user_kernel->integrity;
    EXPECT_TRUE(g.launch_count_applied) << g.launch_count_unavailable;
    EXPECT_EQ(g.launch_count_source, "cupti_activity");
    EXPECT_EQ(g.expected_operations, 1);
    EXPECT_EQ(g.foreign_kernels, 0);
    // Under events only the chosen samples are traced, each audit-only (outside the statistics).
    EXPECT_GE(g.windows_checked, 3);
    EXPECT_EQ(g.windows_checked + g.windows_unrecorded, g.windows_outside_statistics);
    EXPECT_EQ(r->stats.count + r->throttled_samples + g.windows_outside_statistics,
              r->samples_taken);
    EXPECT_TRUE(g.timer_cross_check_applied) << g.timer_cross_check;
    EXPECT_GT(g.kernel_median_seconds, 1e-6);
    // The events contain the kernel: about 1 or more, never much under.
    EXPECT_GE(g.timer_ratio, 1 - kTimerCrossCheckRelative);
    EXPECT_LT(g.timer_ratio, 3);
    EXPECT_EQ(g.floor_bound, c.bound);
    EXPECT_GT(r->stats.median_seconds, g.floor_seconds);
    std::cout << (cold ? "cold" : "hot") << " " << c.n << ": median " << r->stats.median_seconds
              << " s; windows " << g.windows_checked << " (+" << g.windows_unrecorded
              << " unrecorded); timer median " << g.timer_median_seconds << " s, kernel median "
              << g.kernel_median_seconds << " s, ratio " << g.timer_ratio << "; floor "
              << g.floor_seconds << " s (" << g.floor_bound << "; dram " << g.dram_floor_seconds
              << ", l2 " << g.l2_floor_seconds << ")\n";
  }
}

// Under the duration timers the launch count still applies, each the way its timer allows:
// cupti through the same activity records, gpu_time through its range profiler's kernel count;
// the cross-check then says the timer is the durations themselves.
TEST_F(UserKernelGpu, DurationTimersCountLaunchesTheirOwnWay) {
  constexpr int64_t n = int64_t{16} << 20;
  absl::StatusOr<RunResult> cupti = RunUser(kAddF32Source, "AddF32Kernel", n, UserCodeKind::kSource,
                                            CacheMode::kCold, TimerChoice::kCupti);
  ASSERT_TRUE(cupti.ok()) << cupti.status();
  EXPECT_EQ(cupti->user_kernel->integrity.launch_count_source, "cupti_activity");
  EXPECT_TRUE(HasCheck(*cupti, "launch_count: each of the "));
  EXPECT_TRUE(HasCheck(*cupti, "timer_cross_check: the timer is CUPTI's activity records"));
  absl::StatusOr<RunResult> counter =
      RunUser(kAddF32Source, "AddF32Kernel", n, UserCodeKind::kSource, CacheMode::kCold,
              TimerChoice::kGpuTime);
  ASSERT_TRUE(counter.ok()) << counter.status();
  EXPECT_EQ(counter->user_kernel->integrity.launch_count_source, "gpu_time_profiler")
      << counter->user_kernel->integrity.launch_count_unavailable;
  EXPECT_TRUE(HasCheck(*counter, "launch_count: each of the "));
  EXPECT_TRUE(
      HasCheck(*counter, "timer_cross_check: the timer is the kernel's gpu__time_duration"));
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

// The launch count below the engine: a session's timed windows under the event timer with the
// audit on, and the activity recorder with a second stream. A user kernel cannot launch a second
// kernel itself (the device runtime is refused before it runs), so the counts a cheat would
// produce are made here with two launches in one window and a kernel of another stream.
class UserKernelGpuWindows : public CudaTest {};

TEST_F(UserKernelGpuWindows, EachWindowCountsItsOwnLaunchesOnly) {
  absl::StatusOr<RunSpec> spec =
      ResolveRunRequest(Quick("add_f32", int64_t{16} << 20), *backend_, ServerLimits());
  ASSERT_TRUE(spec.ok()) << spec.status();
  HostData data = GenerateHostData(*spec->kernel, spec->shape, 1, &pool_);
  absl::StatusOr<std::unique_ptr<Session>> session =
      backend_->Open(spec->device_index, *spec->kernel, spec->geometry, data);
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  ASSERT_TRUE(s.Warmup(3).ok());
  ASSERT_TRUE(s.SetTimer(TimerStrategy::kBackendClock).ok());
  absl::StatusOr<WindowSource> source = s.AuditWindows();
  ASSERT_TRUE(source.ok()) << "CUPTI activity did not start: " << source.status();
  EXPECT_EQ(*source, WindowSource::kActivityRecords);
  WindowAudit audit;
  // Under events only randomly chosen samples are traced (WindowAuditChooser): take samples until
  // ten were, checking that the others carry no window.
  int untraced = 0;
  for (int i = 1, taken = 0; i <= 10 && taken < 400; ++taken) {
    absl::StatusOr<SampleRecord> sample = i % 2 == 0 ? s.HotSample(1) : s.ColdSample();
    ASSERT_TRUE(sample.ok()) << "sample " << i << ": " << sample.status();
    if (!sample->audited) {
      EXPECT_FALSE(sample->audit_only);
      EXPECT_FALSE(sample->window.has_value());
      ++untraced;
      continue;
    }
    EXPECT_TRUE(sample->audit_only);
    ASSERT_TRUE(sample->window.has_value()) << "no complete record for sample " << i;
    // The flush and the blocking kernel before the window are not its operations.
    EXPECT_EQ(sample->window->operations, 1) << i;
    EXPECT_EQ(sample->window->kernels, 1) << i;
    EXPECT_EQ(sample->window->foreign_kernels, 0) << i;
    EXPECT_GT(sample->window->seconds, 1e-6) << i;
    EXPECT_LE(sample->window->seconds, sample->seconds + kTimerCrossCheckAbsoluteSeconds) << i;
    EXPECT_FALSE(sample->event_seconds.has_value());  // the events are still the samples
    TallyWindow(i, sample->window, &audit);
    ++i;
  }
  ASSERT_EQ(audit.tallies.size(), 1u);
  ASSERT_EQ(audit.tallies[0].windows, 10);
  EXPECT_GT(untraced, 0);
  absl::StatusOr<SampleRecord> two = s.HotSample(2);
  for (int tries = 0; tries < 200 && two.ok() && !two->audited; ++tries) two = s.HotSample(2);
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_TRUE(two->window.has_value());
  EXPECT_EQ(two->window->operations, 2);
  EXPECT_EQ(two->window->kernels, 2);
  TallyWindow(11, two->window, &audit);
  RunResult r;
  r.window_audit = audit;  // as if the run's windows were one launch each
  std::string what;
  absl::Status count = CheckLaunchCount(r, 1, &what);
  EXPECT_EQ(count.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(count.message(), HasSubstr("timed sample 11 ran 2 GPU operations (2 kernels)"));
  // SetTimer ends the audit.
  ASSERT_TRUE(s.SetTimer(TimerStrategy::kBackendClock).ok());
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<SampleRecord> after = s.ColdSample();
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_FALSE(after->audited);
    EXPECT_FALSE(after->window.has_value());
  }
}

// A kernel of another stream that starts while the window's kernel runs is foreign: the window's
// kernel is the blocking kernel held by the host, the other one a blocking kernel already
// released.
TEST_F(UserKernelGpuWindows, AKernelAnotherStreamStartsInTheWindowIsForeign) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  absl::StatusOr<std::unique_ptr<cuda::ActivityRecorder>> recorder =
      cuda::ActivityRecorder::Start();
  ASSERT_TRUE(recorder.ok()) << recorder.status();
  cudaStream_t window_stream = nullptr;
  cudaStream_t other_stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&window_stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other_stream, cudaStreamNonBlocking), cudaSuccess);
  void* host = nullptr;
  ASSERT_EQ(cudaHostAlloc(&host, 2 * sizeof(cuda::BlockingState), cudaHostAllocMapped),
            cudaSuccess);
  std::memset(host, 0, 2 * sizeof(cuda::BlockingState));
  void* device = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&device, host, 0), cudaSuccess);
  auto* held = static_cast<volatile cuda::BlockingState*>(host);
  auto* released = held + 1;
  auto* held_device = static_cast<cuda::BlockingState*>(device);
  auto* released_device = held_device + 1;
  released->release = 1;
  constexpr uint64_t kTimeoutNs = 5'000'000'000;

  // Alone: one kernel, nothing foreign.
  uint64_t region = (*recorder)->BeginRegion();
  ASSERT_EQ(cuda::LaunchBlockingKernel(released_device, 0, kTimeoutNs, window_stream), 0);
  (*recorder)->EndRegion();
  ASSERT_EQ(cudaStreamSynchronize(window_stream), cudaSuccess);
  std::optional<cuda::ActivityRecorder::Span> alone = (*recorder)->TakeSpan(region);
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(alone->operations, 1);
  EXPECT_EQ(alone->kernels, 1);
  EXPECT_EQ(alone->foreign_kernels, 0);

  // Held by the host while the other stream's kernel starts and ends.
  region = (*recorder)->BeginRegion();
  ASSERT_EQ(cuda::LaunchBlockingKernel(held_device, 0, kTimeoutNs, window_stream), 0);
  (*recorder)->EndRegion();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(cuda::LaunchBlockingKernel(released_device, 0, kTimeoutNs, other_stream), 0);
  ASSERT_EQ(cudaStreamSynchronize(other_stream), cudaSuccess);
  held->release = 1;
  ASSERT_EQ(cudaStreamSynchronize(window_stream), cudaSuccess);
  const int32_t timed_out = held->timed_out;
  EXPECT_EQ(timed_out, 0);
  std::optional<cuda::ActivityRecorder::Span> shared = (*recorder)->TakeSpan(region);
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ(shared->operations, 1);
  EXPECT_EQ(shared->kernels, 1);
  EXPECT_EQ(shared->foreign_kernels, 1);
  EXPECT_GT(shared->nanoseconds, 40'000'000u);  // held for the 50 ms sleep

  recorder->reset();
  cudaStreamDestroy(window_stream);
  cudaStreamDestroy(other_stream);
  cudaFreeHost(host);
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
