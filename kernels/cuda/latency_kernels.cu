// The memory-latency family's device code: a dependent-load pointer chase over a random cycle
// (kernels/latency_layout.h describes the layout; kernels/families/latency.cc the family).
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "kernels/latency_layout.h"
#include "kernels/launch.h"

namespace gpubench::cuda {
namespace {

// Offsets -> addresses: node i's successor offset plus the buffer's device address.
__global__ void RebaseKernel(char* base, int64_t nodes) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < nodes;
       i += int64_t{gridDim.x} * blockDim.x) {
    *reinterpret_cast<unsigned long long*>(base + i * kChaseStrideBytes) +=
        reinterpret_cast<unsigned long long>(base);
  }
}

// One thread: every load's address is the value the previous load returned, so the loads
// serialize and the launch lasts `loads` load latencies (the loop counter's arithmetic runs in
// the shadow of the outstanding load). ld.global.ca: cached in L1 and L2, the default for global
// loads, so the L1 plateau shows. *position is the node to start at, and receives the node the
// chase ends on: the next launch continues from there.
__global__ void ChaseKernel(const char* base, unsigned long long* position, int64_t loads) {
  const unsigned long long* p =
      reinterpret_cast<const unsigned long long*>(base + *position * kChaseStrideBytes);
  for (int64_t i = 0; i < loads; ++i) {
    p = reinterpret_cast<const unsigned long long*>(__ldca(p));
  }
  *position = (reinterpret_cast<const char*>(p) - base) / kChaseStrideBytes;
}

}  // namespace

// Buffers: 0 = the chase (offsets until the setup below rebased them), 1 = the position (one
// node index, in-out).
GPUBENCH_CUDA_LAUNCHER(LaunchLatencyChase) {
  (void)geometry;
  if (symbol != nullptr) {
    *symbol = reinterpret_cast<const void*>(&ChaseKernel);
    return 0;
  }
  // No chase without a cycle (a footprint the family refuses): never load through a null base.
  if (ChaseNodes(buffers.shape.elements) < 2) return 0;
  ChaseKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      buffers.at<const char>(0), buffers.at<unsigned long long>(1),
      ChaseLoadsPerLaunch(buffers.shape.elements));
  return cudaGetLastError();
}

// Once per session, before any launch: the generated offsets become device addresses.
int LatencyChaseSetup(const KernelBuffers& buffers, const LaunchGeometry& geometry, void* stream,
                      std::unique_ptr<LaunchState>* state, std::string* report) {
  (void)geometry;
  (void)state;
  const int64_t nodes = ChaseNodes(buffers.shape.elements);
  if (nodes < 2) return 0;
  *report = ChaseReport(buffers.shape.elements) + " (one thread, ld.global.ca)";
  constexpr int kBlock = 256;
  const int64_t blocks = (nodes + kBlock - 1) / kBlock;
  RebaseKernel<<<static_cast<int>(blocks < 4096 ? blocks : 4096), kBlock, 0,
                 static_cast<cudaStream_t>(stream)>>>(buffers.at<char>(0), nodes);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
