// CPU emulations of the copy families' kernels (kernels/families/copies.cc) that are not a plain
// dst = src over items_per_thread elements per thread (cpu::CopyF32 is).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/launch.h"

namespace gpubench::cpu {

// Two copies at once: elements [0, n/2) from buffer 0 into buffer 1 (host -> device) and
// [n/2, n) from buffer 2 into buffer 3 (device -> host); "thread" t owns elements
// [t x items, (t + 1) x items) of the whole range.
GPUBENCH_CPU_KERNEL(CopyBidirectional) {
  const int64_t half = buffers.elements[0];
  const int64_t first = std::min(thread_begin * geometry.items_per_thread, buffers.n);
  const int64_t last = std::min(thread_end * geometry.items_per_thread, buffers.n);
  if (first < half) {
    const int64_t end = std::min(last, half);
    std::memcpy(buffers.at<float>(1) + first, buffers.at<const float>(0) + first,
                sizeof(float) * (end - first));
  }
  if (last > half) {
    const int64_t begin = std::max(first, half) - half;
    std::memcpy(buffers.at<float>(3) + begin, buffers.at<const float>(2) + begin,
                sizeof(float) * (last - half - begin));
  }
}

// The SM copy's indexing: thread t of a grid of T threads copies the 16-byte packets t, t + T,
// t + 2T, ... (4 floats each); thread 0 also the last n % 4 floats.
GPUBENCH_CPU_KERNEL(CopyGridStride) {
  const int64_t threads = geometry.grid_size * geometry.block_size;
  const int64_t packets = buffers.n / 4;
  const auto* src = buffers.at<const float>(0);
  auto* dst = buffers.at<float>(1);
  for (int64_t t = thread_begin; t < thread_end; ++t) {
    for (int64_t p = t; p < packets; p += threads) std::memcpy(dst + 4 * p, src + 4 * p, 16);
    if (t == 0) {
      std::memcpy(dst + 4 * packets, src + 4 * packets, sizeof(float) * (buffers.n - 4 * packets));
    }
  }
}

// The peer copies' path on the CPU backend, for the run's launch report.
void SetupPeerCopy(const KernelBuffers& buffers, const LaunchGeometry&,
                   std::unique_ptr<LaunchState>*, std::string* report) {
  *report = "peer path: host memory (the cpu backend's simulated devices " +
            std::to_string(buffers.device) + " and " + std::to_string(buffers.peer_device) +
            " share the host)";
}

}  // namespace gpubench::cpu
