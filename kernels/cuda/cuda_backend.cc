#include "kernels/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cupti_profiler.h"
#include "kernels/cuda/describe_device.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/device_verify.h"
#include "kernels/cuda/l2_flusher.h"
#include "kernels/cuda/launch_timer.h"
#include "kernels/timed_check.h"

namespace gpubench {
namespace {

// The stream a session times on (MeasurementOptions.stream): its own non-blocking stream, or the
// legacy / per-thread default stream, which exist to compare the launch-and-event overhead of each
// kind (what PyTorch launches on), not for production.
class SessionStream {
 public:
  SessionStream() = default;
  SessionStream(const SessionStream&) = delete;
  SessionStream& operator=(const SessionStream&) = delete;
  ~SessionStream() {
    if (owned_) cudaStreamDestroy(stream_);
  }
  absl::Status Create(StreamKind kind) {
    if (kind == StreamKind::kNonBlocking) {
      CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      owned_ = true;
    } else {
      stream_ = kind == StreamKind::kLegacy ? cudaStreamLegacy : cudaStreamPerThread;
    }
    ready_ = true;
    return absl::OkStatus();
  }
  cudaStream_t get() const { return stream_; }
  bool ready() const { return ready_; }  // the legacy stream's handle may be null-like

 private:
  cudaStream_t stream_ = nullptr;
  bool owned_ = false;
  bool ready_ = false;
};

// One prepared run: the run's buffers (cuda::RunBuffers), the L2 flusher, the launch timer and the
// variant's setup state, on the session's stream.
class CudaSession final : public Session {
 public:
  CudaSession(int device, const KernelVariant& variant, const LaunchGeometry& geometry,
              const HostData& data, const DeviceInfo& info, cuda::DeviceBufferCache* cache)
      : device_(device),
        variant_(variant),
        geometry_(geometry),
        data_(data),
        info_(info),
        cache_(cache),
        buffers_(device, variant, data) {}

  ~CudaSession() override {
    cudaSetDevice(device_);
    if (stream_.ready()) {
      if (timer_ != nullptr) timer_->Release();  // never leave a blocking kernel spinning
      cudaStreamSynchronize(stream_.get());
    }
    cuda::ResetPersistingL2Lines();  // no persisting (evict_last) lines outlive the run
    if (keep_) {
      launch_state_.reset();  // the setup's state, made for these buffers, goes first as ever
      cache_->Put(data_.reuse_chain, buffers_.key(), buffers_.TakeAllocations());
    }
  }

  absl::Status Init() {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    RETURN_IF_ERROR(stream_.Create(data_.stream));
    ASSIGN_OR_RETURN(timer_, cuda::LaunchTimer::Create(device_));
    // The previous run's allocations where it was this sweep chain's and had this run's key;
    // anything else the cache held is freed here, before this run allocates.
    RETURN_IF_ERROR(
        buffers_.Allocate(stream_.get(), cache_->Take(data_.reuse_chain, buffers_.key())));
    ASSIGN_OR_RETURN(flusher_, cuda::L2Flusher::Create(info_.l2_cache_bytes, data_.l2_flush,
                                                       variant_.l2_evict_last, stream_.get()));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_.get()));
    if (variant_.cuda_setup != nullptr) {
      const auto error = static_cast<cudaError_t>(variant_.cuda_setup(
          buffers_.launch_buffers(), geometry_, stream_.get(), &launch_state_, &launch_report_));
      CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
      if (error != cudaSuccess) {
        cudaGetLastError();  // a setup's error is not sticky unless the device says so below
        const std::string what =
            absl::StrCat("setup of ", variant_.name, " on device ", device_, ": ",
                         launch_report_.empty() ? cudaGetErrorString(error) : launch_report_);
        if (error == cudaErrorNotSupported) return absl::FailedPreconditionError(what);
        if (error == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(what);
        return CudaErrorStatus(error, absl::StrCat(what, " (", cudaGetErrorName(error), ")"));
      }
      buffers_.launch_buffers().state = launch_state_.get();
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_.get()));
    }
    if (data_.verify_timed_samples) {
      // The check needs fresh inputs made on the device and a device check: every family with a
      // user-kernel contract has both (tests/kernels/user_kernel_test.cc holds them to it).
      if (!CanVerifyOnDevice()) {
        return absl::FailedPreconditionError(absl::StrCat("timed_launch_verified: ", variant_.name,
                                                          " cannot be verified on the device"));
      }
      for (const BufferSpec& b : variant_.family->buffers) {
        if (b.role != BufferRole::kOutput && !GeneratedOnDevice(b)) {
          return absl::FailedPreconditionError(
              absl::StrCat("timed_launch_verified: buffer ", b.name, " of ", variant_.name,
                           " is not generated on the device, so it cannot get fresh inputs"));
        }
      }
      chooser_.emplace(data_.seed);
    }
    return absl::OkStatus();
  }

  const LaunchGeometry& geometry() const override { return geometry_; }

  absl::Status Warmup(int launches) override {
    buffers_.Select(0);
    for (int i = 0; i < launches; ++i) RETURN_IF_ERROR(Launch());
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_.get()));
    return absl::OkStatus();
  }

  absl::Status SetTimer(TimerStrategy strategy) override { return timer_->SetStrategy(strategy); }
  absl::StatusOr<WindowSource> AuditWindows() override {
    return timer_->AuditWindows(data_.seed);
  }

  // Placements: cold sample i runs on copy i mod placements (MeasurementOptions.placements);
  // profile runs (kUnblocked) on the first copy. The flush runs before the blocking kernel
  // (nvbench's order). Queued behind it instead, right before the timed launch, it made no
  // difference (bench/results/2026-11-30-h200-session4.md).
  absl::StatusOr<SampleRecord> ColdSample() override {
    if (timer_->strategy() == TimerStrategy::kUnblocked) {
      buffers_.Select(0);
    } else {
      buffers_.SelectNextCold();
    }
    ASSIGN_OR_RETURN(const std::optional<uint64_t> check, PrepareTimedCheck(1));
    RETURN_IF_ERROR(flusher_->Flush(stream_.get()));
    absl::StatusOr<SampleRecord> record = TimeLaunches(1);
    if (check.has_value()) RETURN_IF_ERROR(FinishTimedCheck(*check, "cold", 1, record.ok()));
    return record;
  }

  absl::StatusOr<SampleRecord> HotSample(int batch) override {
    buffers_.Select(0);
    ASSIGN_OR_RETURN(const std::optional<uint64_t> check, PrepareTimedCheck(batch));
    absl::StatusOr<SampleRecord> record = TimeLaunches(batch);
    if (check.has_value()) RETURN_IF_ERROR(FinishTimedCheck(*check, "hot", batch, record.ok()));
    return record;
  }

  std::optional<TimedSampleCheck> TimedCheck() const override {
    if (!chooser_.has_value()) return std::nullopt;
    return timed_check_;
  }

  void PushRange(const std::string& name) override { nvtxRangePushA(name.c_str()); }
  void PopRange() override { nvtxRangePop(); }

  // Copy 0 is read back for verification. The other copies (placements > 1) ran cold samples
  // too: each runs once more and must give copy 0's bytes exactly (the kernels here are
  // deterministic), else the run fails INTERNAL naming the copy.
  absl::Status RunOnceAndRead(BufferContents* out) override {
    absl::Cleanup select_first = [this] { buffers_.Select(0); };
    buffers_.Select(0);
    RETURN_IF_ERROR(buffers_.ResetOutputs(stream_.get()));
    RETURN_IF_ERROR(Launch());
    RETURN_IF_ERROR(buffers_.ReadVerified(stream_.get(), out));
    for (size_t copy = 1; copy < buffers_.copies(); ++copy) {
      buffers_.Select(copy);
      RETURN_IF_ERROR(buffers_.ResetOutputs(stream_.get()));
      RETURN_IF_ERROR(Launch());
      BufferContents other;
      RETURN_IF_ERROR(buffers_.ReadVerified(stream_.get(), &other));
      for (size_t i = 0; i < other.size(); ++i) {
        if (other[i] != (*out)[i]) {
          return absl::InternalError(absl::StrCat(variant_.name, ": buffer ", i,
                                                  " of placement copy ", copy,
                                                  " differs from copy 0's after the same launch"));
        }
      }
    }
    return absl::OkStatus();
  }

  // RunOnceAndRead's launch, checked on the device (kernels/cuda/device_verify.h);
  // the placement copies' bytes are compared with copy 0's there too.
  bool CanVerifyOnDevice() const override { return cuda::CanVerifyOnDevice(variant_); }
  absl::StatusOr<DeviceVerifyReport> VerifyOnDevice(const SampleIndices& samples) override {
    absl::Cleanup select_first = [this] { buffers_.Select(0); };
    buffers_.Select(0);
    RETURN_IF_ERROR(buffers_.ResetOutputs(stream_.get()));
    RETURN_IF_ERROR(Launch());
    ASSIGN_OR_RETURN(DeviceVerifyReport report,
                     cuda::VerifyOnDevice(variant_, buffers_.launch_buffers(), data_, samples,
                                          stream_.get()));
    const KernelBuffers copy0 = buffers_.launch_buffers();
    for (size_t copy = 1; copy < buffers_.copies(); ++copy) {
      buffers_.Select(copy);
      RETURN_IF_ERROR(buffers_.ResetOutputs(stream_.get()));
      RETURN_IF_ERROR(Launch());
      ASSIGN_OR_RETURN(const int64_t differ,
                       cuda::CountVerifiedDifferences(variant_, copy0, buffers_.launch_buffers(),
                                                      stream_.get()));
      if (differ != 0) {
        return absl::InternalError(absl::StrCat(variant_.name, ": ", differ,
                                                " words of placement copy ", copy,
                                                " differ from copy 0's after the same launch"));
      }
    }
    return report;
  }

  std::string LaunchReport() const override { return launch_report_; }

  bool BuffersReused() const override { return buffers_.reused(); }
  bool KeepBuffers() override {
    keep_ = data_.reuse_chain != 0;
    return keep_;
  }

  AchievedCounters ProfileCounters() override {
    // The counter pass takes CUPTI exclusively: no kernel durations are recorded after it.
    if (absl::Status s = timer_->SetStrategy(TimerStrategy::kBackendClock); !s.ok()) {
      AchievedCounters c;
      c.unavailable_reason = std::string(s.message());
      return c;
    }
    buffers_.Select(0);
    AchievedCounters c;
    const cuda::CounterValues v = cuda::ProfileKernel(device_, [this] {
      return variant_.cuda(buffers_.launch_buffers(), geometry_, stream_.get(), nullptr);
    });
    if (v.warps_active_pct) c.achieved_occupancy = *v.warps_active_pct / 100.0;
    c.dram_throughput_percent = v.dram_throughput_pct;
    c.unavailable_reason = v.unavailable_reason;
    return c;
  }

  KernelResources Resources() const override {
    KernelResources r;
    const void* symbol = nullptr;
    variant_.cuda(buffers_.launch_buffers(), geometry_, stream_.get(), &symbol);
    if (symbol == nullptr) {
      r.unavailable_reason = absl::StrCat(
          variant_.name, " is launched by a library (CUB / cudaMemcpy) that picks its own kernel "
                         "and configuration; gpubench cannot see its resources");
      return r;
    }
    cudaFuncAttributes attr{};
    if (cudaError_t e = cudaFuncGetAttributes(&attr, symbol); e != cudaSuccess) {
      r.unavailable_reason = absl::StrCat("cudaFuncGetAttributes: ", cudaGetErrorString(e));
      return r;
    }
    int blocks = 0;
    if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks, symbol, geometry_.block_size, geometry_.dynamic_shared_bytes);
        e != cudaSuccess) {
      r.unavailable_reason = absl::StrCat("cudaOccupancyMaxActiveBlocksPerMultiprocessor: ",
                                          cudaGetErrorString(e));
      return r;
    }
    r.available = true;
    r.registers_per_thread = attr.numRegs;
    r.static_shared_bytes = static_cast<int>(attr.sharedSizeBytes);
    r.local_bytes_per_thread = static_cast<int>(attr.localSizeBytes);
    r.max_threads_per_block = attr.maxThreadsPerBlock;
    r.ptx_version = attr.ptxVersion;
    r.binary_version = attr.binaryVersion;
    r.active_blocks_per_multiprocessor = blocks;
    return r;
  }

 private:
  // The timed-sample check (HostData::verify_timed_samples), before a sample of `launches`
  // launches: whether the chooser picks it, and then the seed its inputs were regenerated from.
  // Every sample starts from poisoned outputs (in-outs refilled), chosen or not, so that a kernel
  // cannot tell a verified sample from another by what its outputs hold (one that computed only
  // where its outputs were poisoned was timed skipping the work). Outside the timed window: a
  // cold sample's flush comes after it.
  absl::StatusOr<std::optional<uint64_t>> PrepareTimedCheck(int launches) {
    if (!chooser_.has_value()) return std::nullopt;
    // The engine times a checked run's hot samples one launch each (HotBatchSize): a batch's
    // later launches would not start from poisoned outputs.
    if (launches != 1) {
      return absl::InternalError(absl::StrCat("timed_launch_verified: a timed sample of ", launches,
                                              " launches; each must be one launch"));
    }
    ++timed_check_.samples;
    RETURN_IF_ERROR(buffers_.ResetOutputs(stream_.get()));
    if (!chooser_->Next() || !timed_check_.failure.empty()) return std::nullopt;
    const uint64_t seed = chooser_->InputSeed();
    RETURN_IF_ERROR(buffers_.Regenerate(seed, stream_.get()));
    return seed;
  }

  // After the chosen sample: its output checked on the device against inputs from `seed` (when
  // it was `timed`, i.e. its launches ran), then the run's own inputs restored.
  absl::Status FinishTimedCheck(uint64_t seed, const char* mode, int launches, bool timed) {
    if (timed) {
      HostData fresh;
      fresh.family = data_.family;
      fresh.dtype = data_.dtype;
      fresh.shape = data_.shape;
      fresh.n = data_.n;
      fresh.seed = seed;
      ASSIGN_OR_RETURN(const DeviceVerifyReport report,
                       cuda::VerifyOnDevice(variant_, buffers_.launch_buffers(), fresh,
                                            SampleIndices(), stream_.get()));
      ++timed_check_.verified;
      timed_check_.last_verified = timed_check_.samples;
      if (report.mismatches > 0) {
        timed_check_.mismatches = report.mismatches;
        timed_check_.failure = absl::StrFormat(
            "timed sample %d (%s, %d launch%s, outputs poisoned and inputs from seed %016x "
            "before it): %d of %d elements differ from the reference",
            timed_check_.samples, mode, launches, launches == 1 ? "" : "es", seed,
            report.mismatches, report.checked);
        if (!report.first_mismatches.empty()) {
          const DeviceMismatch& m = report.first_mismatches.front();
          absl::StrAppendFormat(&timed_check_.failure, ", first %s[%d] = %g (expected %g)",
                                variant_.family->buffers[static_cast<size_t>(m.buffer)].name,
                                m.index, m.actual, m.expected);
        }
      }
    }
    return buffers_.Regenerate(data_.seed, stream_.get());
  }

  absl::StatusOr<SampleRecord> TimeLaunches(int count) {
    return timer_->Time(stream_.get(), count, variant_.family->blocking_kernel,
                        [this] { return Launch(); });
  }

  absl::Status Launch() {
    const auto error = static_cast<cudaError_t>(
        variant_.cuda(buffers_.launch_buffers(), geometry_, stream_.get(), nullptr));
    if (error != cudaSuccess) {
      const std::string what =
          absl::StrCat("launch of ", variant_.name, " (grid ", geometry_.grid_size, ", block ",
                       geometry_.block_size, ") on device ", device_, " failed: ",
                       cudaGetErrorName(error), " (", cudaGetErrorString(error), ")");
      // A library's refusal of the launch (cuBLASLt's CUBLAS_STATUS_NOT_SUPPORTED): not sticky.
      if (error == cudaErrorNotSupported) {
        cudaGetLastError();
        return absl::FailedPreconditionError(absl::StrCat(what, "; ", launch_report_));
      }
      return CudaErrorStatus(error, what);
    }
    return absl::OkStatus();
  }

  const int device_;
  const KernelVariant& variant_;
  const LaunchGeometry geometry_;
  const HostData& data_;
  const DeviceInfo info_;
  cuda::DeviceBufferCache* const cache_;  // the device's
  bool keep_ = false;                     // hand the buffers to cache_ when destroyed (KeepBuffers)
  // Destroyed in reverse order: the setup's state, the timer, the run's buffers, then the flush
  // buffer, so that device memory is freed in the order it was before the session was split
  // (the next run's allocations, and so its placement, follow from it), and the stream last.
  SessionStream stream_;
  std::unique_ptr<cuda::L2Flusher> flusher_;
  cuda::RunBuffers buffers_;
  std::unique_ptr<cuda::LaunchTimer> timer_;
  std::unique_ptr<LaunchState> launch_state_;  // from the variant's setup function
  std::string launch_report_;
  std::optional<TimedSampleChooser> chooser_;  // set where HostData::verify_timed_samples
  TimedSampleCheck timed_check_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int devices) : devices_(devices) {
    for (int d = 0; d < devices; ++d) {
      caches_.push_back(std::make_unique<cuda::DeviceBufferCache>());
    }
  }

  BackendKind kind() const override { return BackendKind::kCuda; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities can;
    can.kernel_durations = true;
    can.placement_pads = true;
    can.placement_copies = true;
    can.flush_and_stream_choices = true;
    can.hardware_counters = true;
    can.generates_inputs_on_device = true;  // RunBuffers::Fill, GeneratedOnDevice
    return can;
  }
  std::string SampleMethod(bool cold, int hot_batch_size, TimerStrategy timer,
                           bool blocking) const override {
    if (timer == TimerStrategy::kTimeCounter) {
      return cold ? "cold: L2 flushed, then one launch alone (no blocking kernel, serialized by "
                    "the profiler), timed by the kernels' gpu__time_duration counter (Nsight "
                    "Compute's Duration) per sample"
                  : "hot: one launch alone after the previous ones (no blocking kernel, "
                    "serialized by the profiler), timed by the kernels' gpu__time_duration "
                    "counter (Nsight Compute's Duration) per sample";
    }
    const char* timed =
        timer == TimerStrategy::kActivityRecords
            ? "timed by CUPTI activity records (first GPU operation's start to the last one's "
              "end; CUDA events kept as a cross-check)"
            : "timed with CUDA events";
    // Unblocked launches, or a family that synchronizes with the host before its launch (a
    // pageable copy): nothing holds the stream, so the window opens on an idle stream.
    if (timer == TimerStrategy::kUnblocked || !blocking) {
      const char* idle =
          blocking
              ? "on an idle stream (no blocking kernel)"
              : "on an idle stream (no blocking kernel: the family synchronizes with the host)";
      return cold ? absl::StrCat("cold: L2 flushed, one launch ", idle, " ", timed,
                                 " per sample, launch latency included")
                  : absl::StrFormat(
                        "hot: %d back-to-back launches %s %s per sample, launch "
                        "latency included",
                        hot_batch_size, idle, timed);
    }
    return cold ? absl::StrCat("cold: L2 flushed, stream held by a blocking kernel, one launch ",
                               timed, " per sample")
                : absl::StrFormat("hot: %d back-to-back launches behind a blocking kernel %s per "
                                  "sample",
                                  hot_batch_size, timed);
  }
  int device_count() const override { return devices_; }

  absl::StatusOr<DeviceInfo> Describe(int device) const override {
    if (device < 0 || device >= devices_) {
      return absl::InvalidArgumentError(
          absl::StrCat("device index ", device, " out of range: ", devices_, " CUDA device(s)"));
    }
    return cuda::DescribeDevice(device);
  }

  absl::Status ApplyDeviceLimits(int device, const DeviceLimits& limits) override {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    if (limits.malloc_heap_bytes > 0) {
      CUDA_RETURN_IF_ERROR(cudaDeviceSetLimit(cudaLimitMallocHeapSize,
                                              static_cast<size_t>(limits.malloc_heap_bytes)));
    }
    if (limits.printf_fifo_bytes > 0) {
      CUDA_RETURN_IF_ERROR(cudaDeviceSetLimit(cudaLimitPrintfFifoSize,
                                              static_cast<size_t>(limits.printf_fifo_bytes)));
    }
    return absl::OkStatus();
  }

  int MaxActiveBlocksPerMultiprocessor(const KernelVariant& variant, int device,
                                       int block_size) const override {
    const void* symbol = nullptr;
    if (variant.cuda == nullptr) return 0;
    variant.cuda(KernelBuffers(), LaunchGeometry(), nullptr, &symbol);
    int blocks = 0;
    if (symbol == nullptr || cudaSetDevice(device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, symbol, block_size, 0) !=
            cudaSuccess) {
      return 0;
    }
    return blocks;
  }

  absl::StatusOr<std::unique_ptr<Session>> Open(const DeviceInfo& info,
                                                const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) override {
    const int device = info.index;
    if (variant.cuda == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("kernel ", variant.name, " has no CUDA implementation in this build"));
    }
    if (NeedsPeerDevice(*variant.family) &&
        (data.peer_device < 0 || data.peer_device >= devices_ || data.peer_device == device)) {
      return absl::FailedPreconditionError(absl::StrCat(
          variant.name, " needs a second (peer) device; this server sees ", devices_,
          " CUDA device(s) and the peer is ", data.peer_device));
    }
    // placements and placement_pad_bytes are in range: the engine's resolve checked them against
    // the option table (common/measurement_options.h); a backend trusts the spec.
    if (geometry.block_size > info.max_threads_per_block) {
      return absl::InvalidArgumentError(absl::StrCat("block_size ", geometry.block_size,
                                                     " exceeds the device maximum ",
                                                     info.max_threads_per_block));
    }
    auto session =
        std::make_unique<CudaSession>(device, variant, geometry, data, info, caches_[device].get());
    RETURN_IF_ERROR(session->Init());
    return session;
  }

  void ReleaseCachedBuffers(int device) override {
    if (device < 0 || device >= devices_ || !caches_[device]->holds()) return;
    // The caller's thread (the worker's reader) may have no current device, and a CUDA call
    // there would first create device 0's context.
    if (cudaSetDevice(device) != cudaSuccess) return;
    caches_[device]->Release();
  }

 private:
  const int devices_;
  std::vector<std::unique_ptr<cuda::DeviceBufferCache>> caches_;  // per device
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(e), " (",
                                               cudaGetErrorString(e), ")"));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device visible");
  return std::unique_ptr<Backend>(new CudaBackend(count));
}

}  // namespace gpubench
