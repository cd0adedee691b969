// The GEMM family's host side: E4M3 and TF32 rounding, the CPU GEMM, the sampled verification and
// its error bound, and the datasheet peak table.
#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/gemm_peak.h"
#include "kernels/numeric.h"

namespace gpubench {
namespace {

// ---- E4M3 ---------------------------------------------------------------------------------

TEST(Fp8E4M3, KnownEncodings) {
  EXPECT_EQ(DoubleToFp8E4M3(0.0).bits, 0x00);
  EXPECT_EQ(DoubleToFp8E4M3(-0.0).bits, 0x80);
  EXPECT_EQ(DoubleToFp8E4M3(1.0).bits, 0x38);  // exponent 7 (bias 7), mantissa 0
  EXPECT_EQ(DoubleToFp8E4M3(-2.0).bits, 0xc0);
  EXPECT_EQ(DoubleToFp8E4M3(448.0).bits, 0x7e);                // largest finite
  EXPECT_EQ(DoubleToFp8E4M3(std::ldexp(1.0, -6)).bits, 0x08);  // smallest normal
  EXPECT_EQ(DoubleToFp8E4M3(std::ldexp(1.0, -9)).bits, 0x01);  // smallest subnormal
  EXPECT_EQ(DoubleToFp8E4M3(7 * std::ldexp(1.0, -9)).bits, 0x07);  // largest subnormal
  EXPECT_EQ(Fp8E4M3ToFloat(Fp8E4M3{0x7e}), 448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(Fp8E4M3{0x01}), std::ldexp(1.0f, -9));
  EXPECT_EQ(Fp8E4M3ToFloat(Fp8E4M3{0xb8}), -1.0f);
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(Fp8E4M3{0x7f})));
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(Fp8E4M3{0xff})));
  // S.1111.110 is a number (the FN variant has no infinities).
  EXPECT_EQ(Fp8E4M3ToFloat(Fp8E4M3{0xfe}), -448.0f);
}

TEST(Fp8E4M3, EveryCodeRoundTrips) {
  for (int bits = 0; bits < 256; ++bits) {
    const float f = Fp8E4M3ToFloat(Fp8E4M3{static_cast<uint8_t>(bits)});
    if (std::isnan(f)) {
      EXPECT_EQ(bits & 0x7f, 0x7f);
      continue;
    }
    ASSERT_EQ(DoubleToFp8E4M3(f).bits, bits) << std::hex << bits;
  }
}

TEST(Fp8E4M3, RoundsToNearestEvenBetweenEveryPairOfNeighbours) {
  // For each pair of adjacent positive finite codes, the midpoint goes to the even code, and a
  // hair either side of it goes to the nearer one.
  for (int bits = 0; bits < 0x7e; ++bits) {
    const double lo = Fp8E4M3ToFloat(Fp8E4M3{static_cast<uint8_t>(bits)});
    const double hi = Fp8E4M3ToFloat(Fp8E4M3{static_cast<uint8_t>(bits + 1)});
    const double mid = (lo + hi) / 2;
    const int even = (bits % 2 == 0) ? bits : bits + 1;
    EXPECT_EQ(DoubleToFp8E4M3(mid).bits, even) << lo << " .. " << hi;
    EXPECT_EQ(DoubleToFp8E4M3(mid - (hi - lo) * 1e-6).bits, bits);
    EXPECT_EQ(DoubleToFp8E4M3(mid + (hi - lo) * 1e-6).bits, bits + 1);
    EXPECT_EQ(DoubleToFp8E4M3(-mid).bits, 0x80 | even);
  }
}

TEST(Fp8E4M3, OverflowSaturatesOrGivesNaN) {
  // 464 is the tie between 448 (mantissa 110, even) and the NaN pattern's 480: it stays 448.
  EXPECT_EQ(DoubleToFp8E4M3(464.0).bits, 0x7e);
  EXPECT_EQ(DoubleToFp8E4M3(464.0, /*saturate=*/false).bits, 0x7e);
  EXPECT_EQ(DoubleToFp8E4M3(465.0).bits, 0x7e);
  EXPECT_EQ(DoubleToFp8E4M3(465.0, /*saturate=*/false).bits, 0x7f);
  EXPECT_EQ(DoubleToFp8E4M3(-1e9).bits, 0xfe);
  EXPECT_EQ(DoubleToFp8E4M3(-1e9, false).bits, 0xff);
  EXPECT_EQ(DoubleToFp8E4M3(std::numeric_limits<double>::infinity()).bits, 0x7e);
  EXPECT_EQ(DoubleToFp8E4M3(std::nan("")).bits & 0x7f, 0x7f);
  // Underflow: half the smallest subnormal ties to zero (even); a hair more rounds up.
  EXPECT_EQ(DoubleToFp8E4M3(std::ldexp(1.0, -10)).bits, 0x00);
  EXPECT_EQ(DoubleToFp8E4M3(std::ldexp(1.0, -10) * 1.01).bits, 0x01);
}

// ---- TF32 ---------------------------------------------------------------------------------

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

TEST(Tf32, KeepsTenMantissaBitsRoundingToNearestEven) {
  EXPECT_EQ(RoundToTf32(1.0f), 1.0f);
  EXPECT_EQ(RoundToTf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);  // representable
  EXPECT_EQ(RoundToTf32(1.0f + 0x1p-11f), 1.0f);             // tie: to even
  EXPECT_EQ(RoundToTf32(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);  // tie: to even (up)
  EXPECT_EQ(RoundToTf32(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);
  EXPECT_EQ(RoundToTf32(-1.0f - 0x1p-11f - 0x1p-20f), -1.0f - 0x1p-10f);
  // The largest float rounds up past the largest TF32 into infinity.
  EXPECT_TRUE(std::isinf(RoundToTf32(FromBits(0x7f7fffffu))));
  EXPECT_TRUE(std::isnan(RoundToTf32(std::numeric_limits<float>::quiet_NaN())));
  for (uint32_t bits = 0x3f800000u; bits < 0x3f800000u + (1u << 16); bits += 7) {
    uint32_t r;
    const float rounded = RoundToTf32(FromBits(bits));
    std::memcpy(&r, &rounded, sizeof(r));
    ASSERT_EQ(r & 0x1fffu, 0u);
    ASSERT_LE(std::fabs(rounded - FromBits(bits)), 0x1p-11f);  // half an ulp at [1, 2)
  }
}

// ---- CPU GEMM and verification -----------------------------------------------------------

std::vector<std::byte> RunCpuGemm(const GemmHostData& data, ParallelPool* pool) {
  std::vector<std::byte> d(
      static_cast<size_t>(data.shape.m * data.shape.n * GemmInfo(data.precision).output_bytes));
  CpuGemm(data, d.data(), pool);
  return d;
}

class GemmPrecisionTest : public ::testing::TestWithParam<GemmPrecision> {
 protected:
  ParallelPool pool_{4};
};

TEST_P(GemmPrecisionTest, CpuGemmPassesVerificationOnRaggedShapes) {
  // Shapes that leave ragged tiles and register blocks, and a long K that crosses K slices.
  for (const GemmShape shape : {GemmShape{37, 53, 70}, GemmShape{130, 67, 600},
                                GemmShape{1, 1, 1}, GemmShape{64, 64, 256}}) {
    const GemmHostData data = GenerateGemmData(GetParam(), shape, 42, &pool_);
    const std::vector<std::byte> d = RunCpuGemm(data, &pool_);
    const GemmVerification v = VerifyGemm(data, d.data(), kGemmDefaultSamples, 7, &pool_);
    EXPECT_TRUE(v.passed) << GemmInfo(GetParam()).name << " " << GemmShapeString(shape)
                          << " mismatches " << v.mismatches << " first (" << v.first_mismatch_row
                          << "," << v.first_mismatch_column << ") expected "
                          << v.first_mismatch_expected << " actual " << v.first_mismatch_actual
                          << " bound " << v.first_mismatch_bound;
    EXPECT_EQ(v.checked, std::min(shape.m * shape.n, kGemmDefaultSamples));  // small: all
    EXPECT_EQ(v.finite_checked, shape.m * shape.n);
    EXPECT_LT(v.max_error_to_bound, 1.0);
  }
}

TEST_P(GemmPrecisionTest, CpuGemmIsTheSameForAnyThreadCount) {
  const GemmHostData data = GenerateGemmData(GetParam(), {150, 90, 300}, 3, &pool_);
  ParallelPool one(1);
  EXPECT_EQ(RunCpuGemm(data, &one), RunCpuGemm(data, &pool_));
}

TEST_P(GemmPrecisionTest, WrongResultsFailVerification) {
  const GemmShape shape{96, 80, 512};
  const GemmHostData data = GenerateGemmData(GetParam(), shape, 11, &pool_);
  std::vector<std::byte> d = RunCpuGemm(data, &pool_);
  const int bytes = GemmInfo(GetParam()).output_bytes;
  // B used untransposed (the classic layout mix-up): a different matrix product.
  GemmHostData swapped = data;
  std::swap(swapped.a, swapped.b);
  std::swap(swapped.shape.m, swapped.shape.n);
  // (96 x 80 and 80 x 96 have the same element count; D^T's bytes read as D.)
  const std::vector<std::byte> transposed = RunCpuGemm(swapped, &pool_);
  EXPECT_FALSE(VerifyGemm(data, transposed.data(), kGemmDefaultSamples, 7, &pool_).passed);
  // One tile never written: the poison (NaN) shows in the finiteness scan.
  std::vector<std::byte> unwritten = d;
  std::vector<std::byte> poison(static_cast<size_t>(bytes), std::byte{0xff});  // NaN, any type
  for (int64_t i = 0; i < 16; ++i) {
    std::memcpy(unwritten.data() + (40 + 50 * shape.m + i) * bytes, poison.data(), bytes);
  }
  const GemmVerification v = VerifyGemm(data, unwritten.data(), 64, 7, &pool_);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.nonfinite, 16);
  // Scales ignored (fp8) or inputs half as large: a factor of 2 off everywhere.
  GemmHostData doubled = data;
  doubled.scale_a = 2 * data.scale_a;
  EXPECT_FALSE(VerifyGemm(doubled, d.data(), kGemmDefaultSamples, 7, &pool_).passed);
}

INSTANTIATE_TEST_SUITE_P(AllPrecisions, GemmPrecisionTest,
                         ::testing::Values(GemmPrecision::kF16, GemmPrecision::kBF16,
                                           GemmPrecision::kTF32, GemmPrecision::kF32,
                                           GemmPrecision::kF64, GemmPrecision::kF8E4M3),
                         [](const auto& info) { return std::string(GemmInfo(info.param).name); });

TEST(Gemm, Fp8InputsAreE4M3ValuesWithScales) {
  ParallelPool pool(2);
  const GemmHostData data = GenerateGemmData(GemmPrecision::kF8E4M3, {16, 16, 64}, 5, &pool);
  EXPECT_EQ(data.a.size(), 16u * 64u);  // one byte per element
  EXPECT_EQ(data.scale_a, kGemmFp8Scale);
  double largest = 0;
  for (int64_t i = 0; i < 16 * 64; ++i) {
    const double v = GemmInputValue(data, 0, i);
    EXPECT_EQ(static_cast<double>(Fp8E4M3ToFloat(DoubleToFp8E4M3(v))), v);
    largest = std::max(largest, std::fabs(v));
  }
  EXPECT_GT(largest, 4.0);  // quantized over [-8, 8): uses the format's range
  EXPECT_LE(largest, 8.0);
}

TEST(Gemm, Tf32CpuGemmRoundsItsInputs) {
  // A 1 x 1 x 1 product whose f32 inputs are not TF32 values: the CPU backend multiplies the
  // TF32-rounded operands, as the tensor core does, and the bound admits it.
  ParallelPool pool(1);
  GemmHostData data = GenerateGemmData(GemmPrecision::kTF32, {1, 1, 1}, 1, &pool);
  const float a = 1.0f + 0x1p-11f + 0x1p-20f, b = 3.0f;
  std::memcpy(data.a.data(), &a, 4);
  std::memcpy(data.b.data(), &b, 4);
  const std::vector<std::byte> d = RunCpuGemm(data, &pool);
  EXPECT_EQ(GemmOutputValue(GemmPrecision::kTF32, d.data(), 0), (1.0 + 0x1p-10) * 3.0);
  EXPECT_TRUE(VerifyGemm(data, d.data(), 16, 1, &pool).passed);
}

TEST(Gemm, SamplesIncludeTheCornersAndAreCounted) {
  ParallelPool pool(2);
  const GemmShape shape{300, 200, 40};
  const GemmHostData data = GenerateGemmData(GemmPrecision::kF32, shape, 9, &pool);
  std::vector<std::byte> d = RunCpuGemm(data, &pool);
  // Corrupt only the last element (a corner) by a large amount: a sampled check must see it.
  float* last = reinterpret_cast<float*>(d.data()) + shape.m * shape.n - 1;
  *last += 100.0f;
  const GemmVerification v = VerifyGemm(data, d.data(), 50, 3, &pool);
  EXPECT_EQ(v.checked, 50);
  EXPECT_EQ(v.mismatches, 1);
  EXPECT_EQ(v.first_mismatch_row, shape.m - 1);
  EXPECT_EQ(v.first_mismatch_column, shape.n - 1);
}

TEST(GemmErrorBound, GrowsWithKAndCoversEachTerm) {
  const GemmPrecisionInfo& bf16 = GemmInfo(GemmPrecision::kBF16);
  // abs_sum grows with K: the bound is linear in K at fixed |exact|.
  EXPECT_LT(GemmErrorBound(bf16, 1024, 10, 256), GemmErrorBound(bf16, 8192, 10, 2048));
  // The output rounding term: one bf16 ulp-relative of |exact| at least.
  EXPECT_GE(GemmErrorBound(bf16, 1, 100, 0), 100 * 0x1p-7);
  // Split-K reduced in the output type widens it.
  EXPECT_GT(GemmErrorBound(bf16, 4096, 10, 1024, {.split_k_reduced_in_output_type = 4}),
            GemmErrorBound(bf16, 4096, 10, 1024));
  // TF32's operand conversion dominates its f32 accumulation.
  const GemmPrecisionInfo& tf32 = GemmInfo(GemmPrecision::kTF32);
  EXPECT_NEAR(GemmErrorBound(tf32, 64, 0, 1), 2 * 0x1p-10, 1e-5);
  // Beyond 1/(2 u_acc) terms nothing is guaranteed: infinite, never a false failure.
  EXPECT_TRUE(std::isinf(GemmErrorBound(GemmInfo(GemmPrecision::kF32), int64_t{1} << 23, 0, 1)));
  // At the sizes gpubench runs, a wrong value (|error| ~ |exact| ~ sqrt(K)/3 for these inputs)
  // is far outside the bound: K = 8192 bf16, abs_sum ~ K/4, |exact| ~ 30.
  EXPECT_LT(GemmErrorBound(bf16, 8192, 30, 2048), 3.0);
}

// Hopper's FP8 tensor cores sum about 14 bits inside a k-block (kernels/gemm.cc): the H200 put a
// 16^3 gemm_f8e4m3 element 7.6e-5 from the exact product, which the f32-only bound (3e-5) refused.
TEST(GemmErrorBound, Fp8CoversTheTensorCoresLimitedAccumulation) {
  const GemmPrecisionInfo& fp8 = GemmInfo(GemmPrecision::kF8E4M3);
  EXPECT_GE(GemmRunTolerance(fp8, 16).atol, 7.6e-5);
  // The limited part spans one k-block: beyond it the bound grows with the f32 accumulator only.
  const double at_block = GemmErrorBound(fp8, 128, 0, 1);
  EXPECT_NEAR(GemmErrorBound(fp8, 256, 0, 1) - at_block, 128 * 0x1p-23, 1e-6);
  // Looser than the other precisions' at large K, but a value off by its own size (|exact| ~
  // sqrt(K)/3 for these inputs: 30 at K = 8192) is still refused.
  EXPECT_LT(GemmErrorBound(fp8, 8192, 30, 2048), 30.0);
  // Other precisions keep their f32 (or wider) accumulation only.
  EXPECT_EQ(GemmInfo(GemmPrecision::kBF16).limited_accumulation_terms, 0);
}

TEST(Gemm, RunToleranceCoversEveryElementsBound) {
  ParallelPool pool(2);
  for (const GemmPrecisionInfo& info : AllGemmPrecisions()) {
    const GemmShape shape{40, 30, 700};
    const GemmHostData data = GenerateGemmData(info.precision, shape, 4, &pool);
    const GemmTolerance t = GemmRunTolerance(info, shape.k);
    for (int64_t row : {0, 17, 39}) {
      for (int64_t column : {0, 29}) {
        const GemmExactElement e = ExactGemmElement(info.precision, shape, data.a.data(),
                                                    data.b.data(), GemmInputScale(info.precision),
                                                    row, column);
        EXPECT_LE(e.abs_sum, static_cast<double>(shape.k)) << info.name;  // |a b| <= 1 scaled
        EXPECT_GE(t.atol + t.rtol * std::fabs(e.value),
                  GemmErrorBound(info, shape.k, e.value, e.abs_sum))
            << info.name;
        double naive = 0;
        for (int64_t k = 0; k < shape.k; ++k) {
          naive += GemmInputValue(data, 0, row * shape.k + k) *
                   GemmInputValue(data, 1, column * shape.k + k);
        }
        EXPECT_NEAR(e.value, naive * GemmInputScale(info.precision), 1e-9) << info.name;
      }
    }
  }
  EXPECT_EQ(FindGemmPrecision("tf32")->precision, GemmPrecision::kTF32);
  EXPECT_EQ(FindGemmPrecision("f8e4m3")->input_bytes, 1);
  EXPECT_EQ(FindGemmPrecision("fp8"), nullptr);
}

TEST(Gemm, FlopsAndBytes) {
  EXPECT_EQ(GemmFlops({4096, 4096, 4096}), 2.0 * 4096 * 4096 * 4096);
  EXPECT_EQ(GemmBytes(GemmInfo(GemmPrecision::kF8E4M3), {16, 32, 64}),
            16 * 64 + 32 * 64 + 16 * 32 * 2);
  EXPECT_EQ(GemmShapeString({1, 2, 3}), "1x2x3");
}

// ---- Peak table ---------------------------------------------------------------------------

TEST(GemmPeak, H200FromTheDatasheet) {
  auto peak = GemmDensePeak("NVIDIA H200", 9, 0, 132, GemmPrecision::kBF16);
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_DOUBLE_EQ(peak->flops_per_second, 989.5e12);
  EXPECT_EQ(peak->model, "H200 SXM");
  EXPECT_NE(peak->source_url.find("nvidia.com"), std::string::npos);
  EXPECT_NE(peak->basis.find("sparsity"), std::string::npos);
  EXPECT_DOUBLE_EQ(GemmDensePeak("NVIDIA H200", 9, 0, 132, GemmPrecision::kF8E4M3)->flops_per_second,
                   1979e12);
  EXPECT_DOUBLE_EQ(GemmDensePeak("NVIDIA H200", 9, 0, 132, GemmPrecision::kTF32)->flops_per_second,
                   494.5e12);
  EXPECT_DOUBLE_EQ(GemmDensePeak("NVIDIA H200", 9, 0, 132, GemmPrecision::kF64)->flops_per_second,
                   67e12);
  EXPECT_DOUBLE_EQ(GemmDensePeak("NVIDIA H200", 9, 0, 132, GemmPrecision::kF32)->flops_per_second,
                   67e12);
}

TEST(GemmPeak, NamesAreMatchedByWholeTokens) {
  EXPECT_EQ(GemmDensePeak("NVIDIA H200 NVL", 9, 0, 132, GemmPrecision::kF16)->model, "H200 NVL");
  EXPECT_EQ(GemmDensePeak("NVIDIA H100 PCIe", 9, 0, 114, GemmPrecision::kF16)->model, "H100 PCIe");
  EXPECT_EQ(GemmDensePeak("NVIDIA H100 80GB HBM3", 9, 0, 132, GemmPrecision::kF16)->model,
            "H100 SXM");
  EXPECT_EQ(GemmDensePeak("NVIDIA A100-SXM4-80GB", 8, 0, 108, GemmPrecision::kTF32)->model, "A100");
  EXPECT_EQ(GemmDensePeak("NVIDIA L4", 8, 9, 58, GemmPrecision::kF8E4M3)->model, "L4");
  EXPECT_EQ(GemmDensePeak("NVIDIA L40S", 8, 9, 142, GemmPrecision::kF8E4M3)->model, "L40S");
  // GH200 is not an H200 (a different product with its own figures): not in the table.
  EXPECT_EQ(GemmDensePeak("NVIDIA GH200 480GB", 9, 0, 132, GemmPrecision::kF16).status().code(),
            absl::StatusCode::kNotFound);
  // The compute capability must agree with the product.
  EXPECT_FALSE(GemmDensePeak("NVIDIA H200", 8, 0, 132, GemmPrecision::kF16).ok());
  EXPECT_FALSE(GemmDensePeak("cpu", 0, 0, 2, GemmPrecision::kF16).ok());
}

TEST(GemmPeak, MissingFiguresAndMigSlices) {
  // A100 has no FP8; the T4 datasheet gives no BF16.
  EXPECT_EQ(GemmDensePeak("NVIDIA A100-SXM4-80GB", 8, 0, 108, GemmPrecision::kF8E4M3)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(GemmDensePeak("Tesla T4", 7, 5, 40, GemmPrecision::kBF16).ok());
  // A MIG slice with 16 of 132 SMs gets its share.
  auto slice = GemmDensePeak("NVIDIA H200", 9, 0, 16, GemmPrecision::kBF16);
  ASSERT_TRUE(slice.ok());
  EXPECT_DOUBLE_EQ(slice->flops_per_second, 989.5e12 * 16 / 132);
  EXPECT_NE(slice->basis.find("16/132 SMs"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
