#include "kernels/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kernels/gemm.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

TEST(Catalog, HasTheSeedVariantsAndBaselines) {
  for (const char* name : {"add_f32", "add_f32x4", "add_f16", "add_f16x2", "add_f16x8",
                           "add_f16x8_pack", "saxpy_minimal", "saxpy_sophisticated",
                           "saxpy_balanced", "cub_add_f32", "cub_add_f16", "cub_add_bf16",
                           "copy_d2d", "add_bf16", "add_bf16x2", "add_bf16x8_pack",
                           "add_f32_tuned", "add_f16_tuned", "add_bf16_tuned"}) {
    EXPECT_TRUE(FindKernel(name).ok()) << name;
  }
}

TEST(Catalog, EntriesAreWellFormed) {
  std::set<std::string> names;
  for (const KernelVariant& k : AllKernels()) {
    EXPECT_TRUE(names.insert(std::string(k.name)).second) << "duplicate " << k.name;
    EXPECT_NE(k.cpu, nullptr) << k.name;
    EXPECT_FALSE(k.description.empty()) << k.name;
    EXPECT_FALSE(k.provenance.empty()) << k.name;
    // Provenance names a source a user can find (an article, a paper, a library), never this
    // project's issue numbers.
    EXPECT_FALSE(absl::StrContains(absl::AsciiStrToLower(k.provenance), "issue"))
        << k.name << ": " << k.provenance;
    EXPECT_FALSE(absl::StrContains(k.provenance, "#")) << k.name << ": " << k.provenance;
    // The seeds' elementwise families: whole warps, bytes per element by their buffers. (A
    // pointer chase runs one thread and moves no counted bytes.)
    if (k.family->name == "elementwise_add" || k.family->name == "saxpy" ||
        k.family->name == "copy") {
      EXPECT_EQ(k.default_policy.block_size % 32, 0) << k.name;
      const int expected_bytes = (k.family->name == "copy" ? 2 : 3) * DTypeSize(k.dtype);
      EXPECT_EQ(BytesPerElement(k), expected_bytes) << k.name;
    }
    if (k.family->name == "gemm") {  // at 1 x 1 x 1: A, B and D (fp8's D is bf16)
      EXPECT_EQ(BytesPerElement(k),
                2 * DTypeSize(k.dtype) + DTypeSize(BufferDType(k.family->buffers[2], k.dtype)))
          << k.name;
    }
#if GPUBENCH_HAVE_CUDA
    EXPECT_NE(k.cuda, nullptr) << k.name << " has no CUDA launcher";
#endif
  }
}

TEST(Catalog, SeedLaunchPoliciesReproduceTheSeedGrid) {
  // The seed: 256 threads per block, x4 variant 64 threads, x8 variants 32 threads, all over
  // ceil(N / 256) blocks.
  for (const char* name : {"add_f32", "add_f32x4", "add_f16x8", "add_f16x8_pack", "add_f16"}) {
    const KernelVariant& k = **FindKernel(name);
    EXPECT_EQ(k.default_policy.block_size * k.default_policy.items_per_thread, 256) << name;
  }
  EXPECT_EQ((*FindKernel("add_f32x4"))->default_policy.block_size, 64);
  EXPECT_EQ((*FindKernel("add_f16x8"))->default_policy.block_size, 32);
  EXPECT_EQ((*FindKernel("saxpy_balanced"))->default_policy.block_size, 1024);
}

TEST(Catalog, ItemsPerThreadRules) {
  const KernelVariant& f32 = **FindKernel("add_f32_tuned");  // 4 floats per 16-byte packet
  EXPECT_TRUE(ItemsPerThreadTunable(f32));
  for (int items : {4, 8, 16, 32}) EXPECT_TRUE(ItemsPerThreadAllowed(f32, items)) << items;
  for (int items : {0, 1, 2, 3, 6, 12, 64, -4}) EXPECT_FALSE(ItemsPerThreadAllowed(f32, items)) << items;
  EXPECT_EQ(ItemsPerThreadCandidates(f32), (std::vector<int>{4, 8, 16, 32}));
  const KernelVariant& f16 = **FindKernel("add_f16_tuned");  // 8 halves per packet
  for (int items : {8, 16, 32, 64}) EXPECT_TRUE(ItemsPerThreadAllowed(f16, items)) << items;
  for (int items : {4, 24, 128}) EXPECT_FALSE(ItemsPerThreadAllowed(f16, items)) << items;
  // Bulk kernels loop over their tile at run time: any count, e.g. CUB's 3 items per thread.
  const KernelVariant& bulk = **FindKernel("add_f16_bulk");
  for (int items : {1, 3, 24, 128}) EXPECT_TRUE(ItemsPerThreadAllowed(bulk, items)) << items;
  for (int items : {0, 129}) EXPECT_FALSE(ItemsPerThreadAllowed(bulk, items)) << items;
  EXPECT_EQ(ItemsPerThreadCandidates(bulk), (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(ItemsPerThreadRule(bulk), "1 to 128");
  const KernelVariant& seed = **FindKernel("add_f32x4");
  EXPECT_FALSE(ItemsPerThreadTunable(seed));
  EXPECT_FALSE(ItemsPerThreadAllowed(seed, 4));
}

TEST(Catalog, EveryTunableDefaultIsAllowedAndSharedMemoryFollowsTheTile) {
  for (const KernelVariant& k : AllKernels()) {
    if (ItemsPerThreadTunable(k)) {
      EXPECT_TRUE(ItemsPerThreadAllowed(k, k.default_policy.items_per_thread)) << k.name;
    }
    if (k.default_policy.dynamic_shared_bytes_per_item > 0) {
      // Bulk-copy kernels stage both operands: 2 x sizeof(dtype) per element of the tile.
      EXPECT_EQ(k.default_policy.dynamic_shared_bytes_per_item, 2 * DTypeSize(k.dtype)) << k.name;
      EXPECT_EQ(k.min_compute_capability, 90) << k.name << " uses cp.async.bulk (sm_90+)";
    }
  }
  const KernelVariant& bulk = **FindKernel("add_f32_bulk");
  EXPECT_EQ(DynamicSharedBytes(bulk, 256, 8), 256 * 8 * 8);
  EXPECT_EQ(DynamicSharedBytes(**FindKernel("add_f32_tuned"), 256, 8), 0);
}

TEST(Catalog, UnknownKernelListsValidNames) {
  absl::StatusOr<const KernelVariant*> k = FindKernel("add_f64");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("add_f16x8_pack"));
}

TEST(Catalog, L2AwareVariantsForEveryDtype) {
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    const std::string stream = absl::StrCat("add_", dtype, "_stream");
    const std::string keep = absl::StrCat("add_", dtype, "_l2keep");
    const std::string tuned = absl::StrCat("add_", dtype, "_tuned");
    for (const std::string& name : {stream, keep}) {
      absl::StatusOr<const KernelVariant*> k = FindKernel(name);
      ASSERT_TRUE(k.ok()) << name;
      const KernelVariant& t = **FindKernel(tuned);
      // Same one-pass indexing as the tuned kernel (cache hints change no result): same
      // emulation, same tile rules.
      EXPECT_EQ((*k)->cpu, t.cpu) << name;
      EXPECT_EQ((*k)->default_policy.max_items_per_thread, t.default_policy.max_items_per_thread);
      EXPECT_EQ((*k)->dtype, t.dtype);
    }
    // createpolicy / .L2::cache_hint need sm_80.
    EXPECT_EQ((*FindKernel(keep))->min_compute_capability, 80) << keep;
  }
  for (const char* name : {"add_f16_gridstride", "add_bf16_gridstride"}) {
    const KernelVariant& k = **FindKernel(name);
    EXPECT_TRUE(k.default_policy.grid_stride) << name;
    EXPECT_EQ(k.default_policy.max_resident_blocks_per_sm, 4) << name;
    EXPECT_EQ(k.default_policy.block_size, 256) << name;
    EXPECT_EQ(k.default_policy.items_per_thread, 32) << name;  // 4 packets of 8
  }
  EXPECT_EQ((*FindKernel("add_f32_gridstride"))->default_policy.max_resident_blocks_per_sm, 0);
}

// Exactly the kernels that load with an evict_last policy (the l2keep ones) ask the backend to
// reset persisting L2 lines before a cold flush: a new evict_last variant without the flag would
// time cold launches against an L2 that still holds its inputs; a flag elsewhere costs every
// cold sample the reset's slowdown.
TEST(Catalog, OnlyEvictLastVariantsResetPersistingLines) {
  int marked = 0;
  for (const KernelVariant& k : AllKernels()) {
    const bool l2keep = absl::EndsWith(k.name, "_l2keep") || absl::EndsWith(k.name, "_l2keep_pdl");
    EXPECT_EQ(k.l2_evict_last, l2keep) << k.name;
    marked += k.l2_evict_last ? 1 : 0;
  }
  EXPECT_EQ(marked, 6);
}

// The gemm precisions state their lowest compute capability twice (the catalog entry from
// kernels/families/gemm_precisions.h, the numerics table of kernels/gemm.cc that verification
// uses); the two must agree.
TEST(Catalog, GemmVariantsAgreeWithTheirPrecisionTable) {
  int gemms = 0;
  for (const KernelVariant& k : AllKernels()) {
    if (!absl::StartsWith(k.name, "gemm_")) continue;
    ++gemms;
    const GemmPrecisionInfo* info = FindGemmPrecision(k.name.substr(5));
    ASSERT_NE(info, nullptr) << k.name;
    EXPECT_EQ(k.min_compute_capability, info->min_compute_capability) << k.name;
  }
  EXPECT_EQ(gemms, static_cast<int>(AllGemmPrecisions().size()));
}

}  // namespace
}  // namespace gpubench
