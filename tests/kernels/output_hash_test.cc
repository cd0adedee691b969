// OutputHash: the fleet's silent-data-corruption check compares it across GPUs, so it must be the
// same for the same bytes whatever the thread count, and differ for one flipped bit anywhere.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>

#include "common/parallel.h"
#include "kernels/catalog.h"
#include "kernels/family.h"
#include "kernels/reference.h"

namespace gpubench {
namespace {

// add_f32's buffers at `elements`, the output filled with a pattern of `seed`.
BufferContents Outputs(const KernelVariant& k, const RunShape& shape, uint32_t seed) {
  BufferContents out(k.family->buffers.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!IsVerified(k.family->buffers[i])) continue;
    out[i].resize(static_cast<size_t>(BufferBytes(k, shape, static_cast<int>(i))));
    for (size_t b = 0; b < out[i].size(); ++b) {
      out[i][b] = static_cast<std::byte>((b * 2654435761u + seed) >> 7);
    }
  }
  return out;
}

TEST(OutputHashTest, SameBytesSameHashForAnyThreadCount) {
  const KernelVariant& k = **FindKernel("add_f32");
  const RunShape shape = ShapeOfElements(*k.family, (3 << 20) + 5);  // 12 MiB + a tail
  const BufferContents out = Outputs(k, shape, 1);
  ParallelPool one(1), four(4);
  const uint64_t serial = OutputHash(k, shape, out, nullptr);
  EXPECT_EQ(OutputHash(k, shape, out, &one), serial);
  EXPECT_EQ(OutputHash(k, shape, out, &four), serial);
  EXPECT_EQ(OutputHash(k, shape, Outputs(k, shape, 1), &four), serial);
  EXPECT_NE(OutputHash(k, shape, Outputs(k, shape, 2), &four), serial);
}

TEST(OutputHashTest, EveryFlippedBitChangesTheHash) {
  const KernelVariant& k = **FindKernel("add_f32");
  const RunShape shape = ShapeOfElements(*k.family, (1 << 18) + 3);
  BufferContents out = Outputs(k, shape, 7);
  ParallelPool pool(2);
  std::set<uint64_t> seen = {OutputHash(k, shape, out, &pool)};
  size_t output = 0;
  while (out[output].empty()) ++output;
  const size_t bytes = out[output].size();
  // The first byte, a chunk boundary (1 MiB), the tail, each low and high bit.
  for (size_t at : {size_t{0}, size_t{1} << 20, (size_t{1} << 20) - 1, bytes - 1, bytes / 2}) {
    for (int bit : {0, 7}) {
      out[output][at] ^= static_cast<std::byte>(1 << bit);
      EXPECT_TRUE(seen.insert(OutputHash(k, shape, out, &pool)).second) << at << " bit " << bit;
      out[output][at] ^= static_cast<std::byte>(1 << bit);
    }
  }
  EXPECT_EQ(OutputHash(k, shape, out, &pool), OutputHash(k, shape, Outputs(k, shape, 7), &pool));
  // A short read-back (one element missing) never matches the full one.
  BufferContents short_out = Outputs(k, shape, 7);
  short_out[output].resize(bytes - 4);
  EXPECT_NE(OutputHash(k, shape, short_out, &pool), OutputHash(k, shape, out, &pool));
}

}  // namespace
}  // namespace gpubench
