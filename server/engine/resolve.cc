#include "server/engine/resolve.h"

#include <algorithm>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/echo.h"
#include "common/measurement_options.h"
#include "common/sizes.h"
#include "common/status_macros.h"
#include "server/engine/resolve_user_kernel.h"
#include "server/engine/run_memory.h"

namespace gpubench {

namespace {

// Blocks of `block` threads x `items` launch items that cover the run: ceil(n / (block x items)).
int64_t CoveringGrid(const RunSpec& spec, int block, int items) {
  const int64_t per_block = int64_t{block} * items;
  return (LaunchItems(*spec.kernel, spec.shape) + per_block - 1) / per_block;
}

// The kernel: required, and in the catalog.
absl::StatusOr<const KernelVariant*> ResolveKernel(const RunRequest& request) {
  if (request.kernel.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel is required; valid kernels: ", KernelNamesForHelp()));
  }
  return FindKernel(request.kernel);
}

// The run's size: the family's shape rule (GEMM's m, n, k validates the request's size itself),
// within the server's element limit.
absl::StatusOr<RunShape> ResolveRunShape(const RunRequest& request, const KernelVariant& k,
                                         const ServerLimits& limits) {
  if (request.elements < 1 && k.family->resolve_shape == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("elements must be at least 1 (got ", request.elements, ")"));
  }
  ASSIGN_OR_RETURN(const RunShape shape,
                   ResolveShape(*k.family, request.elements, request.shape));
  if (shape.elements > limits.max_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "elements = ", shape.elements, " exceeds this server's limit of ", limits.max_elements,
        " (", FormatElementCount(limits.max_elements), "; flag --max_elements)"));
  }
  return shape;
}

// The device: by UUID when the request names one, else by index.
absl::StatusOr<int> ResolveDeviceIndex(const RunRequest& request, const Backend& backend) {
  int device_index = request.device_index;
  if (!request.device_uuid.empty()) {
    device_index = DeviceIndexOfUuid(backend, request.device_uuid);
    if (device_index < 0) {
      return absl::NotFoundError(absl::StrCat("no device with uuid '",
                                              EchoForMessage(request.device_uuid),
                                              "' on this server (ListDevices shows them)"));
    }
  }
  if (device_index < 0 || device_index >= backend.device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("device_index ", device_index,
                                                   " is out of range: backend '", backend.name(),
                                                   "' has ", backend.device_count(),
                                                   " device(s), indices 0..",
                                                   backend.device_count() - 1));
  }
  return device_index;
}

// The second device of a family with a peer buffer (default: the next device), or -1; a peer
// named for a one-device family is refused.
absl::StatusOr<int> ResolvePeerDevice(const RunRequest& request, const KernelVariant& k,
                                      const Backend& backend, int device_index) {
  if (!NeedsPeerDevice(*k.family)) {
    if (request.peer_device_index.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", k.name, " runs on one device; omit peer_device_index"));
    }
    return -1;
  }
  if (backend.device_count() < 2) {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel ", k.name, " copies between two devices; backend '", backend.name(),
                     "' has ", backend.device_count(), " device"));
  }
  const int peer =
      request.peer_device_index.value_or((device_index + 1) % backend.device_count());
  if (peer < 0 || peer >= backend.device_count() || peer == device_index) {
    return absl::InvalidArgumentError(absl::StrCat("peer_device_index ", peer,
                                                   " must be another device than ", device_index,
                                                   ", in 0..", backend.device_count() - 1));
  }
  return peer;
}

absl::Status CheckRequestedBlockSize(const KernelVariant& k, int block_size,
                                     const DeviceInfo& device) {
  if (!k.default_policy.block_size_tunable) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel ", k.name, " picks its own launch configuration; omit block_size for it"));
  }
  if (block_size < 32 || block_size % 32 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block_size = ", block_size, " must be a positive multiple of the warp size 32"));
  }
  const int max_block = device.max_threads_per_block > 0 ? device.max_threads_per_block : 1024;
  if (block_size > max_block) {
    return absl::InvalidArgumentError(absl::StrCat("block_size = ", block_size,
                                                   " exceeds the device maximum of ", max_block,
                                                   " threads per block"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequestedItems(const KernelVariant& k, int items_per_thread) {
  if (ItemsPerThreadAllowed(k, items_per_thread)) return absl::OkStatus();
  if (!ItemsPerThreadTunable(k)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel ", k.name, " fixes items_per_thread at ", k.default_policy.items_per_thread,
        " in its code; omit items_per_thread for it"));
  }
  return absl::InvalidArgumentError(absl::StrCat("items_per_thread = ", items_per_thread,
                                                 " is not allowed for ", k.name, ": use ",
                                                 ItemsPerThreadRule(k)));
}

// Block size and items per thread: the request's values, else the tuned default of this device,
// else the catalog's; the catalog's small-grid block size where the grid would not fill the
// device. Sets the geometry's block size and items and the spec's block_size_source.
absl::Status ChooseBlockAndItems(const RunRequest& request, const DeviceInfo& device,
                                 const TunedDefaults* tuned, RunSpec* spec) {
  const KernelVariant& k = *spec->kernel;
  // This device's tuned default, if any (held by value: GCC 12 at -O2 reads the payload of an
  // optional tested with has_value() here as maybe uninitialized).
  bool has_tuned = false;
  TunedLaunch tuned_launch;
  if (tuned != nullptr && k.default_policy.block_size_tunable) {
    if (std::optional<TunedLaunch> found = tuned->Get(spec->device_index, k.name)) {
      has_tuned = true;
      tuned_launch = *found;
    }
  }
  int block = k.default_policy.block_size;
  int items = k.default_policy.items_per_thread;
  bool from_request = false, from_tuned = false;
  if (request.block_size != 0) {
    RETURN_IF_ERROR(CheckRequestedBlockSize(k, request.block_size, device));
    block = request.block_size;
    from_request = true;
  } else if (has_tuned) {
    block = tuned_launch.block_size;
    from_tuned = true;
  }
  if (request.items_per_thread != 0) {
    RETURN_IF_ERROR(CheckRequestedItems(k, request.items_per_thread));
    items = request.items_per_thread;
    from_request = true;
  } else if (has_tuned && tuned_launch.items_per_thread != 0) {
    items = tuned_launch.items_per_thread;
    from_tuned = true;
  }
  spec->block_size_source = from_request && from_tuned ? "request+tuned"
                            : from_request             ? "request"
                            : from_tuned               ? "tuned"
                                                       : "catalog";
  if (!from_request && !from_tuned && k.default_policy.small_grid_block_size > 0 &&
      device.multiprocessor_count > 0 && device.max_threads_per_multiprocessor >= block) {
    const int64_t resident_blocks =
        int64_t{device.multiprocessor_count} * (device.max_threads_per_multiprocessor / block);
    if (CoveringGrid(*spec, block, items) < kSmallGridWaves * resident_blocks) {
      block = k.default_policy.small_grid_block_size;
      spec->block_size_source = "catalog (small grid)";
    }
  }
  spec->geometry.block_size = block;
  spec->geometry.items_per_thread = items;
  return absl::OkStatus();
}

absl::Status CheckComputeCapability(const KernelVariant& k, const DeviceInfo& device) {
  if (k.min_compute_capability > 0 && device.compute_capability_major > 0 &&
      device.compute_capability_major * 10 + device.compute_capability_minor <
          k.min_compute_capability) {
    return absl::FailedPreconditionError(absl::StrCat(
        "kernel ", k.name, " needs compute capability ", k.min_compute_capability / 10, ".",
        k.min_compute_capability % 10, " or newer; device ", device.index, " (", device.name,
        ") is ", device.compute_capability_major, ".", device.compute_capability_minor));
  }
  return absl::OkStatus();
}

// The grid: enough blocks to cover the elements; for grid-stride kernels at most one resident
// grid (every SM full of blocks once: the occupancy API where the backend has it, else the thread
// limit), the kernel striding over the rest.
absl::Status ChooseGrid(const Backend& backend, const DeviceInfo& device, RunSpec* spec) {
  const KernelVariant& k = *spec->kernel;
  const int block = spec->geometry.block_size;
  spec->geometry.dynamic_shared_bytes =
      static_cast<int>(DynamicSharedBytes(k, block, spec->geometry.items_per_thread));
  spec->geometry.grid_size = CoveringGrid(*spec, block, spec->geometry.items_per_thread);
  if (k.default_policy.grid_stride && device.multiprocessor_count > 0 &&
      device.max_threads_per_multiprocessor > 0) {
    int per_sm = backend.MaxActiveBlocksPerMultiprocessor(k, spec->device_index, block);
    if (per_sm <= 0) {
      per_sm = device.max_threads_per_multiprocessor / block;
      if (device.max_blocks_per_multiprocessor > 0) {
        per_sm = std::min(per_sm, device.max_blocks_per_multiprocessor);
      }
    }
    if (k.default_policy.max_resident_blocks_per_sm > 0) {
      per_sm = std::min(per_sm, k.default_policy.max_resident_blocks_per_sm);
    }
    spec->geometry.grid_size = std::max<int64_t>(
        1, std::min<int64_t>(spec->geometry.grid_size,
                             int64_t{device.multiprocessor_count} * std::max(1, per_sm)));
  }
  constexpr int64_t kMaxGrid = (int64_t{1} << 31) - 1;
  if (spec->geometry.grid_size > kMaxGrid) {
    return absl::InvalidArgumentError(absl::StrCat(
        "elements = ", spec->elements, " with block_size ", block, " needs ",
        spec->geometry.grid_size, " blocks, over the grid limit of ", kMaxGrid));
  }
  return absl::OkStatus();
}

// A fraction given as a percent (max_noise 5 for 5%): said so, with the fraction meant. Values
// just over 1 (max_duty 1.5) get the plain range message.
absl::Status RefuseAsPercent(const OptionSpec& o, double value) {
  if (!(o.fraction && value >= 2 && value <= 100)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "measurement.%s = %g looks like a percent: gpubench takes a fraction (%s; nvbench's "
      "options take percent). For %g%% pass %g",
      o.name, value, o.unit, value, value / 100));
}

// Every row of the option table (common/measurement_options.h): the request's value, else the
// server's default, else the table's; checked against the row's range, the server's bound where
// it moves one. Then the checks across options.
absl::Status ResolveMeasurement(const RunRequest& request, const ServerLimits& limits,
                                RunSpec* spec) {
  std::optional<CacheMode> cache_mode;
  MeasurementOptions& r = spec->measurement;
  for (const OptionSpec& o : kMeasurementOptions) {
    std::optional<double> value = GetOption(request.measurement, request.cache_mode, o.id);
    if (value.has_value() && o.zero_is_unset && *value == 0) value.reset();
    const bool asked = value.has_value();
    if (!asked) {
      value = GetOption(limits.defaults, std::nullopt, o.id).value_or(o.default_value);
      // The default maximum respects the server's cap and the minimum asked for (a server with a
      // lower max_samples_limit must still accept requests that leave max_samples unset).
      if (o.id == OptionId::kMaxSamples) {
        value = std::max<double>(std::min(*value, MaxOf(limits, o.id)), r.min_samples);
      }
    }
    if (HasRange(o)) {
      RETURN_IF_ERROR(RefuseAsPercent(o, *value));
      RETURN_IF_ERROR(
          CheckOptionRange(o, *value, MaxOf(limits, o.id), absl::StrCat("measurement.", o.name)));
    }
    SetOption(&r, &cache_mode, o.id, *value);
  }
  spec->cache_mode = cache_mode.value_or(CacheMode::kCold);
  if (r.max_samples < r.min_samples) {
    return absl::InvalidArgumentError(absl::StrCat(
        "measurement.max_samples = ", r.max_samples, " is below measurement.min_samples = ",
        r.min_samples, ": sampling stops at max_samples, so it must be at least that"));
  }
  if (UsesCupti(r.timer) && r.profile_runs > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "measurement.timer = ", TimerChoiceName(r.timer),
        " with profile_runs: profile mode times each launch with CUDA events (CUPTI belongs to "
        "the profiler then); use timer auto or events"));
  }
  return absl::OkStatus();
}

// More than one placement needs buffers the session can allocate again at will: all on the run's
// device, and no launch state made for the first copy (cuBLASLt's plan and workspace).
absl::Status CheckPlacements(const MeasurementOptions& m, const KernelVariant& k) {
  if (m.placements <= 1) return absl::OkStatus();
  if (k.cuda_setup != nullptr || k.cpu_setup != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "measurement.placements = ", m.placements, ": ", k.name,
        " keeps launch state made for its buffers, so it runs on one placement (1)"));
  }
  for (const BufferSpec& b : k.family->buffers) {
    if (b.placement != Placement::kDevice) {
      return absl::FailedPreconditionError(absl::StrCat(
          "measurement.placements = ", m.placements, ": ", k.name,
          " has buffers in host or peer memory; only families whose buffers are all on the "
          "run's device rotate over placements"));
    }
  }
  return absl::OkStatus();
}

// The timer choice against the backend: the CPU backend times with its steady clock and has no
// CUPTI (auto and events both mean that clock there).
absl::Status CheckTimer(const MeasurementOptions& m, const Backend& backend) {
  if (UsesCupti(m.timer) && !backend.capabilities().kernel_durations) {
    return absl::FailedPreconditionError(absl::StrCat(
        "measurement.timer = ", TimerChoiceName(m.timer), ": the ",
        absl::AsciiStrToUpper(backend.name()), " backend has no CUPTI; its samples are timed with ",
        backend.capabilities().host_clock ? "the host's steady clock" : "its own clock",
        " (timer auto or events)"));
  }
  return absl::OkStatus();
}

// Verification, profiling, force, the seed (fresh and random unless the request fixes one,
// echoed in the result) and the warm-up bound.
void ResolveRunOptions(const RunRequest& request, const ServerLimits& limits, RunSpec* spec) {
  spec->verify = request.verify.value_or(true);
  spec->profile = request.profile && limits.allow_profiling;
  spec->profile_forbidden = request.profile && !limits.allow_profiling;
  spec->force = request.force;
  if (request.seed.has_value()) {
    spec->seed = *request.seed;
  } else {
    std::random_device rd;
    spec->seed = (static_cast<uint64_t>(rd()) << 32) | rd();
  }
  spec->max_warmup_seconds = limits.max_warmup_seconds;
}

// Memory: every buffer of the run must fit in what the device and the host (the smaller of
// MemAvailable and the cgroup's limit) have free now. The engine checks again at run start.
absl::Status CheckMemoryNow(const RunSpec& spec, const Backend& backend, const DeviceInfo& device,
                            const ServerLimits& limits) {
  // Before any input is generated: a launch the backend refuses (the CPU emulation's operations
  // cap) must fail now, not after gigabytes of inputs were made for it.
  RETURN_IF_ERROR(backend.CheckLaunchSize(*spec.kernel, spec.shape));
  const HostMemoryBudget host = ReadHostMemoryBudget(limits.host_memory);
  const BackendCapabilities can = backend.capabilities();
  return CheckRunMemoryFits(RunMemoryOf(spec, can, device), device, can.device_is_host,
                            host.available_bytes(), host.Describe());
}

}  // namespace

int DeviceIndexOfUuid(const Backend& backend, absl::string_view uuid) {
  for (int d = 0; d < backend.device_count(); ++d) {
    absl::StatusOr<DeviceInfo> info = backend.Describe(d);
    if (info.ok() && info->uuid == uuid) return d;
  }
  return -1;
}

absl::Status CheckSharedMemoryFits(const KernelVariant& kernel, int block_size,
                                   int items_per_thread, const DeviceInfo& device) {
  const int64_t needed = DynamicSharedBytes(kernel, block_size, items_per_thread);
  const int64_t limit =
      std::max(device.shared_memory_per_block_optin_bytes, device.shared_memory_per_block_bytes);
  if (needed > 0 && limit > 0 && needed + kernel.static_shared_bytes > limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block_size ", block_size, " x items_per_thread ", items_per_thread, " needs ", needed,
        " bytes of shared memory per block for ", kernel.name, "; device ", device.index,
        " allows at most ", limit));
  }
  return absl::OkStatus();
}

absl::StatusOr<RunSpec> ResolveRunRequest(const RunRequest& request, const Backend& backend,
                                          const ServerLimits& limits,
                                          const TunedDefaults* tuned) {
  RunSpec spec;
  if (request.user_kernel.has_value()) {
    RETURN_IF_ERROR(ResolveUserKernel(request, limits, &spec));  // resolve_user_kernel.cc
  } else {
    ASSIGN_OR_RETURN(spec.kernel, ResolveKernel(request));
  }
  ASSIGN_OR_RETURN(spec.shape, ResolveRunShape(request, *spec.kernel, limits));
  spec.elements = spec.shape.elements;
  ASSIGN_OR_RETURN(spec.device_index, ResolveDeviceIndex(request, backend));
  ASSIGN_OR_RETURN(const DeviceInfo device, backend.Describe(spec.device_index));
  ASSIGN_OR_RETURN(spec.peer_device_index,
                   ResolvePeerDevice(request, *spec.kernel, backend, spec.device_index));
  RETURN_IF_ERROR(ChooseBlockAndItems(request, device, tuned, &spec));
  RETURN_IF_ERROR(CheckComputeCapability(*spec.kernel, device));
  RETURN_IF_ERROR(CheckSharedMemoryFits(*spec.kernel, spec.geometry.block_size,
                                        spec.geometry.items_per_thread, device));
  RETURN_IF_ERROR(ChooseGrid(backend, device, &spec));
  if (spec.user_kernel != nullptr) RETURN_IF_ERROR(FinishUserKernelRun(device, &spec));
  RETURN_IF_ERROR(ResolveMeasurement(request, limits, &spec));
  RETURN_IF_ERROR(CheckTimer(spec.measurement, backend));
  RETURN_IF_ERROR(CheckPlacements(spec.measurement, *spec.kernel));
  ResolveRunOptions(request, limits, &spec);
  RETURN_IF_ERROR(CheckMemoryNow(spec, backend, device, limits));
  return spec;
}

}  // namespace gpubench
