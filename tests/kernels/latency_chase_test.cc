// The latency family's cycle generator, host walk and CPU chase: every generated permutation is
// one cycle through all nodes, reproducible from its seed and uniform over the cyclic
// permutations; the checker rejects everything else; the CPU chase ends where the host walk does.
#include "kernels/latency_chase.h"

#include <gtest/gtest.h>

#include "kernels/cpu_backend.h"
#include "kernels/reference.h"

#include <cstdint>
#include <map>
#include <vector>

namespace gpubench {
namespace {

TEST(RandomCycleTest, IsOneCycleThroughEveryNode) {
  for (int64_t nodes : {2, 3, 7, 128, 1000, 4097, 1 << 20}) {
    for (uint64_t seed : {0ULL, 1ULL, 42ULL, 0xdeadbeefULL}) {
      const std::vector<uint32_t> next = RandomCycle(nodes, seed);
      ASSERT_EQ(next.size(), static_cast<size_t>(nodes));
      EXPECT_TRUE(IsSingleCycle(next)) << nodes << " nodes, seed " << seed;
      for (int64_t i = 0; i < nodes; ++i) ASSERT_NE(next[i], i) << "fixed point at " << i;
    }
  }
}

TEST(RandomCycleTest, SameSeedSameCycleOtherSeedOtherCycle) {
  EXPECT_EQ(RandomCycle(1000, 7), RandomCycle(1000, 7));
  EXPECT_NE(RandomCycle(1000, 7), RandomCycle(1000, 8));
}

TEST(RandomCycleTest, UniformOverTheCyclicPermutations) {
  // 4 nodes have (4 - 1)! = 6 cyclic permutations; 6000 seeds should give each about 1000 times
  // (binomial sd ~29: 800..1200 is about 7 sd, so a biased generator fails and a fair one passes).
  std::map<std::vector<uint32_t>, int> counts;
  for (uint64_t seed = 0; seed < 6000; ++seed) counts[RandomCycle(4, seed)]++;
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [cycle, count] : counts) {
    EXPECT_TRUE(IsSingleCycle(cycle));
    EXPECT_GT(count, 800);
    EXPECT_LT(count, 1200);
  }
}

TEST(RandomCycleTest, SuccessorsAreRarelyNeighboursInMemory) {
  // A prefetcher follows ascending or descending lines; in a random cycle the next node is an
  // adjacent line only about 2 / nodes of the time.
  const std::vector<uint32_t> next = RandomCycle(1 << 16, 3);
  int adjacent = 0;
  for (size_t i = 0; i < next.size(); ++i) {
    adjacent += next[i] == i + 1 || next[i] + 1 == i;
  }
  EXPECT_LT(adjacent, 20);
}

TEST(IsSingleCycleTest, RejectsEverythingElse) {
  EXPECT_FALSE(IsSingleCycle(std::vector<uint32_t>{}));
  EXPECT_FALSE(IsSingleCycle(std::vector<uint32_t>{0, 1, 2}));     // identity: three 1-cycles
  EXPECT_FALSE(IsSingleCycle(std::vector<uint32_t>{1, 0, 3, 2}));  // two 2-cycles
  EXPECT_FALSE(IsSingleCycle(std::vector<uint32_t>{1, 1}));        // not a permutation
  EXPECT_FALSE(IsSingleCycle(std::vector<uint32_t>{5, 0}));        // out of range
  EXPECT_FALSE(IsSingleCycle(std::vector<uint32_t>{1, 2, 1}));     // node 0 never re-entered
  EXPECT_TRUE(IsSingleCycle(std::vector<uint32_t>{1, 2, 0}));
  EXPECT_TRUE(IsSingleCycle(std::vector<uint32_t>{2, 0, 1}));
}

TEST(WalkCycleTest, FollowsTheSuccessors) {
  const std::vector<uint32_t> next = {2, 0, 3, 1};  // 0 -> 2 -> 3 -> 1 -> 0
  EXPECT_EQ(WalkCycle(next, 0, 0), 0u);
  EXPECT_EQ(WalkCycle(next, 0, 1), 2u);
  EXPECT_EQ(WalkCycle(next, 0, 3), 1u);
  EXPECT_EQ(WalkCycle(next, 0, 4), 0u);
  EXPECT_EQ(WalkCycle(next, 3, 6), 0u);  // 3 -> 1 -> 0 -> 2 -> 3 -> 1 -> 0
}

TEST(CpuChaseTest, EndsWhereTheHostWalkEnds) {
  const int64_t nodes = 1024;
  const std::vector<uint32_t> next = RandomCycle(nodes, 11);
  std::vector<uint64_t> storage(nodes * kChaseStrideBytes / sizeof(uint64_t));
  auto* base = reinterpret_cast<std::byte*>(storage.data());
  LayOutChase(next, reinterpret_cast<uint64_t>(base), base);
  for (int64_t loads : {int64_t{1}, int64_t{5000}, nodes, 3 * nodes + 7}) {
    const void* end = CpuChase(base + 5 * kChaseStrideBytes, loads);
    const int64_t node = (static_cast<const std::byte*>(end) - base) / kChaseStrideBytes;
    EXPECT_EQ(node, WalkCycle(next, 5, loads)) << loads << " loads";
  }
}

TEST(CpuChaseTest, RebasingOffsetsGivesTheAddressLayout) {
  // The generated input holds offsets (base 0); a session adds its buffer's address once.
  const std::vector<uint32_t> next = RandomCycle(64, 5);
  std::vector<uint64_t> offsets(64 * kChaseStrideBytes / 8), addresses(offsets.size());
  auto* a = reinterpret_cast<std::byte*>(offsets.data());
  auto* b = reinterpret_cast<std::byte*>(addresses.data());
  LayOutChase(next, 0, a);
  LayOutChase(next, reinterpret_cast<uint64_t>(a), b);
  RebaseChase(a, 64, reinterpret_cast<uint64_t>(a));
  EXPECT_EQ(offsets, addresses);
}

TEST(CpuChaseTest, ACorruptedNodeIsCaught) {
  // Verification compares the chase's end with the host walk: a wrong pointer in the buffer
  // (memory corruption) sends the chase elsewhere and the ends differ.
  const int64_t nodes = 256;
  const std::vector<uint32_t> next = RandomCycle(nodes, 12);
  std::vector<uint64_t> storage(nodes * kChaseStrideBytes / sizeof(uint64_t));
  auto* base = reinterpret_cast<std::byte*>(storage.data());
  LayOutChase(next, reinterpret_cast<uint64_t>(base), base);
  const uint32_t victim = next[0];
  storage[victim * kChaseStrideBytes / sizeof(uint64_t)] =
      reinterpret_cast<uint64_t>(base + next[next[next[victim]]] * kChaseStrideBytes);
  const void* end = CpuChase(base, nodes);
  EXPECT_NE((static_cast<const std::byte*>(end) - base) / kChaseStrideBytes,
            WalkCycle(next, 0, nodes));
}

// The family through the CPU backend: generated from the seed, rebased by the session's setup,
// chased for real, verified against the host's walk; and the footprints it refuses.
TEST(LatencyFamilyTest, TheCpuChaseIsVerifiedAgainstTheHostWalk) {
  const KernelVariant& k = **FindKernel("latency_chase");
  EXPECT_EQ(k.family->metric, Metric::kSecondsPerOperation);
  auto backend = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
  ParallelPool pool(2);
  for (int64_t footprint : {int64_t{256}, int64_t{16} << 10, int64_t{4} << 20}) {
    const RunShape shape = *ResolveShape(*k.family, footprint, RunShape{});
    const HostData data = GenerateHostData(k, shape, 7, &pool);
    LaunchGeometry g{.block_size = 1, .items_per_thread = 1, .grid_size = 1};
    auto session = backend->Open(0, k, g, data);
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Warmup(2).ok());  // moves the position: the verified launch restarts
    BufferContents out;
    ASSERT_TRUE((*session)->RunOnceAndRead(&out).ok());
    const Verification v = Verify(k, data, out, &pool);
    EXPECT_TRUE(v.passed) << footprint << " bytes: expected node " << v.first_mismatch_expected
                          << ", the chase ended on " << v.first_mismatch_actual;
    EXPECT_EQ(v.checked, 1);
    EXPECT_EQ(OperationsOf(k, shape), ChaseLoadsPerLaunch(footprint));
    EXPECT_EQ(BytesMoved(k, shape), 0);  // no bandwidth for a chase
    EXPECT_NE((*session)->LaunchReport().find("pointer chase"), std::string::npos);
  }
}

TEST(LatencyFamilyTest, FootprintsMustBeWholeLinesOfAtLeastTwoNodes) {
  const KernelFamily& f = *(*FindKernel("latency_chase"))->family;
  EXPECT_TRUE(ResolveShape(f, 1 << 30, RunShape{}).ok());
  EXPECT_TRUE(ResolveShape(f, 256, RunShape{}).ok());
  for (int64_t bad : {int64_t{0}, int64_t{128}, int64_t{1000}, int64_t{4097}}) {
    EXPECT_EQ(ResolveShape(f, bad, RunShape{}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ResolveShape(f, 4096, RunShape{.m = 4}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpubench
