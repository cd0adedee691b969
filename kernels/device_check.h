// A family's device reference: a plain, independent device implementation of its
// host reference plus a compare kernel that counts the elements outside the family's tolerance
// on the device, so a run's outputs are checked whole without being read back. Host-only and
// nvcc-safe (no CUDA or absl types): the families declare their checks with it, the CUDA backend
// (kernels/cuda/reference_kernels.cu, device_verify.cc) runs them.
//
// A check regenerates every input from the run's seed (GenerateUniform's formula,
// kernels/uniform.h) instead of reading the input buffers, so a kernel that scribbles on its
// inputs is caught and an in-out buffer (SAXPY's y) is checked against its initial contents. So
// a family with a device check must: generate its inputs with the default generator, and have an
// elementwise host reference (element i of an output depends on element i of the inputs only),
// which the host cross-check (kernels/host_cross_check.h) relies on too.
#ifndef GPUBENCH_KERNELS_DEVICE_CHECK_H_
#define GPUBENCH_KERNELS_DEVICE_CHECK_H_

#include <cstdint>

#include "kernels/launch.h"
#include "kernels/numeric.h"

namespace gpubench {

// Most mismatches a check reports with their values (the lowest indices, in buffer order).
inline constexpr int kMaxReportedMismatches = 8;

// What a check accumulates on the device (device memory; DeviceVerify zeroes it).
struct DeviceCheckCounters {
  unsigned long long mismatches;          // elements outside the tolerance (NaN counts)
  unsigned long long max_abs_error_bits;  // bits of a non-negative double: they order as integers
  unsigned long long max_rel_error_bits;
  unsigned long long first_index;  // smallest mismatching index (> after in kFindAfter); ~0: none
  long long at[kMaxReportedMismatches];  // kEvaluate: the indices to evaluate
  double expected[kMaxReportedMismatches];
  double actual[kMaxReportedMismatches];
};

enum class DeviceCheckMode {
  kCount,      // every element: mismatches, max errors, first_index
  kFindAfter,  // the smallest mismatching index above `after` into first_index (atomicMin)
  kEvaluate,   // expected and actual at counters->at[0, evaluate_count)
  kOnHost,     // no launch: the device reference's value at `after`, computed on the host by the
               // same __host__ __device__ code, into *host_value (a test without a GPU)
};

struct DeviceCheckArgs {
  DeviceCheckMode mode = DeviceCheckMode::kCount;
  int buffer = 0;                 // the verified buffer (an output or in-out)
  const void* out = nullptr;      // its device memory
  int64_t n = 0;                  // its elements
  DType dtype = DType::kF32;      // the variant's
  DType out_dtype = DType::kF32;  // the buffer's
  uint64_t seed = 0;              // the run's
  uint64_t streams[kMaxBuffers] = {};  // every buffer's seed_stream (BufferSpec)
  double rtol = 0;                     // |out - ref| <= atol + rtol |ref|
  double atol = 0;
  int64_t after = -1;      // kFindAfter, kOnHost
  int evaluate_count = 0;  // kEvaluate
  DeviceCheckCounters* counters = nullptr;
  double* host_value = nullptr;  // kOnHost
  void* stream = nullptr;        // a cudaStream_t
};

// Enqueues the check (or, kOnHost, computes one value) and returns the launch's cudaError_t as
// an int. Defined in kernels/cuda/reference_kernels.cu, declared where a family binds it with
// GPUBENCH_DEVICE_CHECK (and GPUBENCH_CUDA, so a build without CUDA binds nothing).
using DeviceCheckFn = int (*)(const DeviceCheckArgs& args);

}  // namespace gpubench

#define GPUBENCH_DEVICE_CHECK(name) int name(const ::gpubench::DeviceCheckArgs& args)

#endif  // GPUBENCH_KERNELS_DEVICE_CHECK_H_
