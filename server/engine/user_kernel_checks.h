// The integrity checks of a user kernel's run that are not the catalog's own
// (docs/user-kernels.md): the physical floor, and the list of checks a result names.
#ifndef GPUBENCH_SERVER_ENGINE_USER_KERNEL_CHECKS_H_
#define GPUBENCH_SERVER_ENGINE_USER_KERNEL_CHECKS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "server/engine/run_result.h"

namespace gpubench {

// The least time one launch of `result`'s run can take: the bytes that must come from DRAM
// divided by the device's theoretical DRAM bandwidth. Cold samples flush the L2 first, so every
// byte read (inputs and in-outs) comes from DRAM; hot samples may find up to the L2's size
// resident, so only bytes_moved beyond it count. Writes are not counted (they may sit in L2).
struct PhysicalFloor {
  int64_t dram_bytes = 0;
  double peak_bytes_per_second = 0;
  double seconds = 0;  // 0: unknown (no peak) or nothing must come from DRAM
};
PhysicalFloor PhysicalFloorOf(const RunResult& result);

// FAILED_PRECONDITION "implausible" with the figures when the median is below the floor; OK
// otherwise, with *what describing the check ("physical_floor: median ... >= ...").
absl::Status CheckPhysicalFloor(const RunResult& result, std::string* what);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_USER_KERNEL_CHECKS_H_
