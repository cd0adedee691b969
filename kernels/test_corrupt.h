// The element test_corrupt_one_add_f32 (kernels/test_faults.h) writes wrong: a pure function of
// the run's first two input elements, which come from the run's seed, so each seed corrupts
// another index and a test can compute which. Host- and device-compilable (constexpr; nvcc
// builds with --expt-relaxed-constexpr), shared by the CUDA kernel, the CPU emulation and tests.
#ifndef GPUBENCH_KERNELS_TEST_CORRUPT_H_
#define GPUBENCH_KERNELS_TEST_CORRUPT_H_

#include <cstdint>

#include "common/splitmix64.h"

namespace gpubench::test_faults {

// The corrupted index of a run of n elements whose a[0] and b[0] have the bits a0 and b0.
constexpr int64_t CorruptedIndex(uint32_t a0, uint32_t b0, int64_t n) {
  if (n <= 0) return 0;
  const uint64_t mixed = SplitMix64Hash((static_cast<uint64_t>(a0) << 32) | b0);
  return static_cast<int64_t>(mixed % static_cast<uint64_t>(n));
}

// What is added to the correct sum there: far outside the exact add's tolerance (rtol 0).
inline constexpr float kCorruption = 1.0f;

}  // namespace gpubench::test_faults

#endif  // GPUBENCH_KERNELS_TEST_CORRUPT_H_
