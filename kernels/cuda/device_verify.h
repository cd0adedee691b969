// On-device verification for the CUDA backend (Session::VerifyOnDevice): every element
// of a run's outputs compared on the device with its family's device reference
// (kernels/device_check.h), the host's cross-check sample gathered and the output hash's chunks
// hashed there, so a 1 GiB output costs milliseconds instead of a read-back and a host pass.
// The session calls these after its verified launch; nothing here touches the session's state.
#ifndef GPUBENCH_KERNELS_CUDA_DEVICE_VERIFY_H_
#define GPUBENCH_KERNELS_CUDA_DEVICE_VERIFY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"

namespace gpubench::cuda {

// Whether runs of `variant` can be verified on the device (VerifiableOnDevice, kernels/catalog.h).
bool CanVerifyOnDevice(const KernelVariant& variant);

// Checks every output and in-out of `buffers` (the run's device pointers, after its verified
// launch) against the device reference, gathers `samples` and hashes each verified buffer in
// OutputHash's chunks. Enqueues on `stream` (a cudaStream_t) and waits for it. Uses a few KiB
// of scratch device memory, freed before it returns.
absl::StatusOr<DeviceVerifyReport> VerifyOnDevice(const KernelVariant& variant,
                                                  const KernelBuffers& buffers,
                                                  const HostData& data,
                                                  const SampleIndices& samples, void* stream);

// The 8-byte words (and tail bytes) in which the verified buffers of `a` and `b` (two placement
// copies of one run) differ, counted on the device. Waits for `stream`.
absl::StatusOr<int64_t> CountVerifiedDifferences(const KernelVariant& variant,
                                                 const KernelBuffers& a, const KernelBuffers& b,
                                                 void* stream);

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_DEVICE_VERIFY_H_
