// Theoretical occupancy from a kernel's resources and a device's limits, with the limiting
// resource named — the CUDA occupancy calculator's arithmetic, including allocation granularity.
#ifndef GPUBENCH_SERVER_ENGINE_OCCUPANCY_H_
#define GPUBENCH_SERVER_ENGINE_OCCUPANCY_H_

#include <string>

namespace gpubench {

struct OccupancyInputs {
  // Device.
  int max_threads_per_multiprocessor = 0;
  int max_blocks_per_multiprocessor = 0;
  int registers_per_multiprocessor = 0;
  int registers_per_block_limit = 0;               // 0: no separate per-block limit
  int shared_memory_per_multiprocessor_bytes = 0;  // what blocks may use (carveout maximum)
  int reserved_shared_memory_per_block_bytes = 0;  // the driver's per-block reservation
  int warp_size = 32;
  int register_allocation_unit = 256;    // registers, allocated per warp in these units
  int register_partitions = 4;           // register file split among SM sub-partitions
  int shared_memory_allocation_unit = 128;
  // Kernel and launch.
  int block_size = 0;
  int registers_per_thread = 0;
  int shared_memory_per_block_bytes = 0;  // static + dynamic
};

struct OccupancyReport {
  int warps_per_block = 0;
  int max_warps_per_multiprocessor = 0;
  int registers_per_warp_allocated = 0;    // registers_per_thread x warp, rounded to the unit
  int shared_memory_per_block_allocated = 0;  // + reservation, rounded to the unit
  // Blocks per SM each resource allows (a large number when a resource is unused).
  int blocks_limit_warps = 0;
  int blocks_limit_registers = 0;
  int blocks_limit_shared_memory = 0;
  int blocks_limit_blocks = 0;
  int active_blocks_per_multiprocessor = 0;
  int active_warps_per_multiprocessor = 0;
  double theoretical_occupancy = 0;  // active warps / max warps, 0..1
  // "warps", "registers", "shared_memory" or "blocks"; several joined by '+' when they tie.
  std::string limiter;
};

// Pure function; thread-safe.
OccupancyReport ComputeOccupancy(const OccupancyInputs& in);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_OCCUPANCY_H_
