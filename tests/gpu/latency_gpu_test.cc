// The latency family (pointer chase) on a real GPU (ctest label "gpu"): verified at every level of
// the hierarchy, cold and hot; the L1 < L2 < HBM plateaus in the right order and plausible ranges;
// cold at an L2-sized footprint is DRAM latency. Skips, saying why, where no GPU is usable.
#include <gtest/gtest.h>

#include "gpu/cuda_test.h"
#include "kernels/latency_layout.h"

namespace gpubench {
namespace {

class LatencyGpuTest : public CudaTest {
 protected:
  // Seconds per load of a chase over `footprint` bytes, verified.
  RunResult Chase(int64_t footprint, CacheMode mode) {
    RunRequest r = Quick("latency_chase", footprint);
    r.cache_mode = mode;
    r.measurement.min_samples = 5;
    r.measurement.min_time_seconds = 1e-3;
    absl::StatusOr<RunResult> result = Run(r);
    EXPECT_TRUE(result.ok()) << footprint << " bytes: " << result.status();
    if (!result.ok()) return RunResult();
    EXPECT_TRUE(result->verification.has_value() && result->verification->passed)
        << footprint << " bytes " << CacheModeName(mode)
        << ": the chase did not end on the node the host's walk reached";
    EXPECT_EQ(result->operations, ChaseLoadsPerLaunch(footprint));
    EXPECT_GT(result->seconds_per_operation, 0);
    return *result;
  }
};

TEST_F(LatencyGpuTest, LatencyVerifiedAtEveryLevelColdAndHot) {
  for (int64_t footprint : {int64_t{16} << 10, int64_t{2} << 20, int64_t{256} << 20}) {
    for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) Chase(footprint, mode);
  }
}

TEST_F(LatencyGpuTest, LatencyPlateausAreOrderedAndPlausible) {
  // Hot: 16 KiB sits in L1, 2 MiB in L2 (every GPU gpubench builds for has at least 4 MiB) but
  // not in L1 (256 KiB at most), 1 GiB far beyond any L2. Ranges: L1 hits take ~20-40 cycles
  // (10-40 ns at 1-2 GHz), DRAM a few hundred ns to about a microsecond.
  const double l1 = Chase(int64_t{16} << 10, CacheMode::kHot).seconds_per_operation * 1e9;
  const double l2 = Chase(int64_t{2} << 20, CacheMode::kHot).seconds_per_operation * 1e9;
  const double hbm = Chase(int64_t{1} << 30, CacheMode::kHot).seconds_per_operation * 1e9;
  std::printf("latency per load: L1 %.1f ns, L2 %.1f ns, HBM %.1f ns\n", l1, l2, hbm);
  EXPECT_GT(l1, 5);
  EXPECT_LT(l1, 100);
  EXPECT_LT(l1, 0.6 * l2);
  EXPECT_LT(l2, 0.8 * hbm);
  EXPECT_GT(hbm, 200);
  EXPECT_LT(hbm, 3000);
}

TEST_F(LatencyGpuTest, ColdMeansEveryNodeComesFromDram) {
  // 16 MiB = 2^17 nodes: one launch walks the cycle exactly once. Hot, every node is in L2; cold
  // (L2 flushed first), every load goes to DRAM: at least half as slow again.
  const int64_t footprint = int64_t{16} << 20;
  ASSERT_EQ(ChaseLoadsPerLaunch(footprint), ChaseNodes(footprint));
  const double hot = Chase(footprint, CacheMode::kHot).seconds_per_operation;
  const double cold = Chase(footprint, CacheMode::kCold).seconds_per_operation;
  std::printf("16 MiB: hot %.1f ns, cold %.1f ns per load\n", hot * 1e9, cold * 1e9);
  EXPECT_GT(cold, 1.5 * hot);
}

}  // namespace
}  // namespace gpubench
