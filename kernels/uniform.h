// The counter-based uniform generator behind every default input (GenerateUniform), as one
// formula for host and device: element i of (seed, stream) depends only on those three, so the
// CUDA backend generates inputs on the device bit for bit as the host does
// (kernels/cuda/generate_kernels.cu). Host- and device-compilable (constexpr; nvcc builds with
// --expt-relaxed-constexpr).
#ifndef GPUBENCH_KERNELS_UNIFORM_H_
#define GPUBENCH_KERNELS_UNIFORM_H_

#include <cstdint>

#include "common/splitmix64.h"

namespace gpubench {

// 24 random bits of element i: the value is UniformBits24 / 2^23 - 1, uniform in [-1, 1) and
// exact in float (a multiple of 2^-23 below 1 in magnitude), so each narrower type is one
// rounding of that float.
constexpr uint32_t UniformBits24(uint64_t seed, uint64_t stream, int64_t i) {
  const uint64_t bits = SplitMix64Hash(
      seed ^ SplitMix64Hash(stream * 0x632be59bd9b4e019ULL + static_cast<uint64_t>(i)));
  return static_cast<uint32_t>(bits >> 40);
}

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_UNIFORM_H_
