// The user-kernel contract derived from the family declarations, the compile-option whitelist
// and the source checks (kernels/user_kernel.h). No NVRTC: tests/engine/user_compiler_test.cc
// compiles.
#include "kernels/user_kernel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "absl/strings/str_cat.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

TEST(UserKernelContract, ElementwiseAddF16IsThreeBuffersThenN) {
  absl::StatusOr<UserKernelContract> c = ContractFor("elementwise_add", "f16");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->Signature("my_add"),
            "extern \"C\" __global__ void my_add(const __half* a, const __half* b, __half* c, "
            "long long n)");
  EXPECT_EQ(c->pointer_type, "void (*)(const __half*, const __half*, __half*, long long)");
  EXPECT_EQ(c->prelude, "#include <cuda_fp16.h>\n");
  EXPECT_THAT(c->Example("my_add"), HasSubstr("c[i] = a[i] + b[i];"));
  ASSERT_NE(c->tolerance_from, nullptr);
  EXPECT_EQ(c->tolerance_from->family->name, "elementwise_add");
  EXPECT_EQ(c->tolerance_from->dtype, DType::kF16);
}

TEST(UserKernelContract, SaxpyTakesAlphaAfterItsBuffers) {
  absl::StatusOr<UserKernelContract> c = ContractFor("saxpy", "f32");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->pointer_type, "void (*)(const float*, float*, float, long long)");
  EXPECT_EQ(c->parameters[1].role, "in_out");
  EXPECT_EQ(c->parameters[2].name, "alpha");
  EXPECT_EQ(c->prelude, "");
}

TEST(UserKernelContract, CopyAndBf16) {
  absl::StatusOr<UserKernelContract> copy = ContractFor("copy", "f32");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->pointer_type, "void (*)(const float*, float*, long long)");
  absl::StatusOr<UserKernelContract> bf16 = ContractFor("elementwise_add", "bf16");
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_THAT(bf16->pointer_type, HasSubstr("const __nv_bfloat16*"));
  EXPECT_EQ(bf16->prelude, "#include <cuda_bf16.h>\n");
}

TEST(UserKernelContract, FamiliesWithoutAContractSayWhy) {
  absl::StatusOr<UserKernelContract> latency = ContractFor("latency", "u64");
  EXPECT_EQ(latency.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(latency.status().message(), HasSubstr("takes no user kernels"));
  absl::StatusOr<UserKernelContract> gemm = ContractFor("gemm", "f16");
  EXPECT_EQ(gemm.status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<UserKernelContract> h2d = ContractFor("h2d_pinned", "f32");
  EXPECT_EQ(h2d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(h2d.status().message(), HasSubstr("copy-engine transfer"));
}

TEST(UserKernelContract, UnknownFamilyAndDtypeWithoutBuiltins) {
  EXPECT_EQ(ContractFor("nope", "f32").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ContractFor("elementwise_add", "f99").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<UserKernelContract> f64 = ContractFor("elementwise_add", "f64");
  EXPECT_EQ(f64.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f64.status().message(), HasSubstr("f16"));  // the dtypes it has
}

// Every registered family at every dtype it has: a contract whose parameters are its buffers in
// order (inputs const), alpha where declared, then n; or a refusal with the reason.
TEST(UserKernelContract, EveryCatalogFamilyAndDtype) {
  std::set<std::pair<const KernelFamily*, DType>> seen;
  int with_contract = 0;
  for (const KernelVariant& v : AllKernels()) {
    if (!seen.insert({v.family, v.dtype}).second) continue;
    absl::StatusOr<UserKernelContract> c = ContractFor(*v.family, v.dtype);
    if (!c.ok()) {
      EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition) << v.family->name;
      EXPECT_THAT(c.status().message(), HasSubstr(v.family->name));
      continue;
    }
    ++with_contract;
    const size_t buffers = v.family->buffers.size();
    ASSERT_EQ(c->parameters.size(), buffers + (v.family->alpha_argument ? 1 : 0) + 1)
        << v.family->name;
    for (size_t i = 0; i < buffers; ++i) {
      EXPECT_EQ(c->parameters[i].name, v.family->buffers[i].name);
      EXPECT_EQ(c->parameters[i].type.rfind("const ", 0) == 0,
                v.family->buffers[i].role == BufferRole::kInput)
          << c->parameters[i].type;
    }
    EXPECT_EQ(c->parameters.back().type, "long long");
    EXPECT_EQ(v.family->verify_samples, 0) << v.family->name << ": user kernels verify whole";
  }
  EXPECT_GE(with_contract, 3);  // elementwise_add x3 dtypes, saxpy, copy at least
}

// The timed-sample check (timed_launch_verified) gives a chosen sample fresh inputs made on the
// device and checks it there: every family with a contract must allow both, or the CUDA session
// refuses the run (FAILED_PRECONDITION).
TEST(UserKernelContract, EveryContractFamilyCanBeCheckedOnTheDeviceWithFreshInputs) {
  int checked = 0;
  for (const KernelVariant& v : AllKernels()) {
    absl::StatusOr<UserKernelContract> c = ContractFor(*v.family, v.dtype);
    if (!c.ok()) continue;
    ++checked;
    for (const BufferSpec& b : v.family->buffers) {
      if (b.role != BufferRole::kOutput) {
        EXPECT_TRUE(GeneratedOnDevice(b)) << v.family->name << "." << b.name;
      }
      if (IsVerified(b)) {
        EXPECT_EQ(b.placement, Placement::kDevice) << v.family->name;
      }
    }
#if GPUBENCH_HAVE_CUDA
    // The user kernel's variant has no reference of its own: the family's device check applies.
    EXPECT_NE(v.family->device_check, nullptr) << v.family->name;
#endif
  }
  EXPECT_GE(checked, 3);
}

TEST(UserCompileOptions, WhitelistOnly) {
  EXPECT_TRUE(ValidateCompileOptions({.defines = {"N", "TILE=4", "X=1.5e-3", "Y=a_b"},
                                      .maxrregcount = 64,
                                      .fast_math = true,
                                      .line_info = true})
                  .ok());
  for (const char* bad :
       {"-rdc=true", "A B", "A=$(x)", "A=\"x\"", "=1", "1A", "A=x y", "--include-path=/etc"}) {
    absl::Status s = ValidateCompileOptions({.defines = {bad}});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ValidateCompileOptions({.maxrregcount = 8}).ok());
  EXPECT_FALSE(ValidateCompileOptions({.maxrregcount = 256}).ok());
  UserCompileOptions many;
  many.defines.assign(kMaxUserDefines + 1, "A");
  EXPECT_FALSE(ValidateCompileOptions(many).ok());
}

TEST(UserCompileOptions, NvrtcArgumentsAreExactlyTheWhitelist) {
  const std::vector<std::string> args =
      NvrtcArguments({.defines = {"T=4"}, .maxrregcount = 32, .fast_math = true}, "sm_90", "/inc");
  EXPECT_EQ(args, (std::vector<std::string>{"--gpu-architecture=sm_90", "-default-device",
                                            "-std=c++17", "--include-path=/inc", "-DT=4",
                                            "--maxrregcount=32", "--use_fast_math"}));
}

TEST(UserKernelSource, SizeAndIncludes) {
  EXPECT_TRUE(CheckUserSource("__global__ void k() {}", 100).ok());
  absl::Status big = CheckUserSource(std::string(101, ' '), 100);
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.message(), HasSubstr("over this server's limit of 100"));
  for (const char* hidden : {"#include \"/etc/passwd\"\n", "# /**/ include <x>\n",
                             "%:include <x>\n", "#inc\\\nlude <x>\n", "#import <x>\n",
                             "#if __has_include(<x>)\n#endif\n", "#embed \"/etc/passwd\"\n"}) {
    absl::Status s = CheckUserSource(absl::StrCat("int x;\n", hidden), 1000);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << hidden;
    EXPECT_THAT(s.message(), HasSubstr("user.cu(2)")) << hidden;
  }
  EXPECT_FALSE(CheckUserSource(std::string("a\0b", 3), 100).ok());
}

TEST(UserKernelEntry, Names) {
  EXPECT_TRUE(ValidateEntryName("my_add", true).ok());
  EXPECT_TRUE(ValidateEntryName("ns::inner::my_add", true).ok());
  EXPECT_FALSE(ValidateEntryName("", true).ok());
  EXPECT_FALSE(ValidateEntryName("add<float>", true).ok());
  EXPECT_FALSE(ValidateEntryName("a); system(\"x\"); (", true).ok());
  EXPECT_TRUE(ValidateEntryName("_Z6my_addPKfS0_Pfx", false).ok());
  EXPECT_FALSE(ValidateEntryName("a b", false).ok());
}

TEST(UserKernelImage, DeviceRuntimeIsFound) {
  EXPECT_EQ(DeviceRuntimeReference(".extern .func (.param .b32 r) cudaLaunchDevice(..."),
            "cudaLaunchDevice");
  EXPECT_EQ(DeviceRuntimeReference(".visible .entry k()"), std::nullopt);
}

}  // namespace
}  // namespace gpubench
