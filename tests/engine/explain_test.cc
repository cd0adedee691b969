#include "server/engine/explain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpubench {
namespace {

using ::testing::HasSubstr;

OccupancyReport Report(int active_blocks, int warps_per_block, const char* limiter) {
  OccupancyReport r;
  r.active_blocks_per_multiprocessor = active_blocks;
  r.warps_per_block = warps_per_block;
  r.active_warps_per_multiprocessor = active_blocks * warps_per_block;
  r.max_warps_per_multiprocessor = 64;
  r.theoretical_occupancy = r.active_warps_per_multiprocessor / 64.0;
  r.limiter = limiter;
  return r;
}

TEST(Explain, MemoryBoundSaysOccupancyDoesNotMatter) {
  ExplainInputs in{Report(8, 8, "warps"), std::nullopt, 91.0, 7e-4, 10};
  const std::string s = Explain(in);
  EXPECT_THAT(s, HasSubstr("100%"));
  EXPECT_THAT(s, HasSubstr("Memory-bound at 91%"));
  EXPECT_THAT(s, HasSubstr("does not matter"));
}

TEST(Explain, SmallBlocksNameTheBlockCap) {
  ExplainInputs in{Report(32, 1, "blocks"), 0.47, 53.0, 6e-4, 10};
  const std::string s = Explain(in);
  EXPECT_THAT(s, HasSubstr("50%"));
  EXPECT_THAT(s, HasSubstr("blocks-per-SM cap"));
  EXPECT_THAT(s, HasSubstr("achieved 47%"));
  EXPECT_THAT(s, HasSubstr("raise occupancy"));
}

TEST(Explain, AmpleOccupancyLowBandwidthIsLatency) {
  ExplainInputs in{Report(2, 32, "warps"), std::nullopt, 53.0, 1.2e-3, 60};
  EXPECT_THAT(Explain(in), HasSubstr("not on occupancy"));
}

TEST(Explain, TinyLaunchesAreLaunchBound) {
  ExplainInputs in{Report(8, 8, "warps"), std::nullopt, 20.0, 4e-6, 0.5};
  EXPECT_THAT(Explain(in), HasSubstr("launch and ramp-up"));
}

TEST(Explain, NoOccupancy) {
  EXPECT_THAT(Explain({}), HasSubstr("does not apply"));
  ExplainInputs lib;
  lib.percent_of_peak = 90;
  EXPECT_THAT(Explain(lib), HasSubstr("library"));
}

}  // namespace
}  // namespace gpubench
