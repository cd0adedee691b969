// What the CUDA runtime says about one device, as DeviceInfo (kernels/backend.h). Host-only header.
#ifndef GPUBENCH_KERNELS_CUDA_DESCRIBE_DEVICE_H_
#define GPUBENCH_KERNELS_CUDA_DESCRIBE_DEVICE_H_

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace gpubench::cuda {

// The facts of CUDA device `device` (a valid index), free memory read now; makes it current.
// Thread-safe (the runtime's calls are).
absl::StatusOr<DeviceInfo> DescribeDevice(int device);

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_DESCRIBE_DEVICE_H_
