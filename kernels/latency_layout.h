// The memory-latency family's chase layout, in plain C++17 so that device code (nvcc) and host
// code share it. kernels/latency_chase.h has the host side (cycle generator, host walk).
//
// A chase over a footprint of F bytes has F / kChaseStrideBytes nodes, node i at byte offset
// i x kChaseStrideBytes. Each node's first 8 bytes hold where the next node of one random cycle
// through every node is: its byte offset as generated, its address once a session has rebased
// the buffer to where it lives. A chase loads the address at its position, then the address
// found there, and so on: every load depends on the previous one, and consecutive nodes lie on
// different cache lines in random order, so neither memory-level parallelism nor a prefetcher
// can hide the latency. Time per launch / loads per launch = seconds per load.
#ifndef GPUBENCH_KERNELS_LATENCY_LAYOUT_H_
#define GPUBENCH_KERNELS_LATENCY_LAYOUT_H_

#include <cstdint>
#include <string>

namespace gpubench {

// Bytes between consecutive nodes: one node per 128-byte line, the L1 and L2 line size of NVIDIA
// GPUs (twice a CPU's 64-byte line, so an x86 adjacent-line prefetcher fetches no other node).
inline constexpr int64_t kChaseStrideBytes = 128;

// Least footprint: two nodes (a cycle of one node would load the same line forever).
inline constexpr int64_t kChaseMinFootprintBytes = 2 * kChaseStrideBytes;
// Most footprint: node indices fit in 32 bits (512 GiB at 128-byte strides).
inline constexpr int64_t kChaseMaxNodes = int64_t{1} << 32;

// Dependent loads per launch. Up to 2^11 nodes (256 KiB, the largest L1 of the GPUs gpubench
// targets): 1024 loads per node, at least 2^16. The GPU invalidates L1 at every launch, so a
// launch first reloads its nodes from L2; over 1024 passes that costs under 1% of an L1 hit per
// load (a 2^16-load launch at 256 KiB would read 3% of its loads from L2: +25%). Beyond: the node
// count clamped to [2^16, 2^18]. At least 2^16: at an L1 hit (~20-40 ns) a launch lasts over a
// millisecond, so the gap between launches in a batch is under 0.2% of it. Up to 2^18 (32 MiB of
// nodes) a launch walks the whole cycle at least once, so one warm-up launch leaves every
// footprint that fits in L2 resident there (L2 survives launches). At most 2^18: at HBM latency
// (~0.5-1 us) a launch still ends within about a quarter second. Each launch continues from
// where the previous one stopped, so beyond 32 MiB successive launches keep walking nodes not
// visited recently.
inline constexpr int64_t kChaseMinLoadsPerLaunch = int64_t{1} << 16;
inline constexpr int64_t kChaseMaxLoadsPerLaunch = int64_t{1} << 18;
inline constexpr int64_t kChaseL1Nodes = int64_t{1} << 11;
inline constexpr int64_t kChaseL1LoadsPerNode = 1024;

// Nodes of a chase over `footprint_bytes` (whole strides).
inline constexpr int64_t ChaseNodes(int64_t footprint_bytes) {
  return footprint_bytes / kChaseStrideBytes;
}

inline constexpr int64_t ChaseLoadsPerLaunch(int64_t footprint_bytes) {
  const int64_t nodes = ChaseNodes(footprint_bytes);
  if (nodes <= kChaseL1Nodes) {
    return nodes * kChaseL1LoadsPerNode > kChaseMinLoadsPerLaunch ? nodes * kChaseL1LoadsPerNode
                                                                  : kChaseMinLoadsPerLaunch;
  }
  return nodes < kChaseMinLoadsPerLaunch   ? kChaseMinLoadsPerLaunch
         : nodes > kChaseMaxLoadsPerLaunch ? kChaseMaxLoadsPerLaunch
                                           : nodes;
}

// What a session reports about a chase over `footprint_bytes` (RunResult::launch_report):
// "pointer chase: 8192 nodes, 65536 dependent loads per launch".
inline std::string ChaseReport(int64_t footprint_bytes) {
  return "pointer chase: " + std::to_string(ChaseNodes(footprint_bytes)) + " nodes, " +
         std::to_string(ChaseLoadsPerLaunch(footprint_bytes)) + " dependent loads per launch";
}

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_LATENCY_LAYOUT_H_
