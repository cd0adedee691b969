#include "server/engine/occupancy.h"

#include <gtest/gtest.h>

namespace gpubench {
namespace {

// The seed's A10G worked example (Puzzle 31): 1536 threads, 64 Ki registers, 164 KB shared and
// 32 blocks per SM; 1024-thread blocks; all three SAXPY kernels land at 1 block = 66.7%, limited
// by threads (warps), whatever their registers (19/25/40) and shared memory (0/16/49 KB).
OccupancyInputs A10G(int registers, int shared_bytes) {
  OccupancyInputs in;
  in.max_threads_per_multiprocessor = 1536;
  in.max_blocks_per_multiprocessor = 32;
  in.registers_per_multiprocessor = 65536;
  in.registers_per_block_limit = 65536;
  in.shared_memory_per_multiprocessor_bytes = 164 * 1024;
  in.reserved_shared_memory_per_block_bytes = 1024;
  in.block_size = 1024;
  in.registers_per_thread = registers;
  in.shared_memory_per_block_bytes = shared_bytes;
  return in;
}

TEST(Occupancy, SeedA10GExample) {
  for (auto [regs, smem] : {std::pair{19, 0}, std::pair{25, 16 * 1024}, std::pair{40, 49 * 1024}}) {
    const OccupancyReport r = ComputeOccupancy(A10G(regs, smem));
    EXPECT_EQ(r.active_blocks_per_multiprocessor, 1) << regs;
    EXPECT_NEAR(r.theoretical_occupancy, 2.0 / 3.0, 1e-9) << regs;
    EXPECT_EQ(r.blocks_limit_warps, 1);
    EXPECT_EQ(r.limiter.substr(0, 5), "warps") << r.limiter;
  }
  // The seed's per-resource figures, with allocation granularity: 19 registers -> 608 per warp,
  // allocated 768; 16 KB + 1 KB reservation -> 10 blocks... of shared memory (seed: 10).
  const OccupancyReport r19 = ComputeOccupancy(A10G(19, 0));
  EXPECT_EQ(r19.registers_per_warp_allocated, 768);
  EXPECT_EQ(r19.blocks_limit_registers, 2);  // 4 partitions x floor(16384 / 768) = 84 warps
  const OccupancyReport r25 = ComputeOccupancy(A10G(25, 16 * 1024));
  EXPECT_EQ(r25.blocks_limit_shared_memory, 9);  // 164 KiB / 17 KiB
  const OccupancyReport r40 = ComputeOccupancy(A10G(40, 49 * 1024));
  EXPECT_EQ(r40.blocks_limit_registers, 1);      // 1280 per warp: 48 warps
  EXPECT_EQ(r40.blocks_limit_shared_memory, 3);  // 164 KiB / 50 KiB
  EXPECT_EQ(r40.limiter, "warps+registers");
}

OccupancyInputs H200(int block, int regs, int smem) {
  OccupancyInputs in;
  in.max_threads_per_multiprocessor = 2048;
  in.max_blocks_per_multiprocessor = 32;
  in.registers_per_multiprocessor = 65536;
  in.registers_per_block_limit = 65536;
  in.shared_memory_per_multiprocessor_bytes = 228 * 1024;
  in.reserved_shared_memory_per_block_bytes = 1024;
  in.block_size = block;
  in.registers_per_thread = regs;
  in.shared_memory_per_block_bytes = smem;
  return in;
}

TEST(Occupancy, HopperCases) {
  // The seed's x8 launch: 32-thread blocks hit the 32 blocks/SM cap: 32 of 64 warps.
  OccupancyReport r = ComputeOccupancy(H200(32, 20, 0));
  EXPECT_EQ(r.active_blocks_per_multiprocessor, 32);
  EXPECT_DOUBLE_EQ(r.theoretical_occupancy, 0.5);
  EXPECT_EQ(r.limiter, "blocks");
  // 256 threads, 24 registers: 8 blocks, full occupancy, limited by warps.
  r = ComputeOccupancy(H200(256, 24, 0));
  EXPECT_EQ(r.active_blocks_per_multiprocessor, 8);
  EXPECT_DOUBLE_EQ(r.theoretical_occupancy, 1.0);
  EXPECT_EQ(r.limiter, "warps");
  // 48 KiB static shared + 1 KiB reserved: 4 blocks by shared memory, 2 by warps at 1024 threads.
  r = ComputeOccupancy(H200(1024, 15, 48 * 1024));
  EXPECT_EQ(r.blocks_limit_shared_memory, 4);
  EXPECT_EQ(r.active_blocks_per_multiprocessor, 2);
  // 128 registers per thread at 256 threads: 4096 per warp, 4 warps per partition: 2 blocks.
  r = ComputeOccupancy(H200(256, 128, 0));
  EXPECT_EQ(r.blocks_limit_registers, 2);
  EXPECT_DOUBLE_EQ(r.theoretical_occupancy, 0.25);
  EXPECT_EQ(r.limiter, "registers");
  // 255 registers at 1024 threads exceeds the per-block register limit: cannot launch.
  r = ComputeOccupancy(H200(1024, 255, 0));
  EXPECT_EQ(r.active_blocks_per_multiprocessor, 0);
  EXPECT_EQ(r.limiter, "registers");
  // 100 KiB dynamic shared: 2 blocks by shared memory.
  r = ComputeOccupancy(H200(128, 32, 100 * 1024));
  EXPECT_EQ(r.active_blocks_per_multiprocessor, 2);
  EXPECT_EQ(r.limiter, "shared_memory");
}

TEST(Occupancy, DegenerateInputs) {
  OccupancyInputs in;
  EXPECT_EQ(ComputeOccupancy(in).active_blocks_per_multiprocessor, 0);
  EXPECT_DOUBLE_EQ(ComputeOccupancy(in).theoretical_occupancy, 0);
}

}  // namespace
}  // namespace gpubench
