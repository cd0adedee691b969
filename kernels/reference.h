// The host side of a run from its family's declaration (kernels/family.h): the inputs generated
// from the seed, the reference values every output must match, and the verification of a
// device's outputs against them.
#ifndef GPUBENCH_KERNELS_REFERENCE_H_
#define GPUBENCH_KERNELS_REFERENCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"

namespace gpubench {

// Fills the inputs and in-out buffers of `variant` at `shape` from `seed` with each buffer's
// generator (default: values uniform in [-1, 1), rounded to the dtype). Element i depends only on
// (seed, buffer, i), so the data is the same for any thread count. Uses `pool` for speed.
// Thread-compatible.
// `skip_device_generated`: leaves the buffers GeneratedOnDevice (kernels/family.h) names empty,
// for a backend that makes them itself (BackendCapabilities::generates_inputs_on_device) when nothing on the
// host needs them whole; FillSkippedHostBuffers makes them later where something does.
HostData GenerateHostData(const KernelVariant& variant, const RunShape& shape, uint64_t seed,
                          ParallelPool* pool, bool skip_device_generated = false);
// Generates every input and in-out of `data` left empty by skip_device_generated.
void FillSkippedHostBuffers(const KernelVariant& variant, HostData* data, ParallelPool* pool);
// The same at the shape of `n` elements (ShapeOfElements).
HostData GenerateHostData(const KernelVariant& variant, int64_t n, uint64_t seed,
                          ParallelPool* pool);

// The expected value of element i of buffer `buffer` (an output or in-out), in double
// precision. The overload without a buffer means the family's first output. Thread-safe.
double ReferenceValue(const KernelVariant& variant, const HostData& data, int buffer, int64_t i);
double ReferenceValue(const KernelVariant& variant, const HostData& data, int64_t i);

// How a run's outputs were checked (Verification::where).
enum class VerifiedWhere {
  kHost,    // read back and compared on the host: every element, or the family's sample
  kDevice,  // every element compared on the device, plus a sample cross-checked on the host
};

// One element outside the tolerance.
struct MismatchedElement {
  std::string buffer;  // the family's name of the buffer
  int64_t index = 0;
  double expected = 0;
  double actual = 0;
};

struct Verification {
  bool passed = false;
  int64_t checked = 0;           // distinct elements compared, over every output
  bool sampled = false;          // a spread sample of each output (KernelFamily::verify_samples)
  VerifiedWhere where = VerifiedWhere::kHost;
  int64_t device_checked = 0;    // elements compared on the device (kDevice: all of them)
  int64_t host_checked = 0;      // elements compared on the host (kDevice: the cross-check)
  // In words, for results and method texts: "all 1048576 elements on the device + 66 sampled on
  // the host", "a sample of 4096 of 16777216 elements on the host", "all 1000 elements on the
  // host" (VerificationMethod, kernels/host_cross_check.h).
  std::string method{};
  int64_t mismatches = 0;        // elements outside the tolerance (NaN counts)
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string first_mismatch_buffer{};  // the family's name of the buffer; empty when none
  int64_t first_mismatch_index = -1;  // element index in that buffer
  double first_mismatch_expected = 0;
  double first_mismatch_actual = 0;
  double rtol = 0;
  double atol = 0;
  // The first mismatches in buffer order, then element order (at most kMaxReportedMismatches),
  // the first of them repeated above.
  std::vector<MismatchedElement> first_mismatches{};
};

// Compares every output and in-out buffer of `out` (read back by Session::RunOnceAndRead) with
// the reference: every element, or the family's sample of each.
Verification Verify(const KernelVariant& variant, const HostData& data, const BufferContents& out,
                    ParallelPool* pool);
// Elements of every output and in-out buffer of `variant` at `shape`.
int64_t TotalVerifiedElements(const KernelVariant& variant, const RunShape& shape);
// Verification::method for `v` (its where, sampled, device_checked and host_checked) of a run
// with `total_elements` verified elements.
std::string VerificationMethod(const Verification& v, int64_t total_elements);

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

// The bytes of one chunk of OutputHash: buffers are hashed in chunks of this size, each on its
// own (a device can hash them in parallel), then combined in order.
inline constexpr int64_t kOutputHashChunkBytes = int64_t{1} << 20;
// OutputHash's chunk hashes of `bytes` bytes at `data` (chunk c: bytes [c, c + 1) x
// kOutputHashChunkBytes). `pool` may be null.
std::vector<uint64_t> OutputChunkHashes(const std::byte* data, int64_t bytes, ParallelPool* pool);
// OutputHash from its parts: per buffer of the family, the chunk hashes of its bytes (a device
// computed them; kernels/cuda/verify_kernels.h) and how many bytes were hashed. Inputs: empty.
uint64_t OutputHashFromChunks(const KernelVariant& variant,
                              const std::vector<std::vector<uint64_t>>& chunk_hashes,
                              const std::vector<int64_t>& hashed_bytes);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_REFERENCE_H_
