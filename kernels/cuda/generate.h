// Inputs generated on the device: GenerateUniform (kernels/family.h) as a CUDA kernel, bit for
// bit (the formula is kernels/uniform.h's, shared with the host). Host-only header, no CUDA types.
#ifndef GPUBENCH_KERNELS_CUDA_GENERATE_H_
#define GPUBENCH_KERNELS_CUDA_GENERATE_H_

#include <cstdint>

#include "kernels/numeric.h"

namespace gpubench::cuda {

// Enqueues on `stream` (a cudaStream_t) the fill of `elements` elements of `dtype` at `out`
// (device memory of the current device) with GenerateUniform's values for (seed, seed_stream).
// Returns the launch's cudaError_t as an int.
int LaunchGenerateUniform(DType dtype, uint64_t seed, uint64_t seed_stream, int64_t elements,
                          void* out, void* stream);

// Element i as the device kernel computes it (the same __host__ __device__ function, run on the
// host), zero-extended to 64 bits: lets a test without a GPU compare the device's formula with
// GenerateUniform for every dtype.
uint64_t GeneratedElementBitsOnHost(DType dtype, uint64_t seed, uint64_t seed_stream, int64_t i);

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_GENERATE_H_
