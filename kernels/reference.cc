#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/splitmix64.h"

namespace gpubench {
namespace {

int FirstVerifiedBuffer(const KernelFamily& family) {
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    if (IsVerified(family.buffers[i])) return static_cast<int>(i);
  }
  return -1;
}

// The element checked at position j of `count` checks of an n-element buffer: every element, or
// `count` spread evenly over [0, n) with both ends included.
int64_t CheckedIndex(int64_t j, int64_t count, int64_t n) {
  if (count >= n || count < 2) return j;
  return static_cast<int64_t>(static_cast<double>(j) * static_cast<double>(n - 1) /
                              static_cast<double>(count - 1));
}

// Compares `count` checked elements of buffer `buffer` against the reference into `result`.
void VerifyBuffer(const KernelVariant& variant, const HostData& data, int buffer, const void* out,
                  int64_t n, int64_t count, const Tolerance& tol, ParallelPool* pool,
                  Verification* result) {
  const ReferenceFn reference = ReferenceOf(variant);
  const DType dtype = BufferDType(variant.family->buffers[buffer], variant.dtype);
  std::mutex mu;
  std::vector<MismatchedElement> found;  // each task's first few, merged below
  const std::string name(variant.family->buffers[buffer].name);
  pool->For(count, 1 << 16, [&](int64_t begin, int64_t end) {
    Verification local;
    for (int64_t j = begin; j < end; ++j) {
      const int64_t i = CheckedIndex(j, count, n);
      const double expected = reference(variant, data, buffer, i);
      const double actual = LoadAsDouble(dtype, out, i);
      const double abs_error = std::fabs(actual - expected);
      const double rel_error = abs_error / std::max(std::fabs(expected), 1e-30);
      const bool ok = abs_error <= tol.atol + tol.rtol * std::fabs(expected);  // NaN: false
      if (!ok) {
        if (local.mismatches == 0) {
          local.first_mismatch_index = i;
          local.first_mismatch_expected = expected;
          local.first_mismatch_actual = actual;
        }
        if (local.first_mismatches.size() < kMaxReportedMismatches) {
          local.first_mismatches.push_back(
              {.buffer = name, .index = i, .expected = expected, .actual = actual});
        }
        ++local.mismatches;
      }
      if (std::isnan(abs_error)) {
        local.max_abs_error = local.max_rel_error = std::numeric_limits<double>::infinity();
      } else {
        local.max_abs_error = std::max(local.max_abs_error, abs_error);
        local.max_rel_error = std::max(local.max_rel_error, rel_error);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    // The first mismatch in buffer order, then element order.
    if (local.mismatches > 0 &&
        (result->first_mismatch_buffer.empty() ||
         (result->first_mismatch_buffer == variant.family->buffers[buffer].name &&
          local.first_mismatch_index < result->first_mismatch_index))) {
      result->first_mismatch_buffer = std::string(variant.family->buffers[buffer].name);
      result->first_mismatch_index = local.first_mismatch_index;
      result->first_mismatch_expected = local.first_mismatch_expected;
      result->first_mismatch_actual = local.first_mismatch_actual;
    }
    result->mismatches += local.mismatches;
    result->max_abs_error = std::max(result->max_abs_error, local.max_abs_error);
    result->max_rel_error = std::max(result->max_rel_error, local.max_rel_error);
    found.insert(found.end(), local.first_mismatches.begin(), local.first_mismatches.end());
  });
  // Earlier buffers' mismatches come first; this buffer's in index order.
  std::sort(found.begin(), found.end(),
            [](const MismatchedElement& x, const MismatchedElement& y) { return x.index < y.index; });
  for (MismatchedElement& m : found) {
    if (result->first_mismatches.size() >= kMaxReportedMismatches) break;
    result->first_mismatches.push_back(std::move(m));
  }
}

}  // namespace

HostData GenerateHostData(const KernelVariant& variant, const RunShape& shape, uint64_t seed,
                          ParallelPool* pool, bool skip_device_generated) {
  const KernelFamily& family = *variant.family;
  HostData data;
  data.family = &family;
  data.dtype = variant.dtype;
  data.shape = shape;
  data.n = shape.elements;
  data.seed = seed;
  data.buffers.resize(family.buffers.size());
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    const BufferSpec& b = family.buffers[i];
    if (b.role == BufferRole::kOutput) continue;
    if (skip_device_generated && GeneratedOnDevice(b)) continue;
    std::vector<std::byte>& bytes = data.buffers[i];
    bytes.resize(static_cast<size_t>(BufferBytes(variant, shape, static_cast<int>(i))));
    const GenerateContext context{.seed = seed,
                                  .stream = b.seed_stream,
                                  .dtype = BufferDType(b, variant.dtype),
                                  .shape = shape,
                                  .pool = pool};
    (b.generate != nullptr ? b.generate : &GenerateUniform)(context, bytes);
  }
  return data;
}

void FillSkippedHostBuffers(const KernelVariant& variant, HostData* data, ParallelPool* pool) {
  const KernelFamily& family = *variant.family;
  for (size_t i = 0; i < family.buffers.size() && i < data->buffers.size(); ++i) {
    const BufferSpec& b = family.buffers[i];
    if (b.role == BufferRole::kOutput || !data->buffers[i].empty()) continue;
    std::vector<std::byte>& bytes = data->buffers[i];
    bytes.resize(static_cast<size_t>(BufferBytes(variant, data->shape, static_cast<int>(i))));
    const GenerateContext context{.seed = data->seed,
                                  .stream = b.seed_stream,
                                  .dtype = BufferDType(b, variant.dtype),
                                  .shape = data->shape,
                                  .pool = pool};
    (b.generate != nullptr ? b.generate : &GenerateUniform)(context, bytes);
  }
}

HostData GenerateHostData(const KernelVariant& variant, int64_t n, uint64_t seed,
                          ParallelPool* pool) {
  return GenerateHostData(variant, ShapeOfElements(*variant.family, n), seed, pool);
}

double ReferenceValue(const KernelVariant& variant, const HostData& data, int buffer, int64_t i) {
  return ReferenceOf(variant)(variant, data, buffer, i);
}

double ReferenceValue(const KernelVariant& variant, const HostData& data, int64_t i) {
  return ReferenceValue(variant, data, FirstVerifiedBuffer(*variant.family), i);
}

Verification Verify(const KernelVariant& variant, const HostData& data, const BufferContents& out,
                    ParallelPool* pool) {
  const KernelFamily& family = *variant.family;
  const Tolerance tol = ToleranceOf(variant, data.shape);
  Verification result;
  result.rtol = tol.rtol;
  result.atol = tol.atol;
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    if (!IsVerified(family.buffers[i])) continue;
    const int buffer = static_cast<int>(i);
    const int64_t n = BufferElements(family.buffers[i], data.shape);
    const int64_t count =
        family.verify_samples > 0 ? std::min(family.verify_samples, n) : n;
    result.sampled = result.sampled || count < n;
    result.checked += count;
    if (i >= out.size() || static_cast<int64_t>(out[i].size()) <
                               BufferBytes(variant, data.shape, buffer)) {
      // Nothing (or too little) was read back: every checked element counts as a mismatch.
      result.mismatches += count;
      if (result.first_mismatch_buffer.empty()) {
        result.first_mismatch_buffer = std::string(family.buffers[i].name);
        result.first_mismatch_index = 0;
        result.first_mismatch_expected = ReferenceValue(variant, data, buffer, 0);
        result.first_mismatch_actual = std::numeric_limits<double>::quiet_NaN();
      }
      if (result.first_mismatches.size() < kMaxReportedMismatches) {
        result.first_mismatches.push_back({.buffer = std::string(family.buffers[i].name),
                                           .index = 0,
                                           .expected = ReferenceValue(variant, data, buffer, 0),
                                           .actual = std::numeric_limits<double>::quiet_NaN()});
      }
      continue;
    }
    VerifyBuffer(variant, data, buffer, out[i].data(), n, count, tol, pool, &result);
  }
  result.passed = result.mismatches == 0;
  result.where = VerifiedWhere::kHost;
  result.host_checked = result.checked;
  result.method = VerificationMethod(result, TotalVerifiedElements(variant, data.shape));
  return result;
}

int64_t TotalVerifiedElements(const KernelVariant& variant, const RunShape& shape) {
  int64_t total = 0;
  for (const BufferSpec& b : variant.family->buffers) {
    if (IsVerified(b)) total += BufferElements(b, shape);
  }
  return total;
}

std::string VerificationMethod(const Verification& v, int64_t total_elements) {
  if (v.where == VerifiedWhere::kDevice) {
    return absl::StrCat("all ", v.device_checked, " elements on the device + ", v.host_checked,
                        " sampled on the host");
  }
  if (v.sampled) {
    return absl::StrCat("a sample of ", v.host_checked, " of ", total_elements,
                        " elements on the host");
  }
  return absl::StrCat("all ", v.host_checked, " elements on the host");
}

Verification Verify(const KernelVariant& variant, const HostData& data, const void* out,
                    ParallelPool* pool) {
  const int buffer = FirstVerifiedBuffer(*variant.family);
  BufferContents contents(variant.family->buffers.size());
  const auto* bytes = static_cast<const std::byte*>(out);
  contents[buffer].assign(bytes, bytes + BufferBytes(variant, data.shape, buffer));
  return Verify(variant, data, contents, pool);
}

std::vector<uint64_t> OutputChunkHashes(const std::byte* data, int64_t bytes, ParallelPool* pool) {
  constexpr int64_t kChunk = kOutputHashChunkBytes;
  const int64_t chunks = bytes > 0 ? (bytes + kChunk - 1) / kChunk : 0;
  std::vector<uint64_t> chunk_hash(static_cast<size_t>(chunks));
  auto hash_chunks = [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t from = c * kChunk, to = std::min(bytes, from + kChunk);
      uint64_t h = SplitMix64Hash(static_cast<uint64_t>(c));
      int64_t at = from;
      for (; at + 8 <= to; at += 8) {
        uint64_t word;
        std::memcpy(&word, data + at, 8);
        h = SplitMix64Mix(h ^ word) + kSplitMix64Gamma;
      }
      uint64_t tail = 0;
      std::memcpy(&tail, data + at, static_cast<size_t>(to - at));
      chunk_hash[static_cast<size_t>(c)] = SplitMix64Mix(h ^ tail ^ static_cast<uint64_t>(to - at));
    }
  };
  if (pool != nullptr) {
    pool->For(chunks, 4, hash_chunks);
  } else {
    hash_chunks(0, chunks);
  }
  return chunk_hash;
}

uint64_t OutputHash(const KernelVariant& variant, const RunShape& shape, const BufferContents& out,
                    ParallelPool* pool) {
  const KernelFamily& family = *variant.family;
  std::vector<std::vector<uint64_t>> all_chunks(family.buffers.size());
  std::vector<int64_t> all_bytes(family.buffers.size(), 0);
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    if (!IsVerified(family.buffers[i])) continue;
    const int64_t want = BufferBytes(variant, shape, static_cast<int>(i));
    const int64_t bytes = i < out.size() ? std::min<int64_t>(want, out[i].size()) : 0;
    all_chunks[i] = OutputChunkHashes(bytes > 0 ? out[i].data() : nullptr, bytes, pool);
    all_bytes[i] = bytes;
  }
  return OutputHashFromChunks(variant, all_chunks, all_bytes);
}

uint64_t OutputHashFromChunks(const KernelVariant& variant,
                              const std::vector<std::vector<uint64_t>>& chunk_hashes,
                              const std::vector<int64_t>& hashed_bytes) {
  const KernelFamily& family = *variant.family;
  uint64_t hash = SplitMix64Hash(0x6770756265e5c4ULL);
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    if (!IsVerified(family.buffers[i])) continue;
    const int64_t bytes = i < hashed_bytes.size() ? hashed_bytes[i] : 0;
    // The buffer's index and length are part of the hash: a short read-back never matches.
    hash = SplitMix64Mix(hash ^ (i << 56) ^ static_cast<uint64_t>(bytes));
    if (i >= chunk_hashes.size()) continue;
    for (uint64_t h : chunk_hashes[i]) hash = SplitMix64Mix(hash ^ h) + kSplitMix64Gamma;
  }
  return hash;
}

}  // namespace gpubench
