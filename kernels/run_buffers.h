// What both backends' sessions start their KernelBuffers from. Inline: the CUDA backend is a
// library below the kernels library.
#ifndef GPUBENCH_KERNELS_RUN_BUFFERS_H_
#define GPUBENCH_KERNELS_RUN_BUFFERS_H_

#include "kernels/backend.h"
#include "kernels/launch.h"

namespace gpubench {

// The KernelBuffers of a run on `device` before its memory exists: count, shape and devices; a
// session then sets data[i] and elements[i] as it allocates.
inline KernelBuffers BuffersOfRun(const HostData& data, int device) {
  KernelBuffers b;
  b.count = static_cast<int>(data.buffers.size());
  b.shape = data.shape;
  b.n = data.n;
  b.device = device;
  b.peer_device = data.peer_device;
  return b;
}

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_RUN_BUFFERS_H_
