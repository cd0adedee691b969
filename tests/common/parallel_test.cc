#include "common/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace gpubench {
namespace {

TEST(ParallelPool, CoversEveryIndexOnce) {
  ParallelPool pool(4);
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{1} << 20}) {
    std::vector<std::atomic<int>> hits(n);
    pool.For(n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ParallelPool, ConcurrentCallersAreSerialized) {
  ParallelPool pool(3);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r) {
        pool.For(1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 1000);
}

}  // namespace
}  // namespace gpubench
