// The host side of a run from its family's declaration (kernels/family.h): the inputs generated
// from the seed, the reference values every output must match, and the verification of a
// device's outputs against them.
#ifndef GPUBENCH_KERNELS_REFERENCE_H_
#define GPUBENCH_KERNELS_REFERENCE_H_

#include <cstdint>
#include <string>

#include "common/parallel.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"

namespace gpubench {

// Fills the inputs and in-out buffers of `variant` at `shape` from `seed` with each buffer's
// generator (default: values uniform in [-1, 1), rounded to the dtype). Element i depends only on
// (seed, buffer, i), so the data is the same for any thread count. Uses `pool` for speed.
// Thread-compatible.
HostData GenerateHostData(const KernelVariant& variant, const RunShape& shape, uint64_t seed,
                          ParallelPool* pool);
// The same at the shape of `n` elements (ShapeOfElements).
HostData GenerateHostData(const KernelVariant& variant, int64_t n, uint64_t seed,
                          ParallelPool* pool);

// The expected value of element i of buffer `buffer` (an output or in-out), in double
// precision. The overload without a buffer means the family's first output. Thread-safe.
double ReferenceValue(const KernelVariant& variant, const HostData& data, int buffer, int64_t i);
double ReferenceValue(const KernelVariant& variant, const HostData& data, int64_t i);

struct Verification {
  bool passed = false;
  int64_t checked = 0;           // elements compared, over every output
  bool sampled = false;          // a spread sample of each output (KernelFamily::verify_samples)
  int64_t mismatches = 0;        // elements outside the tolerance (NaN counts)
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string first_mismatch_buffer{};  // the family's name of the buffer; empty when none
  int64_t first_mismatch_index = -1;  // element index in that buffer
  double first_mismatch_expected = 0;
  double first_mismatch_actual = 0;
  double rtol = 0;
  double atol = 0;
};

// Compares every output and in-out buffer of `out` (read back by Session::RunOnceAndRead) with
// the reference: every element, or the family's sample of each.
Verification Verify(const KernelVariant& variant, const HostData& data, const BufferContents& out,
                    ParallelPool* pool);
// The same for a family with one output, given as a pointer to its elements.
Verification Verify(const KernelVariant& variant, const HostData& data, const void* out,
                    ParallelPool* pool);

// A 64-bit hash of the bytes of every output and in-out buffer of `out` at `shape`, in the
// family's buffer order: equal inputs (the same seed) on healthy devices of one model and driver
// give equal hashes, so a device that disagrees with its fleet's majority is a silent-data-
// corruption suspect even where verification passed within its tolerance or checked a sample.
// Not cryptographic; the same for any thread count (fixed 1 MiB chunks combined in order).
uint64_t OutputHash(const KernelVariant& variant, const RunShape& shape, const BufferContents& out,
                    ParallelPool* pool);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_REFERENCE_H_
