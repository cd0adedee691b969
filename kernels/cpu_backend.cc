#include "kernels/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <openssl/sha.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "absl/strings/str_format.h"
#include "common/parallel.h"
#include "kernels/buffer_cache.h"
#include "kernels/host_info.h"
#include "kernels/run_buffers.h"

namespace gpubench {
namespace {

// RaiseCpuStickyError's record: what raised it, or null. Never cleared: a poisoned CUDA context is
// not either (the worker exits to drop it).
std::atomic<const char*> g_sticky_error{nullptr};

// OK, or the device-lost status every launch returns once a sticky error was raised.
absl::Status StickyError() {
  const char* what = g_sticky_error.load();
  if (what == nullptr) return absl::OkStatus();
  absl::Status lost = absl::InternalError(absl::StrCat(
      "a sticky device error (the CPU backend's form of a CUDA trap) raised by ", what,
      "; the device is unusable in this process"));
  lost.SetPayload(kDeviceLostPayload, absl::Cord(what));
  return lost;
}

using Clock = std::chrono::steady_clock;

// Cache-line aligned host buffer, as device allocations are at least 256-byte aligned.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes)
      : bytes_(bytes),
        data_(static_cast<std::byte*>(std::aligned_alloc(256, std::max<size_t>(256, (bytes + 255) / 256 * 256)))) {}
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : bytes_(std::exchange(other.bytes_, 0)), data_(std::exchange(other.data_, nullptr)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    std::swap(bytes_, other.bytes_);
    std::swap(data_, other.data_);
    return *this;
  }
  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }
  bool ok() const { return data_ != nullptr; }

 private:
  size_t bytes_ = 0;
  std::byte* data_ = nullptr;
};

// Cache lines are at most this long on the hosts we run on (x86-64, Arm Neoverse); a smaller
// step would only flush some lines twice.
constexpr size_t kFlushLineBytes = 64;

#if defined(__x86_64__) || defined(__i386__)
bool HasClflushopt() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ebx & (1u << 23)) != 0;
}
__attribute__((target("clflushopt"))) void EvictLinesOpt(const std::byte* p, size_t bytes) {
  for (size_t i = 0; i < bytes; i += kFlushLineBytes) __builtin_ia32_clflushopt(p + i);
}
void EvictLinesPlain(const std::byte* p, size_t bytes) {
  for (size_t i = 0; i < bytes; i += kFlushLineBytes) __builtin_ia32_clflush(p + i);
}
#endif

// Whether EvictLines can evict lines on this host (else cold samples flush by writing 2x LLC).
bool CanEvictLines() {
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

// Writes back (if dirty) and invalidates every cache line of [p, p + bytes) in every cache of the
// coherence domain, every core's included (x86 clflush/clflushopt, Arm dc civac). The caller
// fences after the last call.
void EvictLines(const std::byte* p, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
  static const bool opt = HasClflushopt();
  opt ? EvictLinesOpt(p, bytes) : EvictLinesPlain(p, bytes);
#elif defined(__aarch64__)
  for (size_t i = 0; i < bytes; i += kFlushLineBytes) {
    asm volatile("dc civac, %0" : : "r"(p + i) : "memory");
  }
#else
  (void)p;
  (void)bytes;
#endif
}

// Orders the evictions before the timed launch: every write-back has completed.
void EvictFence() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_mfence();
#elif defined(__aarch64__)
  asm volatile("dsb ish" : : : "memory");
#endif
}

}  // namespace

CpuColdFlush ChooseCpuColdFlush(int64_t working_set_bytes, int64_t llc_bytes, bool has_state) {
  if (has_state || !CanEvictLines() || working_set_bytes > 2 * llc_bytes) {
    return CpuColdFlush::kWriteTwiceLlc;
  }
  return CpuColdFlush::kEvictBuffers;
}

namespace {

// One run's buffers, one per buffer of the family; kept between the runs of a sweep by the
// device's cache (HostData::reuse_chain).
using CpuBuffers = std::vector<AlignedBuffer>;
using CpuBufferCache = BufferCache<CpuBuffers>;

class CpuSession final : public Session {
 public:
  CpuSession(const KernelVariant& variant, const LaunchGeometry& geometry, const HostData& data,
             ParallelPool* pool, int64_t llc_bytes, double min_launch_seconds,
             CpuBufferCache* cache)
      : variant_(variant),
        geometry_(geometry),
        data_(data),
        pool_(pool),
        min_launch_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(min_launch_seconds))),
        llc_bytes_(llc_bytes),
        cache_(cache) {}

  ~CpuSession() override {
    state_.reset();  // the setup's state before the buffers
    if (keep_) cache_->Put(data_.reuse_chain, std::move(key_), std::move(memory_));
  }

  // Every placement is host memory here: the simulated devices share the host. Buffers the
  // device's cache kept for this run's chain are filled exactly as new ones: inputs copied from
  // this run's host data, in-outs refilled and outputs poisoned (ResetOutputs).
  absl::Status Allocate(int device) {
    const KernelFamily& family = *variant_.family;
    buffers_ = BuffersOfRun(data_, device);
    key_ = BufferKeyOf(variant_, data_.shape, device, data_.peer_device, 0, 1);
    std::optional<CpuBuffers> kept = cache_->Take(data_.reuse_chain, key_);
    reused_ = kept.has_value();
    if (reused_) {
      memory_ = *std::move(kept);
    } else {
      memory_.resize(family.buffers.size());
    }
    for (size_t i = 0; i < family.buffers.size(); ++i) {
      const int64_t bytes = BufferBytes(variant_, data_.shape, static_cast<int>(i));
      if (!reused_) memory_[i] = AlignedBuffer(static_cast<size_t>(bytes));
      if (!memory_[i].ok()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "cannot allocate ", bytes, " bytes on the host for buffer ", family.buffers[i].name));
      }
      if (family.buffers[i].role == BufferRole::kInput) {
        std::memcpy(memory_[i].data(), data_.buffers[i].data(), static_cast<size_t>(bytes));
      }
      buffers_.data[i] = memory_[i].data();
      buffers_.elements[i] = BufferElements(family.buffers[i], data_.shape);
    }
    ResetOutputs();
    if (variant_.cpu_setup != nullptr) {
      variant_.cpu_setup(buffers_, geometry_, &state_, &launch_report_);
      buffers_.state = state_.get();
    }
    int64_t working_set = 0;
    for (const AlignedBuffer& b : memory_) working_set += static_cast<int64_t>(b.size());
    flush_mode_ = ChooseCpuColdFlush(working_set, llc_bytes_, state_ != nullptr);
    if (flush_mode_ == CpuColdFlush::kWriteTwiceLlc) {
      flush_ = AlignedBuffer(static_cast<size_t>(2 * llc_bytes_));
      if (!flush_.ok()) {
        return absl::ResourceExhaustedError("cannot allocate the cache flush buffer");
      }
    }
    return absl::OkStatus();
  }

  const LaunchGeometry& geometry() const override { return geometry_; }

  absl::Status Warmup(int launches) override {
    for (int i = 0; i < launches; ++i) RETURN_IF_ERROR(Launch());
    return absl::OkStatus();
  }

  absl::StatusOr<SampleRecord> ColdSample() override {
    FlushCaches();
    const auto start = Clock::now();
    RETURN_IF_ERROR(Launch());
    return SampleRecord::Of(std::chrono::duration<double>(Clock::now() - start).count());
  }

  absl::StatusOr<SampleRecord> HotSample(int batch) override {
    const auto start = Clock::now();
    for (int i = 0; i < batch; ++i) RETURN_IF_ERROR(Launch());
    return SampleRecord::Of(std::chrono::duration<double>(Clock::now() - start).count());
  }

  absl::Status RunOnceAndRead(BufferContents* out) override {
    ResetOutputs();
    RETURN_IF_ERROR(Launch());
    out->assign(memory_.size(), {});
    for (size_t i = 0; i < memory_.size(); ++i) {
      if (!IsVerified(variant_.family->buffers[i])) continue;
      (*out)[i].assign(memory_[i].data(), memory_[i].data() + memory_[i].size());
    }
    return absl::OkStatus();
  }

  std::string LaunchReport() const override { return launch_report_; }

  bool BuffersReused() const override { return reused_; }
  bool KeepBuffers() override {
    keep_ = data_.reuse_chain != 0;
    return keep_;
  }

  AchievedCounters ProfileCounters() override {
    AchievedCounters c;
    c.unavailable_reason = "not applicable: the CPU backend has no hardware warp counters";
    return c;
  }

  KernelResources Resources() const override {
    KernelResources r;
    r.unavailable_reason = "not applicable: the CPU backend has no SMs, registers or occupancy";
    return r;
  }

 private:
  absl::Status Launch() {
    RETURN_IF_ERROR(StickyError());  // as every call in a poisoned CUDA context fails
    const auto start = Clock::now();
    const int64_t threads = geometry_.grid_size * geometry_.block_size;
    // Chunks of whole blocks keep each worker's span contiguous and large.
    pool_->For(threads, variant_.family->cpu_chunk_threads, [this](int64_t begin, int64_t end) {
      variant_.cpu(buffers_, geometry_, begin, end);
    });
    if (min_launch_ > Clock::duration::zero()) std::this_thread::sleep_until(start + min_launch_);
    return StickyError();
  }

  // In-out buffers start from their generated contents (SAXPY's y); outputs from all-ones bytes
  // (NaN in f32, f16 and bf16), so an element the kernel never writes fails verification.
  void ResetOutputs() {
    for (size_t i = 0; i < memory_.size(); ++i) {
      const BufferRole role = variant_.family->buffers[i].role;
      if (role == BufferRole::kInOut) {
        std::memcpy(memory_[i].data(), data_.buffers[i].data(), memory_[i].size());
      } else if (role == BufferRole::kOutput) {
        std::memset(memory_[i].data(), 0xff, memory_[i].size());
      }
    }
  }

  // Cold: none of the run's data may be in any cache when the timed launch starts. Where the
  // launch touches only the run's buffers (no setup state) and they fit in 2x LLC, evicting their
  // lines (write-back included, in every core's caches) removes exactly what the previous launch
  // could have left, as the GPU's flush leaves an L2 of clean lines holding none of the run's data;
  // code, stacks and the pool's own state stay cached on both. Cost: one instruction per line of
  // the buffers instead of writing 2x LLC. Otherwise (state of unknown extent, buffers larger than
  // 2x LLC, no eviction instruction) a write pass over 2x LLC, which evicts everything.
  void FlushCaches() {
    if (flush_mode_ == CpuColdFlush::kEvictBuffers) {
      for (const AlignedBuffer& b : memory_) EvictLines(b.data(), b.size());
      EvictFence();
      return;
    }
    const int64_t bytes = static_cast<int64_t>(flush_.size());
    ++flush_value_;
    pool_->For(bytes, 1 << 20, [this](int64_t begin, int64_t end) {
      std::memset(flush_.data() + begin, flush_value_, end - begin);
    });
  }

  const KernelVariant& variant_;
  const LaunchGeometry geometry_;
  const HostData& data_;
  ParallelPool* pool_;
  const Clock::duration min_launch_;
  const int64_t llc_bytes_;
  CpuColdFlush flush_mode_ = CpuColdFlush::kWriteTwiceLlc;
  AlignedBuffer flush_;  // kWriteTwiceLlc only
  unsigned char flush_value_ = 0;
  CpuBufferCache* const cache_;  // the device's
  CpuBuffers memory_;            // one per buffer of the family
  BufferKey key_;
  bool reused_ = false;  // memory_ came from cache_
  bool keep_ = false;    // hand memory_ to cache_ when destroyed
  KernelBuffers buffers_;
  std::unique_ptr<LaunchState> state_;
  std::string launch_report_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options) : options_(options) {
    const int devices = std::max(1, options.devices);
    for (int i = 0; i < devices; ++i) {
      pools_.push_back(std::make_unique<ParallelPool>(options.threads_per_device));
      caches_.push_back(std::make_unique<CpuBufferCache>());
    }
  }

  BackendKind kind() const override { return BackendKind::kCpu; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities can;
    can.device_is_host = true;
    can.host_clock = true;
    return can;
  }
  std::string SampleMethod(bool cold, int hot_batch_size, TimerStrategy,
                           bool /*blocking: no blocking kernel here*/) const override {
    return cold ? "cold: the run's buffers evicted from every cache level (cache-line flush, or "
                  "a write over 2x the last-level cache where they exceed it), one launch timed "
                  "with a steady clock per sample"
                : absl::StrFormat("hot: %d back-to-back launches timed with a steady clock per "
                                  "sample",
                                  hot_batch_size);
  }
  int device_count() const override { return static_cast<int>(pools_.size()); }

  absl::StatusOr<DeviceInfo> Describe(int device) const override {
    if (device < 0 || device >= device_count()) {
      return absl::InvalidArgumentError(absl::StrCat("device index ", device,
                                                     " out of range: the cpu backend has ",
                                                     device_count(), " device(s)"));
    }
    const HostInfo host = ReadHostInfo();
    DeviceInfo info;
    info.index = device;
    info.backend = std::string(name());
    info.name = !options_.device_name.empty() ? options_.device_name
                : host.cpu_model.empty()        ? "host CPU"
                                                : host.cpu_model;
    info.uuid = options_.uuid_seed.empty() ? absl::StrCat("cpu-", device)
                                           : SimulatedDeviceUuid(options_.uuid_seed, device);
    info.multiprocessor_count = pools_[device]->size();
    info.max_threads_per_block = 1024;  // the launch geometry limit the CPU emulation accepts
    info.warp_size = 1;
    info.l1_cache_bytes = host.l1d_cache_bytes;
    info.l2_cache_bytes = host.l2_cache_bytes;
    info.l3_cache_bytes = host.l3_cache_bytes;
    info.total_memory_bytes = host.total_memory_bytes;
    info.free_memory_bytes = host.available_memory_bytes;
    info.driver_version = absl::StrCat("linux ", host.kernel_release);
    info.runtime_version = "gpubench cpu backend";
    return info;
  }

  absl::Status CheckLaunchSize(const KernelVariant& variant, const RunShape& shape) const override {
    if (const int64_t operations = OperationsOf(variant, shape);
        operations > options_.max_operations_per_launch) {
      return absl::ResourceExhaustedError(absl::StrCat(
          variant.name, " does ", operations, " ", variant.family->operation_unit,
          " per launch at this size; the cpu backend (an emulation for tests) runs at most ",
          options_.max_operations_per_launch, " per launch: use a GPU or a smaller size"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Session>> Open(const DeviceInfo& info,
                                                const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) override {
    const int device = info.index;
    if (device < 0 || device >= device_count()) {
      return absl::InvalidArgumentError(absl::StrCat("device index ", device, " out of range"));
    }
    if (NeedsPeerDevice(*variant.family) &&
        (data.peer_device < 0 || data.peer_device >= device_count() ||
         data.peer_device == device)) {
      return absl::FailedPreconditionError(absl::StrCat(
          variant.name, " needs a second (peer) device; the cpu backend has ", device_count(),
          " device(s) (--cpu_devices) and the peer is ", data.peer_device));
    }
    RETURN_IF_ERROR(CheckLaunchSize(variant, data.shape));
    // The last-level cache, at least 4 MiB: sizes the cold flush (ChooseCpuColdFlush).
    const int64_t llc = std::max({info.l3_cache_bytes, info.l2_cache_bytes, int64_t{4} << 20});
    auto session = std::make_unique<CpuSession>(variant, geometry, data, pools_[device].get(), llc,
                                                options_.min_launch_seconds, caches_[device].get());
    if (absl::Status s = session->Allocate(device); !s.ok()) return s;
    return session;
  }

  void ReleaseCachedBuffers(int device) override {
    if (device >= 0 && device < device_count()) caches_[device]->Release();
  }

 private:
  const CpuBackendOptions options_;
  std::vector<std::unique_ptr<ParallelPool>> pools_;
  std::vector<std::unique_ptr<CpuBufferCache>> caches_;  // per device
};

}  // namespace

std::string SimulatedDeviceUuid(const std::string& seed, int device) {
  // RFC 4122 section 4.3: SHA-1 over a namespace UUID and the name, version and variant bits set.
  // The namespace is gpubench's own (a fixed random UUID), so these never collide with others.
  static constexpr unsigned char kNamespace[16] = {0x6f, 0x1c, 0x2a, 0x55, 0x0b, 0x7e, 0x4d, 0x8a,
                                                   0x9c, 0x31, 0xe2, 0x5b, 0x44, 0x90, 0xaf, 0x17};
  const std::string name = absl::StrCat(seed, "/", device);
  std::string input(reinterpret_cast<const char*>(kNamespace), sizeof(kNamespace));
  input += name;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  digest[6] = (digest[6] & 0x0f) | 0x50;  // version 5
  digest[8] = (digest[8] & 0x3f) | 0x80;  // RFC 4122 variant
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    absl::StrAppendFormat(&hex, "%02x", digest[i]);
  }
  return absl::StrCat("CPU-", hex);
}

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

void RaiseCpuStickyError(const char* what) {
  const char* none = nullptr;
  g_sticky_error.compare_exchange_strong(none, what);
}

}  // namespace gpubench
