#include "kernels/host_cross_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/splitmix64.h"
#include "common/status_macros.h"

namespace gpubench {
namespace {

// The host's rule (kernels/reference.cc): NaN fails.
bool WithinTolerance(double expected, double actual, const Tolerance& tol) {
  return std::fabs(actual - expected) <= tol.atol + tol.rtol * std::fabs(expected);
}

void AddErrors(double expected, double actual, Verification* v) {
  const double abs_error = std::fabs(actual - expected);
  if (std::isnan(abs_error)) {
    v->max_abs_error = v->max_rel_error = std::numeric_limits<double>::infinity();
    return;
  }
  v->max_abs_error = std::max(v->max_abs_error, abs_error);
  v->max_rel_error =
      std::max(v->max_rel_error, abs_error / std::max(std::fabs(expected), 1e-30));
}

}  // namespace

SampleIndices HostSampleIndices(const KernelVariant& variant, const RunShape& shape, uint64_t seed,
                                int per_buffer) {
  const KernelFamily& family = *variant.family;
  SampleIndices samples(family.buffers.size());
  for (size_t b = 0; b < family.buffers.size(); ++b) {
    if (!IsVerified(family.buffers[b])) continue;
    const int64_t n = BufferElements(family.buffers[b], shape);
    std::vector<int64_t>& s = samples[b];
    if (n <= per_buffer) {
      for (int64_t i = 0; i < n; ++i) s.push_back(i);
      continue;
    }
    if (per_buffer <= 0) continue;
    s.push_back(0);
    if (per_buffer >= 2) s.push_back(n - 1);
    SplitMix64 rng(SplitMix64Hash(seed ^ (0x73616d706c65ULL + b * kSplitMix64Gamma)));
    // Distinct draws: n > per_buffer, so the loop ends (a duplicate is drawn again).
    while (static_cast<int>(s.size()) < per_buffer) {
      const auto i = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
      if (std::find(s.begin(), s.end(), i) == s.end()) s.push_back(i);
    }
    std::sort(s.begin(), s.end());
  }
  return samples;
}

absl::StatusOr<HostData> HostDataAt(const KernelVariant& variant, const HostData& data,
                                    std::span<const int64_t> indices) {
  const KernelFamily& family = *variant.family;
  HostData at;
  at.family = data.family;
  at.dtype = data.dtype;
  at.shape = data.shape;
  at.n = static_cast<int64_t>(indices.size());
  at.seed = data.seed;
  at.buffers.resize(family.buffers.size());
  for (size_t b = 0; b < family.buffers.size(); ++b) {
    const BufferSpec& spec = family.buffers[b];
    if (spec.role == BufferRole::kOutput) continue;
    const DType dtype = BufferDType(spec, variant.dtype);
    const size_t size = static_cast<size_t>(DTypeSize(dtype));
    const int64_t n = BufferElements(spec, data.shape);
    std::vector<std::byte>& bytes = at.buffers[b];
    bytes.resize(indices.size() * size);
    if (b < data.buffers.size() &&
        static_cast<int64_t>(data.buffers[b].size()) == n * static_cast<int64_t>(size)) {
      for (size_t j = 0; j < indices.size(); ++j) {
        std::memcpy(bytes.data() + j * size,
                    data.buffers[b].data() + static_cast<size_t>(indices[j]) * size, size);
      }
    } else if (spec.generate == nullptr) {
      GenerateUniformAt({.seed = data.seed, .stream = spec.seed_stream, .dtype = dtype,
                         .shape = data.shape},
                        indices, bytes);
    } else {
      return absl::FailedPreconditionError(absl::StrCat(
          "the host cannot make buffer ", spec.name, " of ", variant.name,
          " at sampled positions: it has no copy and the buffer's generator is custom"));
    }
  }
  return at;
}

absl::StatusOr<Verification> CombineDeviceVerification(const KernelVariant& variant,
                                                       const HostData& data,
                                                       const SampleIndices& samples,
                                                       const DeviceVerifyReport& report) {
  const KernelFamily& family = *variant.family;
  const Tolerance tol = ToleranceOf(variant, data.shape);
  const ReferenceFn reference = ReferenceOf(variant);
  Verification v;
  v.where = VerifiedWhere::kDevice;
  v.rtol = tol.rtol;
  v.atol = tol.atol;
  v.checked = report.checked;
  v.device_checked = report.checked;
  v.max_abs_error = report.max_abs_error;
  v.max_rel_error = report.max_rel_error;

  // The sample: every element the host reference judges against what the device holds.
  int64_t host_mismatches = 0;
  std::vector<MismatchedElement> host_found;
  for (size_t b = 0; b < family.buffers.size(); ++b) {
    if (!IsVerified(family.buffers[b]) || b >= samples.size() || samples[b].empty()) continue;
    const std::vector<int64_t>& indices = samples[b];
    const DType dtype = BufferDType(family.buffers[b], variant.dtype);
    if (b >= report.sampled.size() ||
        report.sampled[b].size() < indices.size() * static_cast<size_t>(DTypeSize(dtype))) {
      return absl::InternalError(absl::StrCat("the device returned too few sampled elements of ",
                                              family.buffers[b].name));
    }
    ASSIGN_OR_RETURN(const HostData at, HostDataAt(variant, data, indices));
    for (size_t j = 0; j < indices.size(); ++j) {
      const double expected = reference(variant, at, static_cast<int>(b), static_cast<int64_t>(j));
      const double actual =
          LoadAsDouble(dtype, report.sampled[b].data(), static_cast<int64_t>(j));
      AddErrors(expected, actual, &v);
      ++v.host_checked;
      if (WithinTolerance(expected, actual, tol)) continue;
      ++host_mismatches;
      if (host_found.size() < kMaxReportedMismatches) {
        host_found.push_back({.buffer = std::string(family.buffers[b].name),
                              .index = indices[j],
                              .expected = expected,
                              .actual = actual});
      }
    }
  }

  // The device's first mismatches: the host reference recomputes each expected value and must
  // judge the element a mismatch too.
  int64_t cleared = 0;
  for (const DeviceMismatch& m : report.first_mismatches) {
    if (m.buffer < 0 || m.buffer >= static_cast<int>(family.buffers.size())) {
      return absl::InternalError(absl::StrCat("device mismatch in buffer ", m.buffer));
    }
    const int64_t index[] = {m.index};
    ASSIGN_OR_RETURN(const HostData at, HostDataAt(variant, data, index));
    const double expected = reference(variant, at, m.buffer, 0);
    if (WithinTolerance(expected, m.actual, tol)) ++cleared;
    AddErrors(expected, m.actual, &v);
    v.first_mismatches.push_back({.buffer = std::string(family.buffers[m.buffer].name),
                                  .index = m.index,
                                  .expected = expected,
                                  .actual = m.actual});
  }
  if (v.first_mismatches.empty()) v.first_mismatches = std::move(host_found);

  v.mismatches = std::max(report.mismatches, host_mismatches);
  v.passed = report.mismatches == 0 && host_mismatches == 0;
  if (!v.first_mismatches.empty()) {
    const MismatchedElement& first = v.first_mismatches.front();
    v.first_mismatch_buffer = first.buffer;
    v.first_mismatch_index = first.index;
    v.first_mismatch_expected = first.expected;
    v.first_mismatch_actual = first.actual;
  }
  v.method = VerificationMethod(v, TotalVerifiedElements(variant, data.shape));
  if (host_mismatches > 0 && report.mismatches == 0) {
    absl::StrAppend(&v.method, "; the host found ", host_mismatches,
                    " mismatches in its sample that the device check did not (device reference "
                    "suspect)");
  }
  if (cleared > 0) {
    absl::StrAppend(&v.method, "; the host reference accepts ", cleared, " of the ",
                    report.first_mismatches.size(),
                    " device mismatches it rechecked (device reference suspect)");
  }
  return v;
}

std::string VerificationSummary(const Verification& v) {
  if (v.passed) return absl::StrCat("passed: ", v.method);
  std::string s = absl::StrFormat("FAILED: %d of %d elements outside |out - ref| <= %g + %g |ref|",
                                  v.mismatches, v.checked, v.atol, v.rtol);
  for (size_t i = 0; i < v.first_mismatches.size(); ++i) {
    const MismatchedElement& m = v.first_mismatches[i];
    absl::StrAppendFormat(&s, "%s %s[%d] = %.9g (expected %.9g)", i == 0 ? "; first at" : ",",
                          m.buffer, m.index, m.actual, m.expected);
  }
  absl::StrAppend(&s, "; ", v.method);
  return s;
}

}  // namespace gpubench
