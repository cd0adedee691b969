#include "client/compare.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"

namespace gpubench::client {
namespace {

v1::KernelInfo Kernel(const std::string& name, const std::string& family, const std::string& dtype,
                      const std::string& provenance, bool available = true) {
  v1::KernelInfo k;
  k.set_name(name);
  k.set_family(family);
  k.set_dtype(dtype);
  k.set_provenance(provenance);
  k.set_available(available);
  return k;
}

v1::ListKernelsResponse Catalog() {
  v1::ListKernelsResponse c;
  *c.add_kernels() = Kernel("add_f32", "elementwise_add", "f32", "seed 000_90ef8f88548fa484 (...)");
  *c.add_kernels() = Kernel("add_f16", "elementwise_add", "f16", "seed 000_90ef8f88548fa484 (...)");
  *c.add_kernels() = Kernel("add_f16_tuned", "elementwise_add", "f16", "gpubench tuned (...)");
  *c.add_kernels() = Kernel("add_f16_bulk", "elementwise_add", "f16", "gpubench tuned", false);
  *c.add_kernels() = Kernel("saxpy_minimal", "saxpy", "f32", "seed 003_e7b5082a0653f0fc");
  *c.add_kernels() = Kernel("cub_add_f16", "elementwise_add", "f16", "baseline: CUB (CCCL)");
  *c.add_kernels() = Kernel("copy_d2d", "copy", "f32", "baseline: CUDA runtime cudaMemcpyAsync");
  return c;
}

v1::RunResult Result(const std::string& kernel, const std::string& dtype, int64_t n,
                     v1::CacheMode mode, double seconds, int bytes_per_element, bool passed = true) {
  v1::RunResult r;
  r.mutable_request()->set_kernel(kernel);
  r.mutable_request()->set_dtype(dtype);
  r.mutable_request()->set_elements(n);
  r.mutable_request()->set_cache_mode(mode);
  r.mutable_request()->set_block_size(256);
  r.mutable_request()->set_items_per_thread(8);
  r.mutable_request()->set_grid_size(kernel.rfind("cub_", 0) == 0 ? 0 : 10);
  r.mutable_timing()->set_median_seconds(seconds);
  r.mutable_throughput()->set_bandwidth_bytes_per_second(double(n) * bytes_per_element / seconds);
  r.mutable_verification()->set_requested(true);
  r.mutable_verification()->set_passed(passed);
  return r;
}

TEST(Compare, KernelSelection) {
  EXPECT_EQ(CompareKernels(Catalog(), {"f16"}),
            (std::vector<std::string>{"add_f16", "add_f16_tuned", "cub_add_f16", "copy_d2d"}));
  EXPECT_EQ(CompareKernels(Catalog(), {"f32", "f16"}).front(), "add_f32");
  // best: gpubench's own code only (seed patterns and tuned), available ones.
  EXPECT_EQ(BestCandidates(Catalog(), "f16"),
            (std::vector<std::string>{"add_f16", "add_f16_tuned"}));
  EXPECT_TRUE(BestCandidates(Catalog(), "bf16").empty());
  EXPECT_EQ(SeedLabel("add_f16x8_pack"), "V6");
  EXPECT_EQ(SeedLabel("add_f32"), "V1");
  EXPECT_EQ(SeedLabel("add_f16_tuned"), "");
  EXPECT_TRUE(IsAddDtype("bf16"));
  EXPECT_FALSE(IsAddDtype("f64"));
}

TEST(Compare, FastestSkipsFailedVerification) {
  std::vector<v1::RunResult> r = {Result("a", "f16", 100, v1::HOT, 3e-6, 6),
                                  Result("b", "f16", 100, v1::HOT, 1e-6, 6, /*passed=*/false),
                                  Result("c", "f16", 100, v1::HOT, 2e-6, 6),
                                  Result("d", "f16", 100, v1::HOT, 2e-6, 6)};
  EXPECT_EQ(FastestResult(r), 2);  // b failed; c and d tie, the earlier wins
  EXPECT_EQ(FastestResult({}), -1);
  EXPECT_EQ(FastestResult({r[1]}), -1);
}

TEST(Compare, RatiosToTheScalarSeedAndTheCopyCeiling) {
  const int64_t n = 1 << 20;
  std::vector<v1::RunResult> r = {
      Result("add_f16", "f16", n, v1::COLD, 8e-6, 6),
      Result("add_f16_tuned", "f16", n, v1::COLD, 4e-6, 6),
      Result("copy_d2d", "f32", n, v1::COLD, 2e-6, 8),  // 4.19 TB/s
      Result("add_f16", "f16", n, v1::HOT, 4e-6, 6),
      Result("cub_add_f16", "f16", n, v1::HOT, 5e-6, 6),  // no copy at hot: "-"
  };
  const std::string csv = RenderCompare(r, {}, Format::kCsv);
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 6u) << csv;
  // tuned: 8 us / 4 us = 2x the seed; 6 MiB / 4 us over 8 MiB / 2 us = 37.5% of the copy.
  EXPECT_EQ(lines[2], "cold,1048576,add_f16_tuned,,f16,256x8,4e-06,1.57286e+12,2.0000,37.50,pass");
  EXPECT_EQ(lines[3], "cold,1048576,copy_d2d,,f32,256x8,2e-06,4.1943e+12,,100.00,pass");
  EXPECT_EQ(lines[5], "hot,1048576,cub_add_f16,,f16,library,5e-06,1.25829e+12,0.8000,,pass");
  const std::string table = RenderCompare(r, {}, Format::kTable);
  EXPECT_NE(table.find("== 1Mi elements (1048576), cold =="), std::string::npos) << table;
  EXPECT_NE(table.find("== 1Mi elements (1048576), hot =="), std::string::npos) << table;
  EXPECT_LT(table.find("cold =="), table.find("hot =="));
  EXPECT_NE(table.find("add_f16 (V3)"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00x"), std::string::npos) << table;
  EXPECT_NE(table.find("37.5%"), std::string::npos) << table;
}

TEST(Compare, BestRanksFastestFirstWithRatios) {
  std::vector<v1::RunResult> r = {Result("add_f16", "f16", 4096, v1::HOT, 3e-6, 6),
                                  Result("add_f16_tuned", "f16", 4096, v1::HOT, 1.5e-6, 6)};
  const std::string csv = RenderBest(r, {}, Format::kCsv);
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << csv;
  EXPECT_EQ(lines[1].rfind("1,add_f16_tuned,f16,4096,hot,256x8,1.5e-06,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].substr(lines[2].size() - 11), "2.0000,pass") << lines[2];
  const std::string table = RenderBest(r, {}, Format::kTable);
  EXPECT_EQ(table.rfind("best: add_f16_tuned", 0), 0u) << table;
  EXPECT_NE(table.find("lowest median of 2 verified candidates"), std::string::npos) << table;
  EXPECT_NE(RenderBest({}, {}, Format::kTable).find("no candidate"), std::string::npos);
}

}  // namespace
}  // namespace gpubench::client
