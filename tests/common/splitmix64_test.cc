// SplitMix64: the published reference outputs (Vigna's splitmix64.c, seed 1234567), the hash form
// equal to a fresh generator's first output, and Lemire's bounded draw in range and pinned.
#include "common/splitmix64.h"

#include <gtest/gtest.h>

namespace gpubench {
namespace {

TEST(SplitMix64Test, ReferenceOutputs) {
  SplitMix64 g(1234567);
  EXPECT_EQ(g.Next(), 6457827717110365317ULL);
  EXPECT_EQ(g.Next(), 3203168211198807973ULL);
  EXPECT_EQ(g.Next(), 9817491932198370423ULL);
}

TEST(SplitMix64Test, HashIsTheFirstOutputOfAGeneratorSeededWithIt) {
  static_assert(SplitMix64Hash(0) == 16294208416658607535ULL);
  for (uint64_t x : {0ULL, 1ULL, 1234567ULL, ~0ULL}) {
    SplitMix64 g(x);
    EXPECT_EQ(SplitMix64Hash(x), g.Next()) << x;
  }
}

TEST(SplitMix64Test, BelowStaysInRangeAndIsPinned) {
  SplitMix64 g(99);
  EXPECT_EQ(g.Below(1000), 261u);
  EXPECT_EQ(g.Below(3), 0u);
  for (uint64_t bound : {1ULL, 2ULL, 7ULL, 1000ULL, (1ULL << 63) + 1}) {
    for (int i = 0; i < 100; ++i) EXPECT_LT(g.Below(bound), bound);
  }
}

}  // namespace
}  // namespace gpubench
