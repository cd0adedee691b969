// CUDA launchers of the copy families (kernels/families/copies.cc): copy-engine transfers
// (cudaMemcpyAsync, cudaMemcpyPeerAsync, both directions at once on two streams) and the
// SM-driven copy that reads or writes a peer device's memory.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "kernels/launch.h"

namespace gpubench::cuda {
namespace {

constexpr int kUnroll = 4;

// Grid-stride over 16-byte packets, four loads in flight per thread before their stores: a
// remote load over NVLink takes microseconds, so one load at a time per thread would leave the
// link idle. The last 4, 8 or 12 bytes (n not a multiple of 4 floats) by block 0.
__global__ void SmCopyKernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                             int64_t packets, const float* __restrict__ tail_src,
                             float* __restrict__ tail_dst, int tail) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < packets; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < packets; i += stride) dst[i] = src[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) tail_dst[threadIdx.x] = tail_src[threadIdx.x];
}

// The bidirectional copy's second stream and the events that fork it from the session's stream
// and join it back, so the timed window covers both directions.
class BidirectionalState final : public LaunchState {
 public:
  ~BidirectionalState() override {
    if (second != nullptr) {
      cudaStreamSynchronize(second);
      cudaStreamDestroy(second);
    }
    if (fork != nullptr) cudaEventDestroy(fork);
    if (join != nullptr) cudaEventDestroy(join);
  }
  cudaStream_t second = nullptr;
  cudaEvent_t fork = nullptr;
  cudaEvent_t join = nullptr;
};

bool LibraryOnly(const void** symbol) {
  if (symbol == nullptr) return false;
  *symbol = nullptr;  // the copy engines run no kernel gpubench could inspect
  return true;
}

size_t Bytes(const KernelBuffers& b, int i) { return static_cast<size_t>(b.elements[i]) * 4; }

}  // namespace

// Buffer 0 -> buffer 1, wherever they are (host pinned or pageable, device): the runtime picks the
// direction from the pointers (cudaMemcpyDefault, unified addressing).
GPUBENCH_CUDA_LAUNCHER(LaunchCopyDefault) {
  if (LibraryOnly(symbol)) return cudaSuccess;
  (void)geometry;
  return cudaMemcpyAsync(buffers.data[1], buffers.data[0], Bytes(buffers, 0), cudaMemcpyDefault,
                         static_cast<cudaStream_t>(stream));
}

GPUBENCH_CUDA_LAUNCHER(LaunchCopyBidirectional) {
  if (LibraryOnly(symbol)) return cudaSuccess;
  (void)geometry;
  const auto* s = static_cast<const BidirectionalState*>(buffers.state);
  const auto main = static_cast<cudaStream_t>(stream);
  if (s == nullptr) return cudaErrorNotReady;  // the setup did not run
  cudaError_t e = cudaEventRecord(s->fork, main);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(s->second, s->fork, 0);
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(buffers.data[1], buffers.data[0], Bytes(buffers, 0),
                        cudaMemcpyHostToDevice, main);
  }
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(buffers.data[3], buffers.data[2], Bytes(buffers, 2),
                        cudaMemcpyDeviceToHost, s->second);
  }
  if (e == cudaSuccess) e = cudaEventRecord(s->join, s->second);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(main, s->join, 0);
  return e;
}

int SetupBidirectional(const KernelBuffers&, const LaunchGeometry&, void*,
                       std::unique_ptr<LaunchState>* state, std::string* report) {
  auto s = std::make_unique<BidirectionalState>();
  cudaError_t e = cudaStreamCreateWithFlags(&s->second, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->fork, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->join, cudaEventDisableTiming);
  if (e != cudaSuccess) return e;
  *state = std::move(s);
  *report = "host -> device on the session's stream, device -> host on a second stream, joined "
            "before the stop event";
  return cudaSuccess;
}

// The run's device -> its peer, by the copy engine.
GPUBENCH_CUDA_LAUNCHER(LaunchCopyPeerEngine) {
  if (LibraryOnly(symbol)) return cudaSuccess;
  (void)geometry;
  return cudaMemcpyPeerAsync(buffers.data[1], buffers.peer_device, buffers.data[0], buffers.device,
                             Bytes(buffers, 0), static_cast<cudaStream_t>(stream));
}

// Buffer 0 -> buffer 1 by the run's device's SMs (one of them is the peer's memory).
GPUBENCH_CUDA_LAUNCHER(LaunchCopySm) {
  if (symbol != nullptr) {
    *symbol = reinterpret_cast<const void*>(&SmCopyKernel);
    return cudaSuccess;
  }
  const int64_t bytes = buffers.n * 4;
  const int64_t packets = bytes / 16;
  const int tail = static_cast<int>((bytes % 16) / 4);
  const auto* tail_src = static_cast<const float*>(buffers.data[0]) + packets * 4;
  auto* tail_dst = static_cast<float*>(buffers.data[1]) + packets * 4;
  SmCopyKernel<<<static_cast<unsigned int>(geometry.grid_size), geometry.block_size, 0,
                 static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(buffers.data[0]), static_cast<uint4*>(buffers.data[1]), packets,
      tail_src, tail_dst, tail);
  return cudaGetLastError();
}

// Peer copies need peer access both ways (the session enabled it where the devices allow):
// without it a copy-engine transfer would be staged through host memory and an SM copy would
// fault. Returns cudaErrorNotSupported with the reason in *report otherwise, and names
// CUDA's view of the pair (performance rank, native atomics) in *report.
int SetupPeer(const KernelBuffers& buffers, const LaunchGeometry&, void*,
              std::unique_ptr<LaunchState>*, std::string* report) {
  const int a = buffers.device, b = buffers.peer_device;
  int forward = 0, backward = 0, rank = -1, atomics = 0;
  cudaError_t e = cudaDeviceCanAccessPeer(&forward, a, b);
  if (e == cudaSuccess) e = cudaDeviceCanAccessPeer(&backward, b, a);
  if (e != cudaSuccess) return e;
  if (forward == 0 || backward == 0) {
    *report = "devices " + std::to_string(a) + " and " + std::to_string(b) +
              " have no peer access (cudaDeviceCanAccessPeer " + std::to_string(forward) + ", " +
              std::to_string(backward) +
              "): no NVLink between them and the PCIe topology (switches, IOMMU/ACS, a virtual "
              "machine) does not allow peer-to-peer";
    return cudaErrorNotSupported;  // with the reason in *report: FAILED_PRECONDITION
  }
  if (cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b) != cudaSuccess ||
      cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b) !=
          cudaSuccess) {
    cudaGetLastError();
  }
  *report = "peer access " + std::to_string(a) + " <-> " + std::to_string(b) +
            " (CUDA P2P performance rank " + std::to_string(rank) + ", native atomics " +
            (atomics != 0 ? "yes" : "no") + ")";
  return cudaSuccess;
}

}  // namespace gpubench::cuda
