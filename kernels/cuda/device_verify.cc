#include "kernels/cuda/device_verify.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/verify_kernels.h"
#include "kernels/reference.h"

namespace gpubench::cuda {
namespace {

struct ScratchFree {
  void operator()(void* p) const { cudaFree(p); }
};

// One scratch allocation, carved in 256-byte aligned pieces.
class Scratch {
 public:
  size_t Reserve(size_t bytes) {
    const size_t at = size_;
    size_ += (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
    return at;
  }
  absl::Status Allocate() {
    void* p = nullptr;
    CUDA_RETURN_IF_ERROR(cudaMalloc(&p, size_));
    memory_.reset(p);
    return absl::OkStatus();
  }
  template <typename T>
  T* at(size_t offset) const {
    return reinterpret_cast<T*>(static_cast<unsigned char*>(memory_.get()) + offset);
  }

 private:
  size_t size_ = 0;
  std::unique_ptr<void, ScratchFree> memory_;
};

DeviceCheckCounters FreshCounters() {
  DeviceCheckCounters c;
  std::memset(&c, 0, sizeof(c));
  c.first_index = ~0ull;
  return c;
}

double DoubleOfBits(unsigned long long bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

}  // namespace

bool CanVerifyOnDevice(const KernelVariant& variant) { return VerifiableOnDevice(variant); }

absl::StatusOr<DeviceVerifyReport> VerifyOnDevice(const KernelVariant& variant,
                                                  const KernelBuffers& buffers,
                                                  const HostData& data,
                                                  const SampleIndices& samples, void* stream) {
  if (!CanVerifyOnDevice(variant)) {
    return absl::FailedPreconditionError(
        absl::StrCat(variant.name, " cannot be verified on the device"));
  }
  const KernelFamily& family = *variant.family;
  const DeviceCheckFn check = DeviceCheckOf(variant);
  const Tolerance tol = ToleranceOf(variant, data.shape);
  auto* s = static_cast<cudaStream_t>(stream);
  const size_t count = family.buffers.size();

  DeviceCheckArgs base;
  base.dtype = variant.dtype;
  base.seed = data.seed;
  for (size_t b = 0; b < count; ++b) base.streams[b] = family.buffers[b].seed_stream;
  base.rtol = tol.rtol;
  base.atol = tol.atol;
  base.stream = stream;

  // The scratch: counters, sample indices and gathered elements, chunk hashes per buffer.
  Scratch scratch;
  std::vector<size_t> counters_at(count), indices_at(count), gathered_at(count), chunks_at(count);
  std::vector<int64_t> chunks(count, 0), bytes(count, 0);
  for (size_t b = 0; b < count; ++b) {
    if (!IsVerified(family.buffers[b])) continue;
    const size_t sampled = b < samples.size() ? samples[b].size() : 0;
    const int size = DTypeSize(BufferDType(family.buffers[b], variant.dtype));
    bytes[b] = buffers.elements[b] * size;
    chunks[b] = (bytes[b] + kOutputHashChunkBytes - 1) / kOutputHashChunkBytes;
    counters_at[b] = scratch.Reserve(sizeof(DeviceCheckCounters));
    indices_at[b] = scratch.Reserve(sampled * sizeof(int64_t));
    gathered_at[b] = scratch.Reserve(sampled * static_cast<size_t>(size));
    chunks_at[b] = scratch.Reserve(static_cast<size_t>(chunks[b]) * sizeof(uint64_t));
  }
  RETURN_IF_ERROR(scratch.Allocate());

  DeviceVerifyReport report;
  report.sampled.resize(count);
  report.chunk_hashes.resize(count);
  report.hashed_bytes.assign(count, 0);
  std::vector<DeviceCheckCounters> counters(count, FreshCounters());
  for (size_t b = 0; b < count; ++b) {
    if (!IsVerified(family.buffers[b])) continue;
    const BufferSpec& spec = family.buffers[b];
    const DType out_dtype = BufferDType(spec, variant.dtype);
    auto* c = scratch.at<DeviceCheckCounters>(counters_at[b]);
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(c, &counters[b], sizeof(DeviceCheckCounters), cudaMemcpyHostToDevice, s));
    DeviceCheckArgs args = base;
    args.mode = DeviceCheckMode::kCount;
    args.buffer = static_cast<int>(b);
    args.out = buffers.data[b];
    args.n = buffers.elements[b];
    args.out_dtype = out_dtype;
    args.counters = c;
    CUDA_RETURN_IF_ERROR(check(args));
    const size_t sampled = b < samples.size() ? samples[b].size() : 0;
    if (sampled > 0) {
      for (int64_t i : samples[b]) {
        if (i < 0 || i >= buffers.elements[b]) {
          return absl::InvalidArgumentError(absl::StrCat("sample index ", i, " outside buffer ",
                                                         spec.name, " of ", buffers.elements[b]));
        }
      }
      auto* indices = scratch.at<int64_t>(indices_at[b]);
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(indices, samples[b].data(), sampled * sizeof(int64_t),
                                           cudaMemcpyHostToDevice, s));
      CUDA_RETURN_IF_ERROR(LaunchGather(buffers.data[b], DTypeSize(out_dtype), indices,
                                        static_cast<int>(sampled),
                                        scratch.at<void>(gathered_at[b]), stream));
      report.sampled[b].resize(sampled * static_cast<size_t>(DTypeSize(out_dtype)));
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(report.sampled[b].data(),
                                           scratch.at<void>(gathered_at[b]),
                                           report.sampled[b].size(), cudaMemcpyDeviceToHost, s));
    }
    auto* hashes = scratch.at<uint64_t>(chunks_at[b]);
    CUDA_RETURN_IF_ERROR(LaunchChunkHashes(buffers.data[b], bytes[b], hashes, stream));
    report.chunk_hashes[b].resize(static_cast<size_t>(chunks[b]));
    report.hashed_bytes[b] = bytes[b];
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(report.chunk_hashes[b].data(), hashes,
                                         report.chunk_hashes[b].size() * sizeof(uint64_t),
                                         cudaMemcpyDeviceToHost, s));
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(&counters[b], c, sizeof(DeviceCheckCounters), cudaMemcpyDeviceToHost, s));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));

  for (size_t b = 0; b < count; ++b) {
    if (!IsVerified(family.buffers[b])) continue;
    const DeviceCheckCounters& c = counters[b];
    report.checked += buffers.elements[b];
    report.mismatches += static_cast<int64_t>(c.mismatches);
    report.max_abs_error = std::max(report.max_abs_error, DoubleOfBits(c.max_abs_error_bits));
    report.max_rel_error = std::max(report.max_rel_error, DoubleOfBits(c.max_rel_error_bits));
  }

  // The lowest-index mismatches, in buffer order: the count pass found each buffer's first; each
  // further one is the smallest above the last (one more pass, only for a failing run).
  for (size_t b = 0; b < count; ++b) {
    const int want = kMaxReportedMismatches - static_cast<int>(report.first_mismatches.size());
    if (!IsVerified(family.buffers[b]) || counters[b].mismatches == 0 || want <= 0) continue;
    const int found = static_cast<int>(std::min<unsigned long long>(want, counters[b].mismatches));
    auto* c = scratch.at<DeviceCheckCounters>(counters_at[b]);
    DeviceCheckArgs args = base;
    args.buffer = static_cast<int>(b);
    args.out = buffers.data[b];
    args.n = buffers.elements[b];
    args.out_dtype = BufferDType(family.buffers[b], variant.dtype);
    args.counters = c;
    DeviceCheckCounters host = counters[b];
    host.at[0] = static_cast<long long>(host.first_index);
    int have = 1;
    for (; have < found; ++have) {
      const unsigned long long none = ~0ull;
      CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(&c->first_index, &none, sizeof(none), cudaMemcpyHostToDevice, s));
      args.mode = DeviceCheckMode::kFindAfter;
      args.after = host.at[have - 1];
      CUDA_RETURN_IF_ERROR(check(args));
      unsigned long long next = ~0ull;
      CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(&next, &c->first_index, sizeof(next), cudaMemcpyDeviceToHost, s));
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
      if (next == ~0ull) break;  // fewer than counted: the buffer changed under us
      host.at[have] = static_cast<long long>(next);
    }
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(c->at, host.at, sizeof(host.at), cudaMemcpyHostToDevice, s));
    args.mode = DeviceCheckMode::kEvaluate;
    args.evaluate_count = have;
    CUDA_RETURN_IF_ERROR(check(args));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&host, c, sizeof(host), cudaMemcpyDeviceToHost, s));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    for (int k = 0; k < have; ++k) {
      report.first_mismatches.push_back({.buffer = static_cast<int>(b),
                                         .index = host.at[k],
                                         .expected = host.expected[k],
                                         .actual = host.actual[k]});
    }
  }
  return report;
}

absl::StatusOr<int64_t> CountVerifiedDifferences(const KernelVariant& variant,
                                                 const KernelBuffers& a, const KernelBuffers& b,
                                                 void* stream) {
  auto* s = static_cast<cudaStream_t>(stream);
  Scratch scratch;
  const size_t at = scratch.Reserve(sizeof(unsigned long long));
  RETURN_IF_ERROR(scratch.Allocate());
  auto* count = scratch.at<unsigned long long>(at);
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(count, 0, sizeof(*count), s));
  const KernelFamily& family = *variant.family;
  for (size_t i = 0; i < family.buffers.size(); ++i) {
    if (!IsVerified(family.buffers[i])) continue;
    const int64_t bytes = a.elements[i] * DTypeSize(BufferDType(family.buffers[i], variant.dtype));
    CUDA_RETURN_IF_ERROR(LaunchCountDifferences(a.data[i], b.data[i], bytes, count, stream));
  }
  unsigned long long host = 0;
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&host, count, sizeof(host), cudaMemcpyDeviceToHost, s));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  return static_cast<int64_t>(host);
}

}  // namespace gpubench::cuda
