// The host reference: what each variant must compute, written independently of the CPU
// emulation, and the verification of a device's output against it.
#ifndef GPUBENCH_KERNELS_REFERENCE_H_
#define GPUBENCH_KERNELS_REFERENCE_H_

#include <cstdint>

#include "common/parallel.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"

namespace gpubench {

// Fills `data` (inputs of `variant` at n elements) from `seed`: values uniform in [-1, 1),
// rounded to the dtype. Element i depends only on (seed, buffer, i), so the data is the same for
// any thread count. Uses `pool` for speed. Thread-compatible.
HostData GenerateHostData(const KernelVariant& variant, int64_t n, uint64_t seed,
                          ParallelPool* pool);

// The expected value of output element i, in double precision. Thread-safe.
double ReferenceValue(const KernelVariant& variant, const HostData& data, int64_t i);

struct Verification {
  bool passed = false;
  int64_t checked = 0;           // elements compared
  int64_t mismatches = 0;        // elements outside the tolerance (NaN counts)
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t first_mismatch_index = -1;
  double first_mismatch_expected = 0;
  double first_mismatch_actual = 0;
  double rtol = 0;
  double atol = 0;
};

// Compares every element of `out` (n elements of the variant's dtype) with the reference.
Verification Verify(const KernelVariant& variant, const HostData& data, const void* out,
                    ParallelPool* pool);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_REFERENCE_H_
