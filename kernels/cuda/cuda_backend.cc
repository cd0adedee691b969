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
#include "kernels/cuda/cupti_activity.h"
#include "kernels/cuda/cupti_profiler.h"
#include "kernels/cuda/device_verify.h"
#include "kernels/cuda/generate.h"
#include "kernels/cuda/timing.h"
#include "kernels/run_buffers.h"

namespace gpubench {
namespace {

// A blocking kernel that waits longer than this means the host could not queue the timed
// launches in time: the sample would include launch latency, so it is rejected.
constexpr uint64_t kBlockingTimeoutNs = 2'000'000'000;
// Least wait of the blocking kernel, which reads the SM clock while it holds the stream:
// %globaltimer ticks about every microsecond, so 20 us gives the clock to about 5%, ample for the
// 75% throttling threshold. The host's queuing of the timed launches usually takes longer anyway.
constexpr uint64_t kClockWindowNs = 20'000;

std::string FormatUuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return absl::StrFormat(
      "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
      b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

std::string FormatCudaVersion(int v) { return absl::StrCat(v / 1000, ".", (v % 1000) / 10); }

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

// One buffer of a run, where its family's declaration places it. Frees itself.
//
// A device buffer of kPlacementPadMinBytes or more gets the run's placement pad (HostData::
// placement_pad_bytes: the request's measurement.placement_pad_bytes, else the server's
// --default_placement_pad_bytes) of unused space after it, so that a run's buffers do not sit
// exactly one buffer size apart. H200, 2026-11-30 (bench/results/2026-11-30-h200-session3.md,
// -session5.md): 16Mi fp16/bf16 add_*_l2keep hot ran about 2% faster with a 34 MiB pad after each
// of its three 32 MiB buffers (66 MiB apart) than back to back (32 MiB apart); on a standalone
// probe Nsight Compute counted 1.3-2.1 MB more DRAM writes per launch with the buffers exactly
// 32 MiB apart (L2 set aliasing between the operands evicts dirty output lines early). GEMM 4096
// moved either way within noise. No pad by default: an application's allocator places buffers
// back to back, as cudaMalloc does here. Memory admission (RunMemoryOf,
// server/engine/run_memory.h) counts the pad, so a run that does not fit with it is refused
// before anything is allocated.
class PlacedBuffer {
 public:
  PlacedBuffer() = default;
  PlacedBuffer(const PlacedBuffer&) = delete;
  PlacedBuffer& operator=(const PlacedBuffer&) = delete;
  ~PlacedBuffer() { Free(); }

  // Allocates `bytes` (at least 256) at `placement`; `device` is the device that owns device
  // memory (the run's or its peer); a device buffer of kPlacementPadMinBytes or more gets
  // `placement_pad_bytes` unused bytes after it. Leaves the run's device current.
  absl::Status Allocate(Placement placement, size_t bytes, int device, int run_device,
                        size_t placement_pad_bytes) {
    placement_ = placement;
    bytes_ = bytes;
    const size_t size = std::max<size_t>(bytes, 256);
    cudaError_t e = cudaSuccess;
    switch (placement) {
      case Placement::kDevice:
      case Placement::kPeerDevice:
        e = cudaSetDevice(device);
        if (e == cudaSuccess) {
          const size_t pad =
              size >= static_cast<size_t>(kPlacementPadMinBytes) ? placement_pad_bytes : 0;
          e = cudaMalloc(&data_, size + pad);
        }
        owner_ = device;
        break;
      case Placement::kHostPinned:
        e = cudaHostAlloc(&data_, size, cudaHostAllocPortable);
        break;
      case Placement::kHostPageable:
        data_ = std::aligned_alloc(256, (size + 255) / 256 * 256);
        if (data_ == nullptr) e = cudaErrorMemoryAllocation;
        break;
    }
    cudaSetDevice(run_device);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it
      data_ = nullptr;
      return absl::ResourceExhaustedError(absl::StrCat(
          "allocation of ", bytes, " bytes ",
          placement == Placement::kHostPinned || placement == Placement::kHostPageable
              ? "of host memory"
              : absl::StrCat("on device ", device),
          " failed: out of memory"));
    }
    CUDA_RETURN_IF_ERROR(e);
    return absl::OkStatus();
  }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool on_host() const {
    return placement_ == Placement::kHostPinned || placement_ == Placement::kHostPageable;
  }
  int owner() const { return owner_; }

 private:
  void Free() {
    if (data_ == nullptr) return;
    switch (placement_) {
      case Placement::kDevice:
      case Placement::kPeerDevice:
        cudaFree(data_);
        break;
      case Placement::kHostPinned:
        cudaFreeHost(data_);
        break;
      case Placement::kHostPageable:
        std::free(data_);
        break;
    }
    data_ = nullptr;
  }

  Placement placement_ = Placement::kDevice;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  int owner_ = -1;
};

// Returns L2 lines marked persisting (evict_last) to normal. Best effort: where the driver refuses,
// the error is cleared so that the next launch check does not report it, and a cold sample relies
// on the flush alone.
void ResetPersistingL2Lines() {
  if (cudaCtxResetPersistingL2Cache() != cudaSuccess) cudaGetLastError();
}

class CudaSession final : public Session {
 public:
  CudaSession(int device, const KernelVariant& variant, const LaunchGeometry& geometry,
              const HostData& data, const DeviceInfo& info)
      : device_(device), variant_(variant), geometry_(geometry), data_(data), info_(info) {}

  ~CudaSession() override {
    cudaSetDevice(device_);
    if (stream_ready_) {
      if (state_ != nullptr) state_->release = 1;  // never leave a blocking kernel spinning
      cudaStreamSynchronize(stream_);
    }
    ResetPersistingL2Lines();  // no persisting (evict_last) lines outlive the run
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (owns_stream_) cudaStreamDestroy(stream_);
    if (state_ != nullptr) cudaFreeHost(const_cast<cuda::BlockingState*>(state_));
    launch_state_.reset();  // the setup's state (handles, workspace) before the buffers
    memory_.clear();
    extra_copies_.clear();
    flush_.reset();
  }

  absl::Status Init() {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    // The run's MeasurementOptions.stream; kLegacy and kPerThread exist to compare the launch-
    // and-event overhead of each kind (what PyTorch launches on), not for production.
    const StreamKind stream_kind = data_.stream;
    if (stream_kind == StreamKind::kNonBlocking) {
      CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      owns_stream_ = true;
    } else {
      stream_ = stream_kind == StreamKind::kLegacy ? cudaStreamLegacy : cudaStreamPerThread;
    }
    stream_ready_ = true;
    CUDA_RETURN_IF_ERROR(cudaEventCreate(&start_));
    CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop_));
    // The blocking kernel's state in pinned, mapped host memory: the host releases the kernel by
    // writing `release` while the stream is held, and reads the clock it measured afterwards.
    void* state = nullptr;
    CUDA_RETURN_IF_ERROR(cudaHostAlloc(&state, sizeof(cuda::BlockingState), cudaHostAllocMapped));
    state_ = static_cast<volatile cuda::BlockingState*>(state);
    *const_cast<cuda::BlockingState*>(state_) = cuda::BlockingState{};
    void* device_state = nullptr;
    CUDA_RETURN_IF_ERROR(cudaHostGetDevicePointer(&device_state, state, 0));
    device_state_ = static_cast<cuda::BlockingState*>(device_state);

    RETURN_IF_ERROR(AllocateBuffers());
    flush_mode_ = data_.l2_flush;  // MeasurementOptions.l2_flush
    const size_t l2_bytes =
        static_cast<size_t>(std::max<int64_t>(info_.l2_cache_bytes, 1 << 20)) / 16 * 16;
    // Reading just L2's size can leave lines of the run resident (set conflicts): read twice that.
    flush_bytes_ = flush_mode_ == L2Flush::kClean ? 2 * l2_bytes : l2_bytes;
    // Zeros, plus a 16-byte tail outside the flushed bytes for the read pass's never-taken store.
    RETURN_IF_ERROR(Allocate(&flush_, flush_bytes_ + 16));
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flush_.get(), 0, flush_bytes_ + 16, stream_));
    // Every copy's outputs and in-outs start as ResetOutputs sets them; copy 0 stays selected.
    for (size_t copy = Copies(); copy-- > 0;) {
      SelectCopy(copy);
      RETURN_IF_ERROR(ResetOutputs());
    }
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    if (variant_.cuda_setup != nullptr) {
      const auto error = static_cast<cudaError_t>(
          variant_.cuda_setup(buffers_, geometry_, stream_, &launch_state_, &launch_report_));
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
      buffers_.state = launch_state_.get();
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    }
    return absl::OkStatus();
  }

  const LaunchGeometry& geometry() const override { return geometry_; }

  absl::Status Warmup(int launches) override {
    SelectCopy(0);
    for (int i = 0; i < launches; ++i) RETURN_IF_ERROR(Launch());
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  absl::StatusOr<double> ColdSample() override {
    // Placements: cold sample i runs on copy i mod placements (MeasurementOptions.placements).
    SelectCopy(next_cold_copy_++ % Copies());
    RETURN_IF_ERROR(FlushL2());
    if (time_profiler_ != nullptr) {
      // The flush completes before the profiled window: only the timed launch is a range.
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
      return TimeProfiled(1);
    }
    // The flush runs before the blocking kernel (nvbench's order). Queued behind it instead, right
    // before the timed launch, it made no difference: H200, 2026-11-30, two servers ABBA, six
    // add kernels at 1Mi/16Mi/256Mi, adjacent/before = 0.995-1.022 with the same spread in both
    // orders (bench/results/2026-11-30-h200-session4.md).
    return variant_.family->blocking_kernel ? TimeLaunches(1) : TimeUnblocked(1);
  }

  absl::StatusOr<double> HotSample(int batch) override {
    SelectCopy(0);
    if (time_profiler_ != nullptr) return TimeProfiled(batch);
    return variant_.family->blocking_kernel ? TimeLaunches(batch) : TimeUnblocked(batch);
  }

  absl::StatusOr<double> UnblockedSample(bool flush_caches) override {
    SelectCopy(0);
    if (flush_caches) RETURN_IF_ERROR(FlushL2());
    return TimeUnblocked(1);
  }

  // Measured by the blocking kernel of the last sample while it held the stream.
  std::optional<double> CurrentClockHz() override { return last_clock_hz_; }

  absl::Status StartKernelDurations(KernelDurationSource source) override {
    if (recorder_ != nullptr || time_profiler_ != nullptr) StopKernelDurations();
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));  // CUPTI works on the current context
    if (source == KernelDurationSource::kTimeCounter) {
      ASSIGN_OR_RETURN(time_profiler_, cuda::KernelTimeProfiler::Start(device_));
    } else {
      ASSIGN_OR_RETURN(recorder_, cuda::ActivityRecorder::Start());
    }
    return absl::OkStatus();
  }
  void StopKernelDurations() override {
    recorder_.reset();
    time_profiler_.reset();
    last_duration_seconds_.reset();
  }
  std::optional<double> LastKernelDurationSeconds() override { return last_duration_seconds_; }

  void PushRange(const std::string& name) override { nvtxRangePushA(name.c_str()); }
  void PopRange() override { nvtxRangePop(); }

  // Copy 0 is read back for verification. The other copies (placements > 1) ran cold samples
  // too: each runs once more and must give copy 0's bytes exactly (the kernels here are
  // deterministic), else the run fails INTERNAL naming the copy.
  absl::Status RunOnceAndRead(BufferContents* out) override {
    SelectCopy(0);
    RETURN_IF_ERROR(ResetOutputs());
    RETURN_IF_ERROR(Launch());
    RETURN_IF_ERROR(ReadVerified(out));
    for (size_t copy = 1; copy < Copies(); ++copy) {
      SelectCopy(copy);
      RETURN_IF_ERROR(ResetOutputs());
      RETURN_IF_ERROR(Launch());
      BufferContents other;
      RETURN_IF_ERROR(ReadVerified(&other));
      for (size_t i = 0; i < other.size(); ++i) {
        if (other[i] != (*out)[i]) {
          SelectCopy(0);
          return absl::InternalError(absl::StrCat(
              variant_.name, ": buffer ", i, " of placement copy ", copy,
              " differs from copy 0's after the same launch"));
        }
      }
    }
    SelectCopy(0);
    return absl::OkStatus();
  }

  // Issue #30: RunOnceAndRead's launch, checked on the device (kernels/cuda/device_verify.h);
  // the placement copies' bytes are compared with copy 0's there too.
  bool CanVerifyOnDevice() const override { return cuda::CanVerifyOnDevice(variant_); }
  absl::StatusOr<DeviceVerifyReport> VerifyOnDevice(const SampleIndices& samples) override {
    SelectCopy(0);
    RETURN_IF_ERROR(ResetOutputs());
    RETURN_IF_ERROR(Launch());
    ASSIGN_OR_RETURN(DeviceVerifyReport report,
                     cuda::VerifyOnDevice(variant_, buffers_, data_, samples, stream_));
    const KernelBuffers copy0 = buffers_;
    for (size_t copy = 1; copy < Copies(); ++copy) {
      SelectCopy(copy);
      RETURN_IF_ERROR(ResetOutputs());
      RETURN_IF_ERROR(Launch());
      absl::StatusOr<int64_t> differ =
          cuda::CountVerifiedDifferences(variant_, copy0, buffers_, stream_);
      SelectCopy(0);
      if (!differ.ok()) return differ.status();
      if (*differ != 0) {
        return absl::InternalError(absl::StrCat(variant_.name, ": ", *differ, " words of placement copy ", copy,
                                                " differ from copy 0's after the same launch"));
      }
    }
    SelectCopy(0);
    return report;
  }

  std::string LaunchReport() const override { return launch_report_; }

  AchievedCounters ProfileCounters() override {
    StopKernelDurations();  // the counter pass takes CUPTI exclusively
    SelectCopy(0);
    AchievedCounters c;
    const cuda::CounterValues v = cuda::ProfileKernel(
        device_, [this] { return variant_.cuda(buffers_, geometry_, stream_, nullptr); });
    if (v.warps_active_pct) c.achieved_occupancy = *v.warps_active_pct / 100.0;
    c.dram_throughput_percent = v.dram_throughput_pct;
    c.unavailable_reason = v.unavailable_reason;
    return c;
  }

  KernelResources Resources() const override {
    KernelResources r;
    const void* symbol = nullptr;
    variant_.cuda(buffers_, geometry_, stream_, &symbol);
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
  absl::Status Allocate(DeviceBuffer* buffer, size_t bytes) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 256));
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it
      return absl::ResourceExhaustedError(absl::StrCat(
          "cudaMalloc of ", bytes, " bytes failed on device ", device_, ": out of memory"));
    }
    CUDA_RETURN_IF_ERROR(e);
    buffer->reset(p);
    return absl::OkStatus();
  }

  // Allocates every buffer of the family where it is placed and uploads the inputs.
  absl::Status AllocateBuffers() {
    const KernelFamily& family = *variant_.family;
    buffers_ = BuffersOfRun(data_, device_);
    if (NeedsPeerDevice(family)) RETURN_IF_ERROR(EnablePeerAccess());
    for (size_t i = 0; i < family.buffers.size(); ++i) {
      buffers_.elements[i] = BufferElements(family.buffers[i], data_.shape);
    }
    RETURN_IF_ERROR(AllocateCopy(&memory_));
    // Placements: more copies of every buffer, each its own allocation. The engine admits more
    // than one only for families whose buffers are all on the run's device and that keep no
    // launch state.
    extra_copies_.resize(static_cast<size_t>(std::max(data_.placements, 1) - 1));
    for (std::vector<std::unique_ptr<PlacedBuffer>>& copy : extra_copies_) {
      RETURN_IF_ERROR(AllocateCopy(&copy));
    }
    SelectCopy(0);
    return absl::OkStatus();
  }

  // One copy of the family's buffers, each where its declaration places it, inputs generated on
  // the device or uploaded (outputs and in-outs are ResetOutputs' work).
  absl::Status AllocateCopy(std::vector<std::unique_ptr<PlacedBuffer>>* copy) {
    const KernelFamily& family = *variant_.family;
    for (size_t i = 0; i < family.buffers.size(); ++i) {
      const BufferSpec& spec = family.buffers[i];
      const int owner = spec.placement == Placement::kPeerDevice ? data_.peer_device : device_;
      auto buffer = std::make_unique<PlacedBuffer>();
      const int64_t bytes = BufferBytes(variant_, data_.shape, static_cast<int>(i));
      RETURN_IF_ERROR(buffer->Allocate(spec.placement, static_cast<size_t>(bytes), owner, device_,
                                       static_cast<size_t>(data_.placement_pad_bytes)));
      if (spec.role == BufferRole::kInput) {
        RETURN_IF_ERROR(Fill(static_cast<int>(i), buffer->data(), /*async=*/false));
      }
      copy->push_back(std::move(buffer));
    }
    return absl::OkStatus();
  }

  // Buffer `buffer`'s generated contents into `data` (one copy's allocation of it): on the device
  // where GeneratedOnDevice (no host generation or upload; a 1 GiB input takes milliseconds),
  // else copied from the host's. On the session's stream; `async` false waits for it.
  absl::Status Fill(int buffer, void* data, bool async) {
    const BufferSpec& spec = variant_.family->buffers[buffer];
    const int64_t bytes = BufferBytes(variant_, data_.shape, buffer);
    if (GeneratedOnDevice(spec)) {
      CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(cuda::LaunchGenerateUniform(
          BufferDType(spec, variant_.dtype), data_.seed, spec.seed_stream,
          BufferElements(spec, data_.shape), data, stream_)));
      if (!async) CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    } else if (async) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(data, data_.buffers[buffer].data(),
                                           static_cast<size_t>(bytes), cudaMemcpyDefault, stream_));
    } else {
      CUDA_RETURN_IF_ERROR(cudaMemcpy(data, data_.buffers[buffer].data(),
                                      static_cast<size_t>(bytes), cudaMemcpyDefault));
    }
    return absl::OkStatus();
  }

  // Peer buffers: access in both directions where the devices allow it (an SM-driven copy needs
  // it; copy-engine copies work either way). Already enabled is fine.
  absl::Status EnablePeerAccess() {
    if (data_.peer_device < 0 || data_.peer_device == device_) {
      return absl::FailedPreconditionError(
          absl::StrCat(variant_.name, " needs a second (peer) device"));
    }
    const std::pair<int, int> directions[] = {{device_, data_.peer_device},
                                              {data_.peer_device, device_}};
    for (const auto& [from, to] : directions) {
      int can = 0;
      CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, from, to));
      if (can == 0) continue;
      CUDA_RETURN_IF_ERROR(cudaSetDevice(from));
      const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // not sticky: clear it
      } else if (e != cudaSuccess) {
        cudaSetDevice(device_);
        CUDA_RETURN_IF_ERROR(e);
      }
    }
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    return absl::OkStatus();
  }

  // Reads the verified buffers (outputs, in-outs) of the selected copy.
  absl::Status ReadVerified(BufferContents* out) {
    out->assign(memory_.size(), {});
    for (size_t i = 0; i < memory_.size(); ++i) {
      if (!IsVerified(variant_.family->buffers[i])) continue;
      (*out)[i].resize(memory_[i]->bytes());
      // cudaMemcpyDefault: unified addressing finds each buffer, wherever it is placed.
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync((*out)[i].data(), buffers_.data[i],
                                           memory_[i]->bytes(), cudaMemcpyDefault, stream_));
    }
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  // Copies of the buffers (MeasurementOptions.placements), and which one the launches use
  // (0: memory_, the first allocation).
  size_t Copies() const { return 1 + extra_copies_.size(); }
  void SelectCopy(size_t copy) {
    const std::vector<std::unique_ptr<PlacedBuffer>>& buffers =
        copy == 0 ? memory_ : extra_copies_[copy - 1];
    for (size_t i = 0; i < buffers.size(); ++i) buffers_.data[i] = buffers[i]->data();
  }

  // In-out buffers start from their generated contents (SAXPY's y); outputs from all-ones bytes
  // (NaN in every floating dtype), so an element the kernel never writes fails verification.
  absl::Status ResetOutputs() {
    for (size_t i = 0; i < memory_.size(); ++i) {
      const BufferRole role = variant_.family->buffers[i].role;
      PlacedBuffer& b = *memory_[i];
      void* const data = buffers_.data[i];  // the selected copy's (copy 0: b.data())
      if (role == BufferRole::kInOut) {
        RETURN_IF_ERROR(Fill(static_cast<int>(i), data, /*async=*/true));
      } else if (role == BufferRole::kOutput) {
        if (b.on_host()) {
          CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // no launch still writes it
          std::memset(data, 0xff, b.bytes());
        } else if (b.owner() == device_) {
          CUDA_RETURN_IF_ERROR(cudaMemsetAsync(data, 0xff, b.bytes(), stream_));
        } else {  // the peer's memory: set it from its own device, synchronously
          CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
          CUDA_RETURN_IF_ERROR(cudaSetDevice(b.owner()));
          // cudaMemset may return before the fill is done (it is asynchronous to the host for
          // device memory): without the wait, a push kernel on this run's stream raced the fill
          // and 0.02-0.3% of its stores were overwritten with NaN (H200 x2, 2026-11-30).
          cudaError_t e = cudaMemset(b.data(), 0xff, b.bytes());
          if (e == cudaSuccess) e = cudaDeviceSynchronize();
          cudaSetDevice(device_);
          CUDA_RETURN_IF_ERROR(e);
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Launch() {
    const auto error = static_cast<cudaError_t>(variant_.cuda(buffers_, geometry_, stream_, nullptr));
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

  // Evicts the run's data from L2 (see L2Flush): by default reads 2 x L2 of zeros, which writes
  // back every dirty line before the timed window and leaves only clean lines; with memset, writes
  // an L2-sized buffer, a new value each time. Lines a kernel marked evict_last
  // (KernelVariant::l2_evict_last) can survive the flush: those variants first return them to
  // normal (a context-wide call). Other variants skip the reset, which slowed the next launch.
  absl::Status FlushL2() {
    if (variant_.l2_evict_last) ResetPersistingL2Lines();
    if (flush_mode_ == L2Flush::kMemset) {
      CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(flush_.get(), ++flush_value_ & 0xff, flush_bytes_, stream_));
    } else {
      auto* bytes = static_cast<unsigned char*>(flush_.get());
      CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(cuda::LaunchL2ReadFlush(
          bytes, flush_bytes_, reinterpret_cast<uint32_t*>(bytes + flush_bytes_), stream_)));
    }
    return absl::OkStatus();
  }

  // The timed launches of a sample; while kernel durations are recorded, inside a CUPTI region
  // (the events, the flush and the blocking kernel stay outside it).
  absl::Status LaunchTimed(int count) {
    last_duration_seconds_.reset();
    if (recorder_ != nullptr) region_ = recorder_->BeginRegion();
    absl::Status launched = absl::OkStatus();
    for (int i = 0; i < count && launched.ok(); ++i) launched = Launch();
    if (recorder_ != nullptr) recorder_->EndRegion();
    return launched;
  }

  // After the timed launches completed: the span of their GPU operations, when recorded.
  void TakeDuration() {
    if (recorder_ == nullptr) return;
    if (std::optional<cuda::ActivityRecorder::Span> span = recorder_->TakeSpan(region_);
        span.has_value()) {
      last_duration_seconds_ = static_cast<double>(span->nanoseconds) * 1e-9;
    }
  }

  // Holds the stream with the blocking kernel, queues the start event, `count` launches and the
  // stop event, releases the stream and returns the events' elapsed time in seconds.
  absl::StatusOr<double> TimeLaunches(int count) {
    last_clock_hz_.reset();
    state_->release = 0;
    state_->timed_out = 0;
    state_->clock_cycles = 0;
    state_->clock_ns = 0;
    CUDA_RETURN_IF_ERROR(
        cuda::LaunchBlockingKernel(device_state_, kClockWindowNs, kBlockingTimeoutNs, stream_));
    // Every early return below releases the blocking kernel (it would spin to its timeout).
    absl::Cleanup release = [this] { state_->release = 1; };
    CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, stream_));
    absl::Status launched = LaunchTimed(count);
    CUDA_RETURN_IF_ERROR(cudaEventRecord(stop_, stream_));
    std::move(release).Invoke();
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_));
    RETURN_IF_ERROR(launched);
    TakeDuration();
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
    if (state_->timed_out != 0) {
      absl::Status timed_out = absl::UnavailableError(
          "the blocking kernel timed out before the timed launches were queued: a profiler that "
          "serializes launches (ncu) is attached, or the host is too slow or overloaded for a "
          "clean sample");
      timed_out.SetPayload(kBlockingTimeoutPayload, absl::Cord("1"));
      return timed_out;
    }
    if (state_->clock_ns > 0) {
      last_clock_hz_ = static_cast<double>(state_->clock_cycles) /
                       static_cast<double>(state_->clock_ns) * 1e9;
    }
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

  // Times `count` launches between two events without the blocking kernel: for profilers, and
  // for families whose operations cannot wait behind it (KernelFamily::blocking_kernel). The
  // time includes the launch latency of an idle stream. No clock reading.
  absl::StatusOr<double> TimeUnblocked(int count) {
    last_clock_hz_.reset();
    CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, stream_));
    absl::Status launched = LaunchTimed(count);
    CUDA_RETURN_IF_ERROR(cudaEventRecord(stop_, stream_));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_));
    RETURN_IF_ERROR(launched);
    TakeDuration();
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

  // Times `count` launches under the gpu__time_duration profiler (no blocking kernel: the
  // profiler waits for every kernel as it is launched). Returns the events' seconds around them;
  // the kernels' summed durations become LastKernelDurationSeconds.
  absl::StatusOr<double> TimeProfiled(int count) {
    last_clock_hz_.reset();
    absl::Status launched = absl::OkStatus();
    absl::StatusOr<cuda::KernelTimeProfiler::Durations> durations =
        time_profiler_->Measure([&]() -> int {
          if (cudaError_t e = cudaEventRecord(start_, stream_); e != cudaSuccess) return e;
          launched = LaunchTimed(count);  // resets last_duration_seconds_
          return cudaEventRecord(stop_, stream_);
        });
    RETURN_IF_ERROR(launched);
    if (!durations.ok()) return durations.status();
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
    if (durations->kernels > 0) last_duration_seconds_ = durations->seconds;
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

  const int device_;
  const KernelVariant& variant_;
  const LaunchGeometry geometry_;
  const HostData& data_;
  const DeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  bool stream_ready_ = false;  // stream_ is set (the legacy stream's handle may be null-like)
  bool owns_stream_ = false;   // made by Init, destroyed with the session
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  volatile cuda::BlockingState* state_ = nullptr;  // host view of the mapped state
  cuda::BlockingState* device_state_ = nullptr;    // device view of the same memory
  std::optional<double> last_clock_hz_;
  std::unique_ptr<cuda::ActivityRecorder> recorder_;  // while kernel durations are recorded
  std::unique_ptr<cuda::KernelTimeProfiler> time_profiler_;  // while the time counter is read
  uint64_t region_ = 0;                                // of the last sample's timed launches
  std::optional<double> last_duration_seconds_;
  std::vector<std::unique_ptr<PlacedBuffer>> memory_;  // one per buffer of the family
  // The other placement copies (MeasurementOptions.placements), each laid out as memory_, and the
  // copy the next cold sample runs on.
  std::vector<std::vector<std::unique_ptr<PlacedBuffer>>> extra_copies_;
  size_t next_cold_copy_ = 0;
  DeviceBuffer flush_;
  L2Flush flush_mode_ = L2Flush::kClean;
  size_t flush_bytes_ = 0;
  int flush_value_ = 0;
  KernelBuffers buffers_;
  std::unique_ptr<LaunchState> launch_state_;  // from the variant's setup function
  std::string launch_report_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int devices) : devices_(devices) {}

  BackendKind kind() const override { return BackendKind::kCuda; }
  bool GeneratesInputsOnDevice() const override { return true; }  // Fill, GeneratedOnDevice
  std::string SampleMethod(bool cold, int hot_batch_size,
                           std::optional<KernelDurationSource> durations) const override {
    if (durations == KernelDurationSource::kTimeCounter) {
      return cold ? "cold: L2 flushed, then one launch alone (no blocking kernel, serialized by "
                    "the profiler), timed by the kernels' gpu__time_duration counter (Nsight "
                    "Compute's Duration) per sample"
                  : "hot: one launch alone after the previous ones (no blocking kernel, "
                    "serialized by the profiler), timed by the kernels' gpu__time_duration "
                    "counter (Nsight Compute's Duration) per sample";
    }
    const char* timer =
        durations == KernelDurationSource::kActivityRecords
            ? "timed by CUPTI activity records (first GPU operation's start to the last one's "
              "end; CUDA events kept as a cross-check)"
            : "timed with CUDA events";
    return cold ? absl::StrCat("cold: L2 flushed, stream held by a blocking kernel, one launch ",
                               timer, " per sample")
                : absl::StrFormat("hot: %d back-to-back launches behind a blocking kernel %s per "
                                  "sample",
                                  hot_batch_size, timer);
  }
  int device_count() const override { return devices_; }

  absl::StatusOr<DeviceInfo> Describe(int device) const override {
    if (device < 0 || device >= devices_) {
      return absl::InvalidArgumentError(
          absl::StrCat("device index ", device, " out of range: ", devices_, " CUDA device(s)"));
    }
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    cudaDeviceProp p{};
    CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&p, device));
    DeviceInfo d;
    d.index = device;
    d.backend = std::string(name());
    d.name = p.name;
    d.uuid = FormatUuid(p.uuid);
    char bus_id[32] = {0};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) == cudaSuccess) d.pci_bus_id = bus_id;
    d.compute_capability_major = p.major;
    d.compute_capability_minor = p.minor;
    d.multiprocessor_count = p.multiProcessorCount;
    d.max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
    d.max_blocks_per_multiprocessor = p.maxBlocksPerMultiProcessor;
    d.registers_per_multiprocessor = p.regsPerMultiprocessor;
    d.shared_memory_per_multiprocessor_bytes = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
    d.max_threads_per_block = p.maxThreadsPerBlock;
    d.registers_per_block = p.regsPerBlock;
    d.shared_memory_per_block_bytes = static_cast<int64_t>(p.sharedMemPerBlock);
    d.shared_memory_per_block_optin_bytes = static_cast<int64_t>(p.sharedMemPerBlockOptin);
    d.warp_size = p.warpSize;
    d.l2_cache_bytes = p.l2CacheSize;
    int reserved = 0;
    if (cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) ==
        cudaSuccess) {
      d.reserved_shared_memory_per_block_bytes = reserved;
    }
    d.memory_bus_width_bits = p.memoryBusWidth;
    int clock_khz = 0, memory_clock_khz = 0;
    CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device));
    d.sm_clock_hz = clock_khz * 1e3;
    d.memory_clock_hz = memory_clock_khz * 1e3;
    // Double data rate: two transfers per memory clock over the whole bus.
    d.peak_bandwidth_bytes_per_second = 2.0 * d.memory_clock_hz * d.memory_bus_width_bits / 8.0;
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
    d.free_memory_bytes = static_cast<int64_t>(free_bytes);
    d.total_memory_bytes = static_cast<int64_t>(total_bytes);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    d.driver_version = absl::StrCat("CUDA ", FormatCudaVersion(driver));
    d.runtime_version = absl::StrCat("CUDA runtime ", FormatCudaVersion(runtime));
    return d;
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

  absl::StatusOr<std::unique_ptr<Session>> Open(int device, const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) override {
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
    if (data.placements < 1 || data.placements > kMaxPlacements) {
      return absl::InvalidArgumentError(absl::StrCat("placements ", data.placements,
                                                     " is outside [1, ", kMaxPlacements, "]"));
    }
    if (data.placement_pad_bytes < 0 || data.placement_pad_bytes > kMaxPlacementPadBytes) {
      return absl::InvalidArgumentError(absl::StrCat("placement_pad_bytes ",
                                                     data.placement_pad_bytes, " is outside [0, ",
                                                     kMaxPlacementPadBytes, "]"));
    }
    ASSIGN_OR_RETURN(const DeviceInfo info, Describe(device));
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
