#include "kernels/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
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
              const HostData& data, const DeviceInfo& info)
      : device_(device),
        variant_(variant),
        geometry_(geometry),
        data_(data),
        info_(info),
        buffers_(device, variant, data) {}

  ~CudaSession() override {
    cudaSetDevice(device_);
    if (stream_.ready()) {
      if (timer_ != nullptr) timer_->Release();  // never leave a blocking kernel spinning
      cudaStreamSynchronize(stream_.get());
    }
    cuda::ResetPersistingL2Lines();  // no persisting (evict_last) lines outlive the run
  }

  absl::Status Init() {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    RETURN_IF_ERROR(stream_.Create(data_.stream));
    ASSIGN_OR_RETURN(timer_, cuda::LaunchTimer::Create(device_));
    RETURN_IF_ERROR(buffers_.Allocate(stream_.get()));
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
    RETURN_IF_ERROR(flusher_->Flush(stream_.get()));
    return TimeLaunches(1);
  }

  absl::StatusOr<SampleRecord> HotSample(int batch) override {
    buffers_.Select(0);
    return TimeLaunches(batch);
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
  // Destroyed in reverse order: the setup's state, the timer, the run's buffers, then the flush
  // buffer, so that device memory is freed in the order it was before the session was split
  // (the next run's allocations, and so its placement, follow from it), and the stream last.
  SessionStream stream_;
  std::unique_ptr<cuda::L2Flusher> flusher_;
  cuda::RunBuffers buffers_;
  std::unique_ptr<cuda::LaunchTimer> timer_;
  std::unique_ptr<LaunchState> launch_state_;  // from the variant's setup function
  std::string launch_report_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int devices) : devices_(devices) {}

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
  std::string SampleMethod(bool cold, int hot_batch_size, TimerStrategy timer) const override {
    if (timer == TimerStrategy::kTimeCounter) {
      return cold ? "cold: L2 flushed, then one launch alone (no blocking kernel, serialized by "
                    "the profiler), timed by the kernels' gpu__time_duration counter (Nsight "
                    "Compute's Duration) per sample"
                  : "hot: one launch alone after the previous ones (no blocking kernel, "
                    "serialized by the profiler), timed by the kernels' gpu__time_duration "
                    "counter (Nsight Compute's Duration) per sample";
    }
    if (timer == TimerStrategy::kUnblocked) {
      return cold ? "cold: L2 flushed, one launch on an idle stream (no blocking kernel) timed "
                    "with CUDA events per sample, launch latency included"
                  : "hot: one launch on an idle stream (no blocking kernel) timed with CUDA "
                    "events per sample, launch latency included";
    }
    const char* timed =
        timer == TimerStrategy::kActivityRecords
            ? "timed by CUPTI activity records (first GPU operation's start to the last one's "
              "end; CUDA events kept as a cross-check)"
            : "timed with CUDA events";
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
    auto session = std::make_unique<CudaSession>(device, variant, geometry, data, info);
    RETURN_IF_ERROR(session->Init());
    return session;
  }

 private:
  const int devices_;
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
