#include "server/worker/wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "kernels/catalog.h"
#include "kernels/user_kernel.h"

// CBOR through nlohmann's field lists: std::optional, absl::Time and the catalog pointer need a
// serializer of their own; enums travel as their integers (one build on both ends).
namespace nlohmann {
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v.has_value()) {
      j = *v;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null()) {
      v.reset();
    } else {
      v = j.get<T>();
    }
  }
};
template <>
struct adl_serializer<absl::Time> {
  static void to_json(json& j, const absl::Time& t) { j = absl::ToUnixNanos(t); }
  static void from_json(const json& j, absl::Time& t) { t = absl::FromUnixNanos(j.get<int64_t>()); }
};
template <>
struct adl_serializer<const gpubench::KernelVariant*> {
  static void to_json(json& j, const gpubench::KernelVariant* const& k) {
    j = k == nullptr ? std::string() : std::string(k->name);
  }
  static void from_json(const json& j, const gpubench::KernelVariant*& k) {
    const std::string name = j.get<std::string>();
    if (name == gpubench::kUserKernelName) {
      k = nullptr;  // a user kernel's variant: the decoder points at the rebuilt spec's
      return;
    }
    absl::StatusOr<const gpubench::KernelVariant*> found = gpubench::FindKernel(name);
    if (!found.ok()) {
      throw std::invalid_argument(absl::StrCat("kernel '", name, "' is not in this worker's catalog"));
    }
    k = *found;
  }
};
// A user kernel crosses as its request (the code as a CBOR byte string) and is validated and
// rebuilt on the other side (MakeUserKernelSpec), never trusted as a pointer.
template <>
struct adl_serializer<std::shared_ptr<const gpubench::UserKernelSpec>> {
  static void to_json(json& j, const std::shared_ptr<const gpubench::UserKernelSpec>& u) {
    if (u == nullptr) {
      j = nullptr;
      return;
    }
    const gpubench::UserKernelRequest& r = u->request;
    j = json::object();
    j["kind"] = static_cast<int>(r.kind);
    j["code"] = json::binary(std::vector<std::uint8_t>(r.code.begin(), r.code.end()));
    j["entry"] = r.entry;
    j["family"] = r.family;
    j["dtype"] = r.dtype;
    j["defines"] = r.compile.defines;
    j["maxrregcount"] = r.compile.maxrregcount;
    j["fast_math"] = r.compile.fast_math;
    j["line_info"] = r.compile.line_info;
    j["block_size"] = r.launch.block_size;
    j["items_per_thread"] = r.launch.items_per_thread;
    j["dynamic_shared_bytes"] = r.launch.dynamic_shared_bytes;
    j["grid_size"] = r.launch.grid_size;
  }
  static void from_json(const json& j, std::shared_ptr<const gpubench::UserKernelSpec>& u) {
    if (j.is_null()) {
      u.reset();
      return;
    }
    gpubench::UserKernelRequest r;
    r.kind = static_cast<gpubench::UserCodeKind>(j.at("kind").get<int>());
    const std::vector<std::uint8_t>& code = j.at("code").get_binary();
    r.code.assign(code.begin(), code.end());
    r.entry = j.at("entry").get<std::string>();
    r.family = j.at("family").get<std::string>();
    r.dtype = j.at("dtype").get<std::string>();
    r.compile.defines = j.at("defines").get<std::vector<std::string>>();
    r.compile.maxrregcount = j.at("maxrregcount").get<int>();
    r.compile.fast_math = j.at("fast_math").get<bool>();
    r.compile.line_info = j.at("line_info").get<bool>();
    r.launch.block_size = j.at("block_size").get<int>();
    r.launch.items_per_thread = j.at("items_per_thread").get<int>();
    r.launch.dynamic_shared_bytes = j.at("dynamic_shared_bytes").get<int>();
    r.launch.grid_size = j.at("grid_size").get<int64_t>();
    // The frame bounds the size here; the worker applies its own --max_user_kernel_bytes.
    absl::StatusOr<std::shared_ptr<const gpubench::UserKernelSpec>> spec =
        gpubench::MakeUserKernelSpec(std::move(r), gpubench::kMaxWorkerFrameBytes);
    if (!spec.ok()) throw std::invalid_argument(std::string(spec.status().message()));
    u = *std::move(spec);
  }
};
}  // namespace nlohmann

namespace gpubench {

// A field added to one of these structs must be added to its list below, or it silently stops
// crossing the process boundary: these sizes break the build first (x86-64, GCC 12). Update the
// list, then the size.
static_assert(sizeof(MeasurementOptions) == 112, "new MeasurementOptions field: list it below");
static_assert(sizeof(RunSpec) == 296, "new RunSpec field: list it below");
static_assert(sizeof(DeviceInfo) == 464, "new DeviceInfo field: list it below");
static_assert(sizeof(RunResult) == 2768, "new RunResult field: list it below");
static_assert(sizeof(BackendCapabilities) == 8, "new BackendCapabilities field: list it below");

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BackendCapabilities, device_is_host, host_clock,
                                   kernel_durations, placement_pads, placement_copies,
                                   flush_and_stream_choices, hardware_counters,
                                   generates_inputs_on_device)

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunShape, elements, m, n, k)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LaunchGeometry, block_size, items_per_thread, grid_size,
                                   dynamic_shared_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MeasurementOptions, warmup_launches, min_samples, max_samples,
                                   min_time_seconds, max_noise, timeout_seconds, profile_runs,
                                   keep_samples, timer, throttle_threshold, max_duty,
                                   placement_pad_bytes, placements, l2_flush, stream)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunSpec, kernel, elements, shape, device_index,
                                   peer_device_index, geometry, block_size_source, cache_mode,
                                   measurement, verify, seed, verify_timed_samples, profile,
                                   profile_forbidden, force, scheduled, keep_buffers, buffer_chain,
                                   max_warmup_seconds, user_kernel, user_context)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UserKernelComparison, role, kernel, median_seconds, metric,
                                   value, speedup, candidates, note)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UserKernelIntegrity, launch_count_applied, launch_count_source,
                                   launch_count_unavailable, windows_checked, windows_unrecorded,
                                   windows_outside_statistics,
                                   expected_operations, foreign_kernels, timer_cross_check_applied,
                                   timer_cross_check, timer_median_seconds, kernel_median_seconds,
                                   timer_ratio, timer_tolerance, timer_tolerance_seconds,
                                   floor_seconds, floor_bound, dram_floor_seconds, l2_floor_seconds,
                                   flop_floor_seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UserKernelReport, kind, entry, lowered_name, code_sha256,
                                   architecture, compile_cache_hit, compile_seconds,
                                   signature_checked, signature_note, integrity_checks, integrity,
                                   compile_log, seed, comparisons)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(
    DeviceInfo, index, backend, name, uuid, pci_bus_id, compute_capability_major,
    compute_capability_minor, multiprocessor_count, max_threads_per_multiprocessor,
    max_blocks_per_multiprocessor, registers_per_multiprocessor,
    shared_memory_per_multiprocessor_bytes, max_threads_per_block, registers_per_block,
    shared_memory_per_block_bytes, shared_memory_per_block_optin_bytes,
    reserved_shared_memory_per_block_bytes, warp_size, l1_cache_bytes, l2_cache_bytes,
    l3_cache_bytes, memory_bus_width_bits, memory_clock_hz, sm_clock_hz,
    peak_bandwidth_bytes_per_second, total_memory_bytes, free_memory_bytes, driver_version,
    runtime_version, node_name, nvml_index, kernel_driver_version, pcie_link_current_generation,
    pcie_link_current_width, pcie_link_max_generation, pcie_link_max_width,
    pcie_link_bytes_per_second, pcie_link_rate_source)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SampleStatistics, count, min_seconds, median_seconds,
                                   mean_seconds, max_seconds, stddev_seconds, relative_noise,
                                   p5_seconds, p25_seconds, p75_seconds, p95_seconds, iqr_seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MismatchedElement, buffer, index, expected, actual)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Verification, passed, checked, sampled, where, device_checked,
                                   host_checked, method, mismatches, max_abs_error, max_rel_error,
                                   first_mismatch_buffer, first_mismatch_index,
                                   first_mismatch_expected, first_mismatch_actual, rtol, atol,
                                   first_mismatches)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelResources, available, unavailable_reason,
                                   registers_per_thread, static_shared_bytes,
                                   local_bytes_per_thread, max_threads_per_block, ptx_version,
                                   binary_version, active_blocks_per_multiprocessor)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OccupancyReport, warps_per_block, max_warps_per_multiprocessor,
                                   registers_per_warp_allocated, shared_memory_per_block_allocated,
                                   blocks_limit_warps, blocks_limit_registers,
                                   blocks_limit_shared_memory, blocks_limit_blocks,
                                   active_blocks_per_multiprocessor,
                                   active_warps_per_multiprocessor, theoretical_occupancy, limiter)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TimedSampleCheck, samples, verified, last_verified,
                                   mismatches, failure)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WindowTally, operations, kernels, foreign_kernels, windows,
                                   first_sample)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WindowAudit, unavailable_reason, source, launches_per_window,
                                   tallies, other_windows, other_first_sample, unrecorded_windows,
                                   audit_only_samples,
                                   compared_samples, kernel_median_seconds, timer_median_seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AchievedCounters, achieved_occupancy, dram_throughput_percent,
                                   unavailable_reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunPhases, host_inputs_seconds, open_seconds, sampling_seconds,
                                   verification_seconds, counters_seconds, release_seconds,
                                   buffers_reused, buffers_kept)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(
    RunResult, run_id, spec, backend, method, queued_at, started_at, finished_at, stats,
    hot_batch_size, throttled_samples, low_clock_samples, duty_cycle, noise_reached, stop_rule,
    stop_reason, notes, profile_mode, samples_taken, sampling_wall_seconds, phases, noise_known,
    below_min_samples, sample_seconds, sample_count, measured_seconds, timer, event_median_seconds,
    min_clock_hz, max_clock_hz, metric, bytes_moved, bandwidth_bytes_per_second,
    bandwidth_mean_bytes_per_second, elements_per_second, operation_unit, operations,
    operations_per_second, seconds_per_operation, percent_of_peak, peak, launch_report,
    percent_of_copy_ceiling, copy_ceiling_bytes_per_second, verification, output_hash, resources,
    occupancy, counters, waves, explanation, device, clock_event_reasons,
    clock_events_unavailable_reason, timed_sample_check, window_audit, user_kernel)

namespace {

template <typename T>
std::string Encode(const T& value) {
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(nlohmann::json(value));
  return std::string(bytes.begin(), bytes.end());
}

template <typename T>
absl::StatusOr<T> Decode(const std::string& cbor, const char* what) {
  try {
    return nlohmann::json::from_cbor(cbor).get<T>();
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("cannot decode the worker's ", what, ": ", e.what()));
  }
}

absl::Status Errno(const char* what) {
  const int e = errno;
  if (e == EPIPE || e == ECONNRESET) {
    return absl::UnavailableError(absl::StrCat(what, ": the other process closed the channel"));
  }
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(e)));
}

absl::Status ReadExactly(int fd, char* data, size_t size, bool at_frame_start) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("read");
    if (n == 0) {
      return absl::UnavailableError(done == 0 && at_frame_start
                                        ? "closed"
                                        : "closed in the middle of a frame");
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& message) {
  std::string frame(4, '\0');
  const size_t size = message.ByteSizeLong();
  if (size > kMaxWorkerFrameBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a worker message of ", size, " bytes exceeds ", kMaxWorkerFrameBytes));
  }
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  if (!message.AppendToString(&frame)) return absl::InternalError("cannot serialize a message");
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("write");
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ReadFrame(int fd, google::protobuf::MessageLite* message) {
  unsigned char header[4];
  if (absl::Status s = ReadExactly(fd, reinterpret_cast<char*>(header), 4, true); !s.ok()) {
    return s;
  }
  const uint32_t size = header[0] | (header[1] << 8) | (header[2] << 16) |
                        (static_cast<uint32_t>(header[3]) << 24);
  if (size > kMaxWorkerFrameBytes) {
    return absl::DataLossError(absl::StrCat("a frame of ", size, " bytes exceeds ",
                                            kMaxWorkerFrameBytes));
  }
  std::string body(size, '\0');
  if (absl::Status s = ReadExactly(fd, body.data(), size, false); !s.ok()) return s;
  if (!message->ParseFromString(body)) return absl::DataLossError("a frame does not parse");
  return absl::OkStatus();
}

void StatusToWire(const absl::Status& status, worker::v1::Status* out) {
  out->set_code(static_cast<int>(status.code()));
  out->set_message(std::string(status.message()));
  status.ForEachPayload([out](absl::string_view url, const absl::Cord&) {
    out->add_payload_urls(std::string(url));
  });
}

absl::Status StatusFromWire(const worker::v1::Status& wire) {
  absl::Status status(static_cast<absl::StatusCode>(wire.code()), wire.message());
  if (status.ok()) return status;
  for (const std::string& url : wire.payload_urls()) status.SetPayload(url, absl::Cord());
  return status;
}

// A user kernel's spec was rebuilt by its decoder: the run's variant is the rebuilt one's.
static absl::Status PointAtUserVariant(RunSpec* spec) {
  if (spec->user_kernel != nullptr) {
    spec->kernel = &spec->user_kernel->variant;
  } else if (spec->kernel == nullptr) {
    return absl::DataLossError("a run spec names the user kernel but carries none");
  }
  return absl::OkStatus();
}

std::string EncodeRunSpec(const RunSpec& spec) { return Encode(spec); }
absl::StatusOr<RunSpec> DecodeRunSpec(const std::string& cbor) {
  absl::StatusOr<RunSpec> spec = Decode<RunSpec>(cbor, "run spec");
  if (spec.ok()) {
    if (absl::Status s = PointAtUserVariant(&*spec); !s.ok()) return s;
  }
  return spec;
}
std::string EncodeRunResult(const RunResult& result) { return Encode(result); }
absl::StatusOr<RunResult> DecodeRunResult(const std::string& cbor) {
  absl::StatusOr<RunResult> result = Decode<RunResult>(cbor, "run result");
  if (result.ok()) {
    if (absl::Status s = PointAtUserVariant(&result->spec); !s.ok()) return s;
  }
  return result;
}
std::string EncodeCapabilities(const BackendCapabilities& can) { return Encode(can); }
absl::StatusOr<BackendCapabilities> DecodeCapabilities(const std::string& cbor) {
  return Decode<BackendCapabilities>(cbor, "backend capabilities");
}
std::string EncodeDeviceInfo(const DeviceInfo& info) { return Encode(info); }
absl::StatusOr<DeviceInfo> DecodeDeviceInfo(const std::string& cbor) {
  return Decode<DeviceInfo>(cbor, "device description");
}

}  // namespace gpubench
