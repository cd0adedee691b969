#include "kernels/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <openssl/sha.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "absl/strings/str_format.h"
#include "common/parallel.h"
#include "kernels/host_info.h"
#include "kernels/run_buffers.h"

namespace gpubench {
namespace {

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

class CpuSession final : public Session {
 public:
  CpuSession(const KernelVariant& variant, const LaunchGeometry& geometry, const HostData& data,
             ParallelPool* pool, int64_t flush_bytes, double min_launch_seconds)
      : variant_(variant),
        geometry_(geometry),
        data_(data),
        pool_(pool),
        min_launch_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(min_launch_seconds))),
        flush_(flush_bytes) {}

  ~CpuSession() override { state_.reset(); }  // the setup's state before the buffers

  // Every placement is host memory here: the simulated devices share the host.
  absl::Status Allocate(int device) {
    const KernelFamily& family = *variant_.family;
    buffers_ = BuffersOfRun(data_, device);
    memory_.resize(family.buffers.size());
    for (size_t i = 0; i < family.buffers.size(); ++i) {
      const int64_t bytes = BufferBytes(variant_, data_.shape, static_cast<int>(i));
      memory_[i] = AlignedBuffer(static_cast<size_t>(bytes));
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
    if (!flush_.ok()) return absl::ResourceExhaustedError("cannot allocate the cache flush buffer");
    ResetOutputs();
    if (variant_.cpu_setup != nullptr) {
      variant_.cpu_setup(buffers_, geometry_, &state_, &launch_report_);
      buffers_.state = state_.get();
    }
    return absl::OkStatus();
  }

  const LaunchGeometry& geometry() const override { return geometry_; }

  absl::Status Warmup(int launches) override {
    for (int i = 0; i < launches; ++i) Launch();
    return absl::OkStatus();
  }

  absl::StatusOr<double> ColdSample() override {
    FlushCaches();
    const auto start = Clock::now();
    Launch();
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  absl::StatusOr<double> HotSample(int batch) override {
    const auto start = Clock::now();
    for (int i = 0; i < batch; ++i) Launch();
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  std::optional<double> CurrentClockHz() override { return std::nullopt; }

  absl::Status RunOnceAndRead(BufferContents* out) override {
    ResetOutputs();
    Launch();
    out->assign(memory_.size(), {});
    for (size_t i = 0; i < memory_.size(); ++i) {
      if (!IsVerified(variant_.family->buffers[i])) continue;
      (*out)[i].assign(memory_[i].data(), memory_[i].data() + memory_[i].size());
    }
    return absl::OkStatus();
  }

  std::string LaunchReport() const override { return launch_report_; }

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
  void Launch() {
    const auto start = Clock::now();
    const int64_t threads = geometry_.grid_size * geometry_.block_size;
    // Chunks of whole blocks keep each worker's span contiguous and large.
    pool_->For(threads, variant_.family->cpu_chunk_threads, [this](int64_t begin, int64_t end) {
      variant_.cpu(buffers_, geometry_, begin, end);
    });
    if (min_launch_ > Clock::duration::zero()) std::this_thread::sleep_until(start + min_launch_);
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

  // Writes a buffer larger than the last-level cache, evicting the run's buffers.
  void FlushCaches() {
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
  AlignedBuffer flush_;
  unsigned char flush_value_ = 0;
  std::vector<AlignedBuffer> memory_;  // one per buffer of the family
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
    }
  }

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string SampleMethod(bool cold, int hot_batch_size,
                           std::optional<KernelDurationSource>) const override {
    return cold ? "cold: caches flushed by writing 2x the last-level cache, one launch timed with "
                  "a steady clock per sample"
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

  absl::StatusOr<std::unique_ptr<Session>> Open(int device, const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) override {
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
    const HostInfo host = ReadHostInfo();
    // Twice the last-level cache, at least 8 MiB, evicts the run's data between cold samples.
    const int64_t llc = std::max({host.l3_cache_bytes, host.l2_cache_bytes, int64_t{4} << 20});
    auto session =
        std::make_unique<CpuSession>(variant, geometry, data, pools_[device].get(), 2 * llc,
                                     options_.min_launch_seconds);
    if (absl::Status s = session->Allocate(device); !s.ok()) return s;
    return session;
  }

 private:
  const CpuBackendOptions options_;
  std::vector<std::unique_ptr<ParallelPool>> pools_;
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

}  // namespace gpubench
