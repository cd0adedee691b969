// The Backend interface: where kernel variants execute. CpuBackend runs everywhere (CI);
// CudaBackend (kernels/cuda/) runs on NVIDIA GPUs. Host-only header.
#ifndef GPUBENCH_KERNELS_BACKEND_H_
#define GPUBENCH_KERNELS_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/catalog.h"
#include "kernels/launch.h"

namespace gpubench {

// Payload URL marking a status whose cause leaves the device unusable for this process (a sticky
// CUDA error: illegal address, ECC, ...). The engine reports it and the server stops serving.
inline constexpr char kDeviceLostPayload[] = "type.gpubench.dev/device-lost";

inline bool IsDeviceLost(const absl::Status& status) {
  return status.GetPayload(kDeviceLostPayload).has_value();
}

// Payload URL marking a sample lost because the blocking kernel timed out before the timed
// launches were queued: the host was too slow, or a profiler (ncu) serializes every launch so the
// queued launches can never overlap the blocking kernel. The engine then falls back to profile
// mode (TimerStrategy::kUnblocked).
inline constexpr char kBlockingTimeoutPayload[] = "type.gpubench.dev/blocking-kernel-timeout";

inline bool IsBlockingTimeout(const absl::Status& status) {
  return status.GetPayload(kBlockingTimeoutPayload).has_value();
}

// Which implementation a Backend is: the engine asks this, never compares names.
enum class BackendKind { kCpu, kCuda };

// "cpu" / "cuda": the backend's name in results, logs and metrics.
absl::string_view BackendKindName(BackendKind kind);

// Whether `variant` has an implementation on backends of `kind`.
bool HasBinding(const KernelVariant& variant, BackendKind kind);

// Facts about one device, as `gpu-specs` in the occupancy seed prints them. Fields a backend
// cannot know are 0 or empty.
struct DeviceInfo {
  int index = 0;
  std::string backend;  // "cpu" or "cuda"
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;  // SMs; logical cores on the CPU backend
  int max_threads_per_multiprocessor = 0;
  int max_blocks_per_multiprocessor = 0;
  int registers_per_multiprocessor = 0;
  int64_t shared_memory_per_multiprocessor_bytes = 0;
  int max_threads_per_block = 0;
  int registers_per_block = 0;
  int64_t shared_memory_per_block_bytes = 0;
  int64_t shared_memory_per_block_optin_bytes = 0;
  int reserved_shared_memory_per_block_bytes = 0;  // the driver's per-block reservation
  int warp_size = 0;
  int64_t l1_cache_bytes = 0;  // CPU: L1 data cache per core
  int64_t l2_cache_bytes = 0;  // GPU: whole L2; CPU: per core
  int64_t l3_cache_bytes = 0;  // CPU: last-level cache
  int memory_bus_width_bits = 0;
  double memory_clock_hz = 0;
  double sm_clock_hz = 0;  // default (boost) SM clock
  // 2 x memory clock x bus width / 8 (double data rate); 0 when unknown (CPU backend).
  double peak_bandwidth_bytes_per_second = 0;
  int64_t total_memory_bytes = 0;
  int64_t free_memory_bytes = 0;
  std::string driver_version;
  std::string runtime_version;
  std::string node_name;  // the node (host) the device is in; set by WithNodeName
  // From NVML (kernels/nvml.h) where it is loaded and knows the device; pci_bus_id is then NVML's
  // format ("00000000:19:00.0"), as dcgm-exporter labels it.
  int nvml_index = -1;                // -1: unknown
  std::string kernel_driver_version;  // e.g. "580.159.04"; empty: unknown
  // The PCIe link, from NVML (0: unknown): generation and width when read and at most, and the
  // theoretical rate of one direction (kernels/pcie.h) from the reading pcie_link_rate_source
  // names ("max"; "current" where NVML gives no maximum; empty: no rate). The copy families'
  // percent of peak is of this rate.
  int pcie_link_current_generation = 0;
  int pcie_link_current_width = 0;
  int pcie_link_max_generation = 0;
  int pcie_link_max_width = 0;
  double pcie_link_bytes_per_second = 0;
  std::string pcie_link_rate_source;
};

// A run's placement pad (MeasurementOptions.placement_pad_bytes): the CUDA backend leaves that many
// unused bytes after each device (and peer-device) buffer of at least kPlacementPadMinBytes, so
// that large buffers do not sit exactly one buffer size apart; smaller buffers are never padded.
// Memory admission (server/engine/run_memory.h) counts the pad the same way.
inline constexpr int64_t kPlacementPadMinBytes = int64_t{1} << 20;
inline constexpr int64_t kMaxPlacementPadBytes = int64_t{1} << 30;
// At most this many copies of a run's device buffers for cold samples to rotate over
// (MeasurementOptions.placements).
inline constexpr int kMaxPlacements = 16;

// How a cold sample empties the L2 (MeasurementOptions.l2_flush): kClean, a read-only pass over
// 2 x L2 bytes; kMemset, writing an L2-sized buffer (nvbench's flush, dirty lines left behind).
enum class L2Flush { kClean, kMemset };
const char* L2FlushName(L2Flush flush);  // "clean" / "memset"
// Which stream a session times on (MeasurementOptions.stream): its own non-blocking stream, the
// legacy default stream, or cudaStreamPerThread.
enum class StreamKind { kNonBlocking, kLegacy, kPerThread };
const char* StreamKindName(StreamKind kind);  // "nonblocking" / "legacy" / "per_thread"

// The host side of one run, generated by the engine from the request's seed
// (GenerateHostData, kernels/reference.h). The session copies what it needs; the engine keeps
// this alive for the whole session to restore in-out buffers.
struct HostData {
  const KernelFamily* family = nullptr;
  DType dtype = DType::kF32;  // the variant's
  RunShape shape;
  int64_t n = 0;  // shape.elements
  uint64_t seed = 0;  // the run's seed, for buffers a backend generates itself
  // One entry per buffer of the family, in its order: the generated contents of inputs, the
  // initial contents of in-outs; empty for outputs. The CUDA backend generates the buffers
  // GeneratedOnDevice (kernels/family.h) names on the device from `seed` and never reads their
  // host copies.
  std::vector<std::vector<std::byte>> buffers;
  int peer_device = -1;  // the second device where the family has a peer buffer; -1: none
  // Unused bytes after each device buffer of >= kPlacementPadMinBytes (0: none); set by the engine
  // from the run's measurement options. The CPU backend ignores it.
  int64_t placement_pad_bytes = 0;
  // Copies of the device buffers that cold samples rotate over (>= 1; MeasurementOptions.
  // placements). The CUDA backend allocates them all at Open; the CPU backend ignores it.
  int placements = 1;
  L2Flush l2_flush = L2Flush::kClean;          // the CPU backend ignores both
  StreamKind stream = StreamKind::kNonBlocking;
  // Verify timed samples too (user kernels; kernels/timed_check.h chooses them from `seed`):
  // before a chosen sample its inputs are generated from a fresh seed and its outputs poisoned,
  // after it its output is checked on the device, then the run's inputs are restored. The CUDA
  // backend only, and only where Session::CanVerifyOnDevice; the CPU backend ignores it.
  bool verify_timed_samples = false;
  // Buffer reuse within a sweep (docs/measurement.md, "buffer reuse"): non-zero, the sweep chain
  // this run belongs to. Open then takes the buffers its device's cache kept for this chain where
  // they match the run's (kernels/buffer_cache.h: BufferKey), and fills them as it fills new ones
  // (inputs generated or uploaded, in-outs refilled, outputs poisoned); any other Open frees what
  // the cache holds first. 0: never reuses.
  uint64_t reuse_chain = 0;
};

// What the timed-sample check (HostData::verify_timed_samples) did in one run.
struct TimedSampleCheck {
  int64_t samples = 0;        // timed samples taken (cold or hot, kept or discarded)
  int64_t verified = 0;       // of them, verified
  int64_t last_verified = 0;  // the last verified sample's 1-based index; 0: none
  int64_t mismatches = 0;  // in the first verified sample that differed
  std::string failure;     // that sample in words; empty: every verified sample matched
};

// Read-back of a run: one entry per buffer of the family; outputs and in-outs filled.
using BufferContents = std::vector<std::vector<std::byte>>;

// Per buffer of the family: the element indices (ascending) the host cross-checks of a run
// verified on the device (HostSampleIndices, kernels/host_cross_check.h); empty for inputs.
using SampleIndices = std::vector<std::vector<int64_t>>;

// One element outside the tolerance, as the device check found it.
struct DeviceMismatch {
  int buffer = 0;
  int64_t index = 0;
  double expected = 0;  // the device reference's value
  double actual = 0;
};

// What Session::VerifyOnDevice found: every element of every verified buffer compared on the
// device with the family's device reference (kernels/device_check.h), plus what the host needs
// for its cross-check and the output hash, so that nothing else is read back.
struct DeviceVerifyReport {
  int64_t checked = 0;     // elements compared on the device, over every verified buffer
  int64_t mismatches = 0;  // of them, outside the tolerance (NaN counts)
  double max_abs_error = 0;
  double max_rel_error = 0;
  // The lowest-index mismatches in buffer order, at most kMaxReportedMismatches.
  std::vector<DeviceMismatch> first_mismatches;
  // sampled[b]: the elements of buffer b at the request's SampleIndices[b], packed in that order.
  BufferContents sampled;
  // Per buffer: OutputHash's chunk hashes of its bytes and the bytes hashed (0 for inputs), for
  // OutputHashFromChunks (kernels/reference.h).
  std::vector<std::vector<uint64_t>> chunk_hashes;
  std::vector<int64_t> hashed_bytes;
};

// Resources of the compiled kernel, for the occupancy section. `available` is false where the
// backend has none (CPU, library-chosen launches).
struct KernelResources {
  bool available = false;
  std::string unavailable_reason;
  int registers_per_thread = 0;
  int static_shared_bytes = 0;
  int local_bytes_per_thread = 0;
  int max_threads_per_block = 0;
  int ptx_version = 0;
  int binary_version = 0;
  int active_blocks_per_multiprocessor = 0;  // from the occupancy API for this launch
};

// Hardware-counter readings of one profiling pass (never mixed into timed samples).
struct AchievedCounters {
  std::optional<double> achieved_occupancy;       // sm__warps_active...pct / 100, 0..1
  std::optional<double> dram_throughput_percent;  // dram__throughput...pct_of_peak_sustained_elapsed
  std::string unavailable_reason;                 // why the values are absent
};

// How a session times its samples (Session::SetTimer), chosen once per run.
enum class TimerStrategy {
  // The backend's own clock. CUDA: events around the timed launches, queued while nvbench's
  // blocking kernel holds the stream where the family allows it (KernelFamily::blocking_kernel);
  // the blocking kernel also reads the SM clock. CPU: the host's steady clock.
  kBackendClock,
  // CUDA events around launches on an idle stream, without the blocking kernel (profile mode), so
  // that a serializing profiler (ncu) or a tracer (nsys) sees plain launches; times include the
  // launch latency. CPU: as kBackendClock.
  kUnblocked,
  // CUPTI activity records: the first GPU operation's start to the last one's end of the timed
  // launches (kernels, copies; gaps included); the CUDA events of the same launches are kept.
  kActivityRecords,
  // The hardware counter gpu__time_duration of each kernel, summed (Nsight Compute's Duration).
  // Every launch runs alone under CUPTI's range profiler: no blocking kernel and no clock
  // reading; the events around the launches then include the profiler's overhead.
  kTimeCounter,
};

// Where a timed window's figures came from (Session::AuditWindows).
enum class WindowSource {
  // CUPTI activity records: the operations the window's API calls issued (external correlation)
  // and any other kernel of the run's context that started inside the window.
  kActivityRecords,
  // The gpu__time_duration range profiler (TimerStrategy::kTimeCounter, which holds CUPTI): the
  // kernels it profiled in the window; copies, memsets and their origin are not seen.
  kRangeProfiler,
};
const char* WindowSourceName(WindowSource source);  // "cupti_activity" / "gpu_time_profiler"

// What ran in one timed sample's window, as the device recorded it (Session::AuditWindows).
struct WindowActivity {
  int operations = 0;  // GPU operations (kernels, copies, memsets) the timed launches issued
  int kernels = 0;     // of them, kernels
  // Kernels of the run's context that the timed launches did not issue but that started inside
  // the window (another stream's), and kernels launched from the device (CDP, device graphs)
  // since it began: none where only the host's launches run.
  int foreign_kernels = 0;
  // The operations' span, the first one's start to the last one's end: one kernel's own duration
  // for a one-launch sample, close to Nsight Compute's gpu__time_duration (docs/timers.md).
  double seconds = 0;
};

// One sample as the session's timer measured it.
struct SampleRecord {
  static SampleRecord Of(double seconds) {
    SampleRecord r;
    r.seconds = seconds;
    return r;
  }
  double seconds = 0;  // the whole sample: all `batch` launches of a hot sample
  // kActivityRecords, kTimeCounter: the CUDA events' seconds around the same launches.
  std::optional<double> event_seconds;
  // The SM clock while the blocking kernel held the stream just before the timed launches;
  // nullopt where there was none (CPU, no blocking kernel, kTimeCounter).
  std::optional<double> clock_hz;
  // While Session::AuditWindows records: whether this sample's window was recorded (`window`
  // then says what ran in it, or is nullopt where no complete record came back). Duration timers
  // record every sample; under the CUDA-event timer only randomly chosen ones are traced
  // (WindowAuditChooser), and since tracing lengthens the launch such a sample is `audit_only`:
  // the engine counts its window and keeps its time out of the statistics.
  bool audited = false;
  bool audit_only = false;
  std::optional<WindowActivity> window;
};

// What a backend does and honours, so that the engine asks about behaviour, never which backend
// it is talking to. Every field false is a backend that honours none of the choices.
struct BackendCapabilities {
  // Device buffers are host memory: memory admission counts them against the host; the devices
  // are not GPUs that NVML knows.
  bool device_is_host = false;
  // Samples are timed by the host's steady clock (SampleTimer cpu_clock), not CUDA events.
  bool host_clock = false;
  // kActivityRecords and kTimeCounter can be chosen (CUPTI), where no other tool holds CUPTI.
  bool kernel_durations = false;
  // Honoured HostData options: the placement pad, placement copies (> 1), the L2 flush kind and
  // the stream kind. A backend that ignores one says so in the result's notes.
  bool placement_pads = false;
  bool placement_copies = false;
  bool flush_and_stream_choices = false;
  // ProfileCounters measures hardware counters (else it only says why it cannot).
  bool hardware_counters = false;
  // Open fills the buffers GeneratedOnDevice (kernels/family.h) names on the device from
  // HostData::seed, never reading their host copies: the engine then skips generating those
  // copies where verification runs on the device too.
  bool generates_inputs_on_device = false;
};

// One prepared run on one device: buffers allocated and filled. Not thread-safe: a session is
// used by its device's worker thread only. Destruction frees every buffer.
class Session {
 public:
  virtual ~Session() = default;

  virtual const LaunchGeometry& geometry() const = 0;

  // Runs `launches` launches back to back and waits for them (outside any measurement).
  virtual absl::Status Warmup(int launches) = 0;

  // Chooses the timer of the samples that follow (kBackendClock until called). FAILED_PRECONDITION
  // saying why where the backend cannot time that way (no CUPTI, another tool holding it, the CPU
  // backend's kernel durations).
  virtual absl::Status SetTimer(TimerStrategy strategy) {
    if (strategy == TimerStrategy::kBackendClock || strategy == TimerStrategy::kUnblocked) {
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError("this backend records no kernel durations");
  }

  // From now until the next SetTimer call, timed samples record what ran in their windows
  // (SampleRecord::audited / window), whatever the timer: every sample under a duration timer,
  // randomly chosen audit-only samples under CUDA events (SampleRecord). The integrity checks of
  // user kernels count the launches there and compare the timer with the kernels' own durations.
  // Returns where the figures come from; FAILED_PRECONDITION with the reason where nothing can
  // record them (no CUPTI, another tool holding it, profile launches, a backend without device
  // activity).
  virtual absl::StatusOr<WindowSource> AuditWindows() {
    return absl::FailedPreconditionError("this backend records no device activity");
  }

  // Cold sample: flushes the caches, then times exactly one launch.
  virtual absl::StatusOr<SampleRecord> ColdSample() = 0;

  // Hot sample: times `batch` back-to-back launches together (the record is the whole batch's).
  virtual absl::StatusOr<SampleRecord> HotSample(int batch) = 0;

  // Named range around a run for timeline tools (NVTX on CUDA; nothing elsewhere). Nested pairs.
  virtual void PushRange(const std::string& /*name*/) {}
  virtual void PopRange() {}

  // Restores the in-out buffers, poisons the outputs, runs one launch and copies every output and
  // in-out buffer into (*out)[i] (resized to the buffer's bytes; inputs stay empty).
  virtual absl::Status RunOnceAndRead(BufferContents* out) = 0;

  // Whether VerifyOnDevice can check this run: the CUDA backend, a variant with a device check
  // (kernels/device_check.h) whose verified buffers are all in the run's device memory.
  virtual bool CanVerifyOnDevice() const { return false; }

  // As RunOnceAndRead (in-outs restored, outputs poisoned, one launch; placement copies each run
  // once more and must give copy 0's bytes), but every verified element is compared on the
  // device, and only `samples` (per buffer, for the host's cross-check) and the output hash's
  // chunk hashes come back. FAILED_PRECONDITION where CanVerifyOnDevice is false.
  virtual absl::StatusOr<DeviceVerifyReport> VerifyOnDevice(const SampleIndices& /*samples*/) {
    return absl::FailedPreconditionError("this backend verifies on the host");
  }

  // What the variant's setup function said it chose ("cuBLASLt algo 23, tile 256x128"); empty
  // where it has none.
  virtual std::string LaunchReport() const { return ""; }

  // What the timed-sample check did, where HostData::verify_timed_samples asked for it and the
  // session applies it; nullopt otherwise.
  virtual std::optional<TimedSampleCheck> TimedCheck() const { return std::nullopt; }

  virtual KernelResources Resources() const = 0;

  // Whether Open took this session's buffers from its device's cache (HostData::reuse_chain)
  // instead of allocating them.
  virtual bool BuffersReused() const { return false; }

  // Hands this session's buffers to its device's cache when it is destroyed, for the next Open
  // of the same HostData::reuse_chain and BufferKey, instead of freeing them. Call after the
  // run's last launch, only for a run that succeeded. False where nothing will be kept (no chain,
  // or a backend without a cache): the buffers are freed as usual.
  virtual bool KeepBuffers() { return false; }

  // Runs one extra launch under the hardware-counter profiler. Slow (kernel replay); call after
  // sampling, never between samples.
  virtual AchievedCounters ProfileCounters() = 0;
};

// Limits a worker sets on its device's context before any run, so that a kernel cannot take
// much of the device through the device runtime (0: the driver's default).
struct DeviceLimits {
  int64_t malloc_heap_bytes = 0;  // device-side malloc heap
  int64_t printf_fifo_bytes = 0;  // device-side printf buffer
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  absl::string_view name() const { return BackendKindName(kind()); }

  // What this backend does and honours. Thread-safe; constant for the backend's life.
  virtual BackendCapabilities capabilities() const = 0;

  // How one sample is timed, in words, for a result's method text: `cold` (one launch after a
  // cache flush) or hot (`hot_batch_size` back-to-back launches), by `timer`. `blocking`: the
  // family's launches wait behind the blocking kernel (KernelFamily::blocking_kernel); false for
  // families that synchronize with the host (pageable copies), timed on an idle stream.
  virtual std::string SampleMethod(bool cold, int hot_batch_size, TimerStrategy timer,
                                   bool blocking) const = 0;

  // Number of devices this backend drives. Thread-safe.
  virtual int device_count() const = 0;

  // Current facts about `device` (free memory is read now). Thread-safe.
  virtual absl::StatusOr<DeviceInfo> Describe(int device) const = 0;

  // Applies `limits` to `device` (creating its context where the backend has one). The CPU
  // backend has no such limits: OK. Call once, before any Open on the device.
  virtual absl::Status ApplyDeviceLimits(int /*device*/, const DeviceLimits& /*limits*/) {
    return absl::OkStatus();
  }

  // Blocks of `variant` at `block_size` threads that fit on one multiprocessor (the occupancy
  // API), or 0 where unknown (CPU, library launches). Thread-safe.
  virtual int MaxActiveBlocksPerMultiprocessor(const KernelVariant& /*variant*/, int /*device*/,
                                               int /*block_size*/) const {
    return 0;
  }

  // OK when this backend can run one launch of `variant` at `shape`; RESOURCE_EXHAUSTED naming the
  // limit otherwise (the CPU emulation caps the operations per launch). Checked when a request is
  // resolved, before any input is generated, and again by Open. Thread-safe.
  virtual absl::Status CheckLaunchSize(const KernelVariant& /*variant*/,
                                       const RunShape& /*shape*/) const {
    return absl::OkStatus();
  }

  // Allocates and fills the buffers of a run of `variant` at `data.shape` (each where its
  // family's declaration places it) on `device` (as Describe gave it for this run: the session
  // trusts it) and runs the variant's setup function. RESOURCE_EXHAUSTED when the buffers cannot
  // fit. Call from the device's worker thread only.
  virtual absl::StatusOr<std::unique_ptr<Session>> Open(const DeviceInfo& device,
                                                        const KernelVariant& variant,
                                                        const LaunchGeometry& geometry,
                                                        const HostData& data) = 0;

  // Frees the buffers a session kept on `device` (Session::KeepBuffers) where any are kept: the
  // engine calls it when its sweep will not use them (a run of another chain or key is next, or
  // none is). Thread-safe.
  virtual void ReleaseCachedBuffers(int /*device*/) {}

  // Open on device `device` as Describe gives it now (tests and tools; the engine passes the
  // description it made for the run).
  absl::StatusOr<std::unique_ptr<Session>> Open(int device, const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) {
    absl::StatusOr<DeviceInfo> info = Describe(device);
    if (!info.ok()) return info.status();
    return Open(*info, variant, geometry, data);
  }
};

// Wraps `backend` so that every successful Describe() is passed through `amend`, which adds facts
// the backend itself does not know; everything else is forwarded unchanged. Thread-safe when
// `amend` is (Describe is called from several threads).
std::unique_ptr<Backend> WithDescribeAmendment(std::unique_ptr<Backend> backend,
                                               std::function<void(DeviceInfo&)> amend);

// Wraps `backend` so that every Describe() names the node the devices are in (the server's
// --node_name). Everything else is forwarded unchanged.
std::unique_ptr<Backend> WithNodeName(std::unique_ptr<Backend> backend, std::string node_name);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_BACKEND_H_
