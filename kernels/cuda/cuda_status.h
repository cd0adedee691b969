// The one CUDA error macro: keeps file, line and the call's text in the absl::Status.
#ifndef GPUBENCH_KERNELS_CUDA_CUDA_STATUS_H_
#define GPUBENCH_KERNELS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "kernels/backend.h"

namespace gpubench {

// Errors after which the CUDA context is corrupt for the life of the process.
inline bool IsStickyCudaError(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
      return true;
    default:
      return false;
  }
}

// The status of a CUDA error described by `message`: RESOURCE_EXHAUSTED for out-of-memory,
// INTERNAL otherwise; sticky errors carry kDeviceLostPayload.
inline absl::Status CudaErrorStatus(cudaError_t error, const std::string& message) {
  if (error == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(message);
  absl::Status status = absl::InternalError(message);
  if (IsStickyCudaError(error)) status.SetPayload(kDeviceLostPayload, absl::Cord(message));
  return status;
}

// CudaErrorStatus naming the call and the site; OK for cudaSuccess.
inline absl::Status CudaStatus(cudaError_t error, const char* call, const char* file, int line) {
  if (error == cudaSuccess) return absl::OkStatus();
  return CudaErrorStatus(error, absl::StrCat(file, ":", line, ": ", call, " failed: ",
                                             cudaGetErrorName(error), " (",
                                             cudaGetErrorString(error), ")"));
}

}  // namespace gpubench

#define CUDA_RETURN_IF_ERROR(call)                                                      \
  do {                                                                                  \
    ::absl::Status gpubench_cuda_status_ =                                              \
        ::gpubench::CudaStatus(static_cast<cudaError_t>(call), #call, __FILE__, __LINE__); \
    if (!gpubench_cuda_status_.ok()) return gpubench_cuda_status_;                      \
  } while (0)

#endif  // GPUBENCH_KERNELS_CUDA_CUDA_STATUS_H_
