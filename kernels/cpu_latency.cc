// The memory-latency family on the CPU backend: a real host pointer chase (its seconds per load
// are the host's latency at the footprint), with the layout of kernels/latency_layout.h.
#include <cstring>
#include <memory>
#include <string>

#include "kernels/latency_chase.h"
#include "kernels/launch.h"

namespace gpubench::cpu {

// Buffers: 0 = the chase (rebased to host addresses by the setup), 1 = the position (one node
// index: where the chase starts, and where it ended).
GPUBENCH_CPU_KERNEL(LatencyChase) {
  (void)geometry;
  // One chain, one "thread"; no chase without a cycle (a footprint the family refuses).
  if (thread_begin >= thread_end || ChaseNodes(buffers.shape.elements) < 2) return;
  const std::byte* base = buffers.at<const std::byte>(0);
  uint64_t* position = buffers.at<uint64_t>(1);
  const void* end = CpuChase(base + *position * kChaseStrideBytes,
                             ChaseLoadsPerLaunch(buffers.shape.elements));
  *position = static_cast<uint64_t>(static_cast<const std::byte*>(end) - base) / kChaseStrideBytes;
}

// Once per session, before any launch: the generated offsets become host addresses.
void LatencyChaseSetup(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                       std::unique_ptr<LaunchState>* state, std::string* report) {
  (void)geometry;
  (void)state;
  std::byte* base = buffers.at<std::byte>(0);
  const int64_t nodes = ChaseNodes(buffers.shape.elements);
  if (nodes < 2) return;
  RebaseChase(base, nodes, reinterpret_cast<uint64_t>(base));
  *report = ChaseReport(buffers.shape.elements);
}

}  // namespace gpubench::cpu
