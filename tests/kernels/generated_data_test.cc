// Seeded data pinned bit for bit: the uniform inputs every family generates by default and the
// latency family's random cycle. Results and cross-checks (device runs, torch comparisons,
// archived bench results) assume a seed gives the same data in every build.
#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <vector>

#include "common/parallel.h"
#include "kernels/family.h"
#include "kernels/latency_chase.h"

namespace gpubench {
namespace {

TEST(GeneratedDataTest, UniformInputsArePinned) {
  ParallelPool pool(2);
  std::vector<double> values(4);
  GenerateUniform({.seed = 42, .stream = 1, .dtype = DType::kF64, .pool = &pool},
                  std::as_writable_bytes(std::span<double>(values)));
  EXPECT_EQ(values, (std::vector<double>{0.2844700813293457, -0.80098330974578857,
                                         0.8484574556350708, -0.81260335445404053}));
}

TEST(GeneratedDataTest, RandomCycleIsPinned) {
  EXPECT_EQ(RandomCycle(10, 7), (std::vector<uint32_t>{7, 5, 4, 1, 8, 2, 9, 6, 0, 3}));
}

}  // namespace
}  // namespace gpubench
