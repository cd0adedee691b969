// The CUDA backend: runs catalog variants on NVIDIA GPUs, timed the nvbench way. Host-only
// header; device code lives in kernels/cuda/*.cu.
#ifndef GPUBENCH_KERNELS_CUDA_CUDA_BACKEND_H_
#define GPUBENCH_KERNELS_CUDA_CUDA_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace gpubench {

// One device per visible GPU (CUDA_VISIBLE_DEVICES applies). UNAVAILABLE with the CUDA error
// text when there is no driver or no device.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend();

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_CUDA_CUDA_BACKEND_H_
