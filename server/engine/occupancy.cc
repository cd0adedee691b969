#include "server/engine/occupancy.h"

#include <algorithm>
#include <climits>

namespace gpubench {
namespace {

int RoundUp(int value, int unit) { return unit <= 0 ? value : (value + unit - 1) / unit * unit; }

}  // namespace

OccupancyReport ComputeOccupancy(const OccupancyInputs& in) {
  OccupancyReport r;
  const int warp = std::max(1, in.warp_size);
  r.warps_per_block = (in.block_size + warp - 1) / warp;
  r.max_warps_per_multiprocessor = in.max_threads_per_multiprocessor / warp;
  if (r.warps_per_block == 0 || r.max_warps_per_multiprocessor == 0) return r;

  r.blocks_limit_warps = r.max_warps_per_multiprocessor / r.warps_per_block;
  r.blocks_limit_blocks = in.max_blocks_per_multiprocessor;

  // Registers are allocated per warp, in units, from the register file of each SM sub-partition;
  // a warp's registers come from one partition.
  r.registers_per_warp_allocated =
      RoundUp(in.registers_per_thread * warp, in.register_allocation_unit);
  if (r.registers_per_warp_allocated == 0) {
    r.blocks_limit_registers = INT_MAX;
  } else if (in.registers_per_block_limit > 0 &&
             r.registers_per_warp_allocated * r.warps_per_block > in.registers_per_block_limit) {
    r.blocks_limit_registers = 0;  // the launch cannot run at all
  } else {
    const int partitions = std::max(1, in.register_partitions);
    const int warps_per_partition =
        (in.registers_per_multiprocessor / partitions) / r.registers_per_warp_allocated;
    r.blocks_limit_registers = warps_per_partition * partitions / r.warps_per_block;
  }

  if (in.shared_memory_per_block_bytes == 0) {
    r.shared_memory_per_block_allocated = 0;
    r.blocks_limit_shared_memory = INT_MAX;
  } else {
    r.shared_memory_per_block_allocated =
        RoundUp(in.shared_memory_per_block_bytes + in.reserved_shared_memory_per_block_bytes,
                in.shared_memory_allocation_unit);
    r.blocks_limit_shared_memory =
        in.shared_memory_per_multiprocessor_bytes / r.shared_memory_per_block_allocated;
  }

  r.active_blocks_per_multiprocessor =
      std::min({r.blocks_limit_warps, r.blocks_limit_registers, r.blocks_limit_shared_memory,
                r.blocks_limit_blocks});
  r.active_warps_per_multiprocessor = r.active_blocks_per_multiprocessor * r.warps_per_block;
  r.theoretical_occupancy =
      static_cast<double>(r.active_warps_per_multiprocessor) / r.max_warps_per_multiprocessor;
  const std::pair<int, const char*> limits[] = {{r.blocks_limit_warps, "warps"},
                                                {r.blocks_limit_registers, "registers"},
                                                {r.blocks_limit_shared_memory, "shared_memory"},
                                                {r.blocks_limit_blocks, "blocks"}};
  for (const auto& [blocks, name] : limits) {
    if (blocks == r.active_blocks_per_multiprocessor) {
      if (!r.limiter.empty()) r.limiter += "+";
      r.limiter += name;
    }
  }
  return r;
}

}  // namespace gpubench
