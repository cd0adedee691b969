// The integrity checks of a user kernel's run that are not the catalog's own
// (docs/user-kernels.md): the launch count in every timed window, the timer against the kernels'
// own durations, and the physical floor. Pure functions of a measured RunResult, so that every
// verdict is tested without a GPU (tests/engine/user_kernel_checks_test.cc); the worker applies
// them (server/worker/user_kernel_run.cc).
#ifndef GPUBENCH_SERVER_ENGINE_USER_KERNEL_CHECKS_H_
#define GPUBENCH_SERVER_ENGINE_USER_KERNEL_CHECKS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "server/engine/run_result.h"

namespace gpubench {

// The L2 floor's bandwidth bound, per SM and SM clock: what an SM's load/store data path can carry
// counted twice, once for loads and once for stores. The path is the unified L1 / shared memory,
// 32 banks of 32 bits per clock (CUDA C++ Programming Guide, "Compute Capabilities", shared memory
// from 5.x on: 128 bytes per clock); every byte a kernel reads from L2 or writes to it crosses it,
// TMA copies into shared memory included. The figure bounds what the SMs can take in, which is
// more than the L2 can give them, so that no honest kernel can be refused; it catches only a
// kernel that skips most of its work.
inline constexpr double kL2FloorBytesPerSmClock = 2 * 128;

// The FLOP floor's peak: the device's highest dense datasheet figure over every precision
// (kernels/gemm_peak.cc; FP8 tensor cores on Hopper), whatever the run's dtype, since a kernel may
// compute in a narrower precision where its tolerance allows, times this slack for algorithms
// that do fewer operations than the family declares (one Strassen level does 7/8 of 2 M N K).
inline constexpr double kFlopFloorPeakSlack = 2;

// Which bound gave a floor.
enum class FloorBound { kNone, kDram, kL2, kFlop };
const char* FloorBoundName(FloorBound bound);  // "", "dram", "l2", "flop"

// The least time one launch of `result`'s run can take: the largest of three floors.
//  - DRAM: the bytes that must come from DRAM over the theoretical DRAM bandwidth. Cold samples
//    flush the L2 first, so every byte read (inputs and in-outs) comes from DRAM; hot samples may
//    find up to the L2's size resident, so only bytes_moved beyond it count. Writes are not
//    counted (they may sit in L2).
//  - L2: bytes_moved, reads and writes, over SMs x peak SM clock x kL2FloorBytesPerSmClock: every
//    byte crosses an SM's data path, wherever it comes from, so this holds for working sets that
//    fit in L2, where the DRAM floor is 0.
//  - FLOP: the family's operations where it counts FLOP (KernelFamily::operations with
//    operation_unit "FLOP"), over the highest dense FLOP/s the device's datasheet gives
//    (gemm_peak.h) x kFlopFloorPeakSlack. No family with a user-kernel contract counts
//    operations (elementwise_add, saxpy and copy are judged by bytes), so today it applies to
//    none of them; it is generic for a family that declares FLOP.
// A floor whose figures are unknown (no DRAM peak, no SM count or clock, no datasheet row) is 0.
struct PhysicalFloor {
  int64_t dram_bytes = 0;
  double peak_bytes_per_second = 0;  // theoretical DRAM
  double dram_seconds = 0;
  int64_t l2_bytes = 0;
  double l2_bytes_per_second = 0;  // the SM data-path bound
  double l2_seconds = 0;
  int64_t flops = 0;
  double flops_per_second = 0;  // the datasheet's highest dense figure x the slack
  std::string flop_basis;       // the datasheet figure it came from, or why there is none
  double flop_seconds = 0;
  double seconds = 0;  // the floor: the largest of the three; 0 when none is known
  FloorBound bound = FloorBound::kNone;
};
PhysicalFloor PhysicalFloorOf(const RunResult& result);

// FAILED_PRECONDITION "implausible" with the figures and the bound that applied when the median
// is below the floor; OK otherwise, with *what describing the check ("physical_floor: median ...
// >= ..."). Fills the floor's figures into *figures when it is not null.
absl::Status CheckPhysicalFloor(const RunResult& result, std::string* what,
                                UserKernelIntegrity* figures = nullptr);

// launch_count: every recorded timed window (RunResult::window_audit) must hold exactly
// launches_per_window x `kernels_per_launch` GPU operations, all kernels, and no foreign kernel
// (one launched from the device, or another stream's that started inside it). FAILED_PRECONDITION
// naming the check, the first window that differs and its counts. Where nothing was recorded
// (CUPTI missing or held, profile mode) OK, with *what saying "not applied" and why.
absl::Status CheckLaunchCount(const RunResult& result, int kernels_per_launch, std::string* what,
                              UserKernelIntegrity* figures = nullptr);

// The timer cross-check's tolerance: the events around a launch contain it, so their median can
// only be longer than the kernel's own; allowed below it are cudaEventElapsedTime's resolution of
// about 0.5 us (CUDA Runtime API reference) and 1% for two clocks' readings of the same launches.
inline constexpr double kTimerCrossCheckRelative = 0.01;
inline constexpr double kTimerCrossCheckAbsoluteSeconds = 0.5e-6;

// timer_cross_check: the run's timer median against the median of the kernels' own durations
// (the timed windows' activity spans) over the same kept samples. Where the timer is CUDA
// events, FAILED_PRECONDITION with both medians and their ratio when the timer reads faster than
// the kernel ran (beyond the tolerance above). Where the timer is the durations themselves
// (cupti, gpu_time) it says so; where no duration was recorded, "not applied" and why.
absl::Status CheckTimerCrossCheck(const RunResult& result, std::string* what,
                                  UserKernelIntegrity* figures = nullptr);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_USER_KERNEL_CHECKS_H_
