// Seeded data pinned bit for bit: the uniform inputs every family generates by default and the
// latency family's random cycle. Results and cross-checks (device runs, torch comparisons,
// archived bench results) assume a seed gives the same data in every build.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
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

// A few positions generated alone equal those positions of the whole buffer, for every dtype:
// what a host cross-check of a device-generated buffer relies on.
TEST(GeneratedDataTest, UniformAtIndicesMatchesTheWholeBuffer) {
  ParallelPool pool(2);
  const std::vector<int64_t> indices = {0, 1, 999, 4096, 77777, 99999};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kU32, DType::kU64,
                      DType::kF8E4M3}) {
    const int size = DTypeSize(dtype);
    const GenerateContext c{.seed = 9, .stream = 2, .dtype = dtype, .pool = &pool};
    std::vector<std::byte> whole(100000 * static_cast<size_t>(size));
    GenerateUniform(c, whole);
    std::vector<std::byte> some(indices.size() * size);
    GenerateUniformAt(c, indices, some);
    for (size_t j = 0; j < indices.size(); ++j) {
      EXPECT_EQ(0, std::memcmp(some.data() + j * size, whole.data() + indices[j] * size, size))
          << DTypeName(dtype) << " index " << indices[j];
    }
  }
}

TEST(GeneratedDataTest, RandomCycleIsPinned) {
  EXPECT_EQ(RandomCycle(10, 7), (std::vector<uint32_t>{7, 5, 4, 1, 8, 2, 9, 6, 0, 3}));
}

}  // namespace
}  // namespace gpubench
