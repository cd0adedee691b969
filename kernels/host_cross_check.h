// The host's part of a run verified on the device (Session::VerifyOnDevice): which elements it
// cross-checks against the host reference, and the run's Verification from the device's report
// plus that check. The host reference stays the judge of every element it sees: the sampled ones
// (both ends of each buffer and positions drawn from the run's seed) and the device's first
// mismatches, whose expected values it recomputes.
#ifndef GPUBENCH_KERNELS_HOST_CROSS_CHECK_H_
#define GPUBENCH_KERNELS_HOST_CROSS_CHECK_H_

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/reference.h"

namespace gpubench {

// Elements of each output and in-out the host cross-checks, at most.
inline constexpr int kHostSamplesPerBuffer = 64;

// Per buffer of the family (empty for inputs): for an output or in-out of n elements,
// min(n, per_buffer) distinct indices, ascending: 0 and n - 1, and the others drawn uniformly from
// the run's seed (SplitMix64 of the seed and the buffer's index), so the same run checks the same
// positions and another seed other ones.
SampleIndices HostSampleIndices(const KernelVariant& variant, const RunShape& shape, uint64_t seed,
                                int per_buffer = kHostSamplesPerBuffer);

// A HostData holding only the inputs and in-outs at `indices` (element j of each is element
// indices[j] of the run's): copied from `data`'s buffers where the host has them, else made by
// GenerateUniformAt. For an elementwise reference (kernels/device_check.h), the reference at j of
// the result is the reference at indices[j] of the run. FAILED_PRECONDITION for a buffer the host
// neither has nor can generate (a custom generator).
absl::StatusOr<HostData> HostDataAt(const KernelVariant& variant, const HostData& data,
                                    std::span<const int64_t> indices);

// The Verification of a run checked on the device: the device's count, maxima and first
// mismatches (their expected values recomputed by the host reference, which must also judge
// them mismatches), and the host's check of `report.sampled` at `samples`. Fails when either
// finds a mismatch; where the two disagree (the host finds a mismatch the device did not, or
// clears one the device reported), the method text says so.
absl::StatusOr<Verification> CombineDeviceVerification(const KernelVariant& variant,
                                                       const HostData& data,
                                                       const SampleIndices& samples,
                                                       const DeviceVerifyReport& report);

// One line for logs and test output: "passed: <method>" or "FAILED: <m> of <n> elements ...
// first at c[12] = 3 (expected 1); ...".
std::string VerificationSummary(const Verification& v);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_HOST_CROSS_CHECK_H_
