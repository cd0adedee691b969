// User kernels through the worker's compiler (NVRTC, no GPU needed), the spec's validation, the
// wire and the server's refusals (docs/user-kernels.md).
#include "server/worker/user_compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "server/engine/resolve_user_kernel.h"
#include "server/engine/user_kernel_checks.h"
#include "server/worker/wire.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

constexpr char kAddF16[] = R"(
extern "C" __global__ void my_add(const __half* a, const __half* b, __half* c, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = __hadd(a[i], b[i]);
}
)";

UserKernelRequest AddRequest(std::string source = kAddF16, std::string entry = "my_add") {
  return {.kind = UserCodeKind::kSource,
          .code = std::move(source),
          .entry = std::move(entry),
          .family = "elementwise_add",
          .dtype = "f16",
          .launch = {.block_size = 256}};
}

std::shared_ptr<const UserKernelSpec> Spec(UserKernelRequest request) {
  absl::StatusOr<std::shared_ptr<const UserKernelSpec>> spec =
      MakeUserKernelSpec(std::move(request), 1 << 20);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : nullptr;
}

UserCompiler Compiler() { return UserCompiler({.include_dir = DefaultUserKernelIncludeDir()}); }

#define REQUIRE_NVRTC()                                                \
  if (!HaveNvrtc())                                                    \
  GTEST_SKIP() << "built without NVRTC (no CUDA toolkit at configure " \
                  "time): the compiler answers FAILED_PRECONDITION"

TEST(UserCompiler, CompilesAndLowersTheEntry) {
  REQUIRE_NVRTC();
  UserCompiler compiler = Compiler();
  absl::StatusOr<CompiledUserKernel> c = compiler.Compile(*Spec(AddRequest()), "compute_90");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->lowered_name, "my_add");
  EXPECT_TRUE(c->image_is_ptx);
  EXPECT_THAT(c->image, HasSubstr(".entry my_add"));
  EXPECT_TRUE(c->signature_checked);
  EXPECT_FALSE(c->cache_hit);
  EXPECT_GT(c->compile_seconds, 0);
}

TEST(UserCompiler, ACxxNameIsLowered) {
  REQUIRE_NVRTC();
  const std::string source = R"(namespace mine {
__global__ void add(const float* a, const float* b, float* c, long long n) {
  long long i = blockIdx.x * 1ll * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
}  // namespace mine
)";
  UserKernelRequest r = AddRequest(source, "mine::add");
  r.dtype = "f32";
  UserCompiler compiler = Compiler();
  absl::StatusOr<CompiledUserKernel> c = compiler.Compile(*Spec(r), "sm_90");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->lowered_name, HasSubstr("_ZN4mine3add"));
  EXPECT_FALSE(c->image_is_ptx);  // sm_90: a cubin
  EXPECT_EQ(c->image.compare(0, 4,
                             "\x7f"
                             "ELF"),
            0);
}

TEST(UserCompiler, SyntaxErrorIsInvalidArgumentWithFileAndLine) {
  REQUIRE_NVRTC();
  UserCompiler compiler = Compiler();
  absl::StatusOr<CompiledUserKernel> c = compiler.Compile(
      *Spec(AddRequest("extern \"C\" __global__ void my_add(const __half* a, const __half* b, "
                       "__half* c, long long n) {\n  c[0] = a[0] +;\n}\n")),
      "compute_90");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("user.cu(2)"));
  EXPECT_THAT(c.status().message(), HasSubstr("does not compile"));
}

TEST(UserCompiler, SignatureMismatchIsRefusedAtCompileTime) {
  REQUIRE_NVRTC();
  UserCompiler compiler = Compiler();
  // float buffers for an f16 run, and a missing n.
  for (const char* source :
       {"extern \"C\" __global__ void my_add(const float* a, const float* b, float* c, long long "
        "n) {}\n",
        "extern \"C\" __global__ void my_add(const __half* a, const __half* b, __half* c) {}\n",
        "extern \"C\" __global__ void my_add(__half* a, const __half* b, __half* c, int n) {}\n"}) {
    absl::StatusOr<CompiledUserKernel> c =
        compiler.Compile(*Spec(AddRequest(source)), "compute_90");
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << source;
    EXPECT_THAT(c.status().message(), HasSubstr("does not have the contract of elementwise_add"));
    EXPECT_THAT(c.status().message(), HasSubstr("gpubench_signature_check("));
  }
}

TEST(UserCompiler, AnEntryThatIsNotAKernelIsRefused) {
  REQUIRE_NVRTC();
  UserCompiler compiler = Compiler();
  absl::StatusOr<CompiledUserKernel> c = compiler.Compile(
      *Spec(AddRequest("extern \"C\" __device__ void my_add(const __half*, const __half*, "
                       "__half*, long long) {}\n")),
      "compute_90");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UserCompiler, SecondIdenticalSubmissionHitsTheCache) {
  REQUIRE_NVRTC();
  UserCompiler compiler = Compiler();
  ASSERT_TRUE(compiler.Compile(*Spec(AddRequest()), "compute_90").ok());
  absl::StatusOr<CompiledUserKernel> again = compiler.Compile(*Spec(AddRequest()), "compute_90");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->compile_seconds, 0);
  // Another architecture or option is another entry.
  UserKernelRequest fast = AddRequest();
  fast.compile.fast_math = true;
  absl::StatusOr<CompiledUserKernel> other = compiler.Compile(*Spec(fast), "compute_90");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->cache_hit);
  EXPECT_EQ(compiler.cached_entries(), 2);
}

TEST(UserCompiler, CacheIsBoundedInEntries) {
  REQUIRE_NVRTC();
  UserCompiler compiler({.cache_entries = 2, .include_dir = DefaultUserKernelIncludeDir()});
  for (int i = 0; i < 3; ++i) {
    UserKernelRequest r = AddRequest();
    r.compile.defines = {absl::StrCat("V", i)};
    ASSERT_TRUE(compiler.Compile(*Spec(r), "compute_90").ok());
  }
  EXPECT_EQ(compiler.cached_entries(), 2);
  UserKernelRequest first = AddRequest();
  first.compile.defines = {"V0"};
  absl::StatusOr<CompiledUserKernel> again = compiler.Compile(*Spec(first), "compute_90");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->cache_hit);  // the least recently used went first
}

TEST(UserCompiler, OverTheWorkersLimitIsRefused) {
  UserCompiler compiler({.max_code_bytes = 64, .include_dir = DefaultUserKernelIncludeDir()});
  absl::StatusOr<CompiledUserKernel> c = compiler.Compile(*Spec(AddRequest()), "compute_90");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("over the worker's limit of 64"));
}

TEST(UserCompiler, PtxPassesThroughUnchecked) {
  REQUIRE_NVRTC();
  UserCompiler compiler = Compiler();
  absl::StatusOr<CompiledUserKernel> compiled = compiler.Compile(*Spec(AddRequest()), "compute_90");
  ASSERT_TRUE(compiled.ok());
  UserKernelRequest ptx = AddRequest(compiled->image);
  ptx.kind = UserCodeKind::kPtx;
  absl::StatusOr<CompiledUserKernel> c = compiler.Compile(*Spec(ptx), "compute_90");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->signature_checked);
  EXPECT_THAT(c->signature_note, HasSubstr("not checked"));
  EXPECT_EQ(c->architecture, "sm_90");  // the PTX's .target
  ptx.entry = "other";
  EXPECT_EQ(compiler.Compile(*Spec(ptx), "compute_90").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The contract's own example compiles and passes its static check, for every family and dtype
// that has one.
TEST(UserCompiler, EveryContractsExampleCompiles) {
  REQUIRE_NVRTC();
  UserCompiler compiler = Compiler();
  std::set<std::pair<const KernelFamily*, DType>> seen;
  int compiled = 0;
  for (const KernelVariant& v : AllKernels()) {
    if (!seen.insert({v.family, v.dtype}).second) continue;
    absl::StatusOr<UserKernelContract> contract = ContractFor(*v.family, v.dtype);
    if (!contract.ok()) continue;
    UserKernelRequest r{.code = contract->Example("my_kernel"),
                        .entry = "my_kernel",
                        .family = std::string(v.family->name),
                        .dtype = DTypeName(v.dtype),
                        .launch = {.block_size = 128}};
    absl::StatusOr<CompiledUserKernel> c = compiler.Compile(*Spec(r), "compute_90");
    EXPECT_TRUE(c.ok()) << v.family->name << " " << DTypeName(v.dtype) << ": " << c.status();
    ++compiled;
  }
  EXPECT_GE(compiled, 3);
}

TEST(UserKernelSpec, ValidationBeforeAnyCompiler) {
  UserKernelRequest no_block = AddRequest();
  no_block.launch.block_size = 0;
  EXPECT_EQ(MakeUserKernelSpec(no_block, 1 << 20).status().code(),
            absl::StatusCode::kInvalidArgument);
  UserKernelRequest bad_option = AddRequest();
  bad_option.compile.defines = {"X; rm -rf /"};
  EXPECT_EQ(MakeUserKernelSpec(bad_option, 1 << 20).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::shared_ptr<const UserKernelSpec>> big =
      MakeUserKernelSpec(AddRequest(std::string(10 << 20, ' ')), 1 << 20);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("--max_user_kernel_bytes"));
  UserKernelRequest gemm = AddRequest();
  gemm.family = "gemm";
  EXPECT_EQ(MakeUserKernelSpec(gemm, 1 << 20).status().code(),
            absl::StatusCode::kFailedPrecondition);
  std::shared_ptr<const UserKernelSpec> spec = Spec(AddRequest());
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->variant.name, kUserKernelName);
  EXPECT_EQ(spec->variant.family->name, "elementwise_add");
  EXPECT_EQ(spec->variant.dtype, DType::kF16);
  EXPECT_EQ(spec->code_sha256.size(), 64u);
}

TEST(UserKernelResolve, RefusedWithoutTheFlagAndWithAFixedSeed) {
  RunRequest request;
  request.elements = 1024;
  request.user_kernel = AddRequest();
  RunSpec spec;
  ServerLimits limits;
  absl::Status off = ResolveUserKernel(request, limits, &spec);
  EXPECT_EQ(off.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(off.message(), HasSubstr("--allow_user_kernels"));
  limits.user_kernels.allowed = true;
  EXPECT_TRUE(ResolveUserKernel(request, limits, &spec).ok());
  EXPECT_EQ(spec.kernel, &spec.user_kernel->variant);
  RunRequest seeded = request;
  seeded.seed = 7;
  EXPECT_EQ(ResolveUserKernel(seeded, limits, &spec).code(), absl::StatusCode::kInvalidArgument);
  RunRequest unverified = request;
  unverified.verify = false;
  EXPECT_EQ(ResolveUserKernel(unverified, limits, &spec).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(UserKernelWire, TheSpecCrossesAsItsRequestAndIsRebuilt) {
  RunSpec spec;
  spec.user_kernel = Spec(AddRequest());
  spec.kernel = &spec.user_kernel->variant;
  spec.elements = 4096;
  absl::StatusOr<RunSpec> back = DecodeRunSpec(EncodeRunSpec(spec));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_NE(back->user_kernel, nullptr);
  EXPECT_NE(back->user_kernel, spec.user_kernel);  // rebuilt, not shared
  EXPECT_EQ(back->kernel, &back->user_kernel->variant);
  EXPECT_EQ(back->user_kernel->request.code, kAddF16);
  EXPECT_EQ(back->user_kernel->code_sha256, spec.user_kernel->code_sha256);
  RunResult result;
  result.spec = spec;
  result.user_kernel.emplace();
  result.user_kernel->entry = "my_add";
  result.user_kernel->integrity_checks = {"fresh_seed"};
  result.user_kernel->integrity = {.launch_count_applied = true,
                                   .launch_count_source = "cupti_activity",
                                   .windows_checked = 40,
                                   .expected_operations = 1,
                                   .timer_ratio = 1.06,
                                   .floor_bound = "l2",
                                   .l2_floor_seconds = 1.9e-7};
  absl::StatusOr<RunResult> r = DecodeRunResult(EncodeRunResult(result));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->spec.kernel, &r->spec.user_kernel->variant);
  ASSERT_TRUE(r->user_kernel.has_value());
  EXPECT_EQ(r->user_kernel->integrity_checks, std::vector<std::string>{"fresh_seed"});
  const UserKernelIntegrity& g = r->user_kernel->integrity;
  EXPECT_TRUE(g.launch_count_applied);
  EXPECT_EQ(g.launch_count_source, "cupti_activity");
  EXPECT_EQ(g.windows_checked, 40);
  EXPECT_EQ(g.expected_operations, 1);
  EXPECT_EQ(g.timer_ratio, 1.06);
  EXPECT_EQ(g.floor_bound, "l2");
  EXPECT_EQ(g.l2_floor_seconds, 1.9e-7);
}

TEST(UserKernelChecks, PhysicalFloor) {
  RunResult r;
  r.spec.user_kernel = Spec(AddRequest());
  r.spec.kernel = &r.spec.user_kernel->variant;
  r.spec.shape.elements = r.spec.elements = 1 << 24;  // f16: 32 MiB per input
  r.spec.cache_mode = CacheMode::kCold;
  r.device.peak_bandwidth_bytes_per_second = 4.8e12;
  r.device.l2_cache_bytes = 50 << 20;
  r.bytes_moved = 3 * (int64_t{2} << 24);
  const PhysicalFloor f = PhysicalFloorOf(r);
  EXPECT_EQ(f.dram_bytes, 2 * (int64_t{2} << 24));  // the two inputs; the write may sit in L2
  std::string what;
  r.stats.median_seconds = f.seconds * 0.5;
  absl::Status s = CheckPhysicalFloor(r, &what);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("implausible"));
  r.stats.median_seconds = f.seconds * 1.2;
  EXPECT_TRUE(CheckPhysicalFloor(r, &what).ok());
  EXPECT_THAT(what, HasSubstr("physical_floor"));
  // Hot: only what exceeds the L2.
  r.spec.cache_mode = CacheMode::kHot;
  EXPECT_EQ(PhysicalFloorOf(r).dram_bytes, r.bytes_moved - (50 << 20));
}

}  // namespace
}  // namespace gpubench
