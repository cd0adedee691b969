#include "client/output.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/sizes.h"

namespace gpubench::client {
namespace {

// Left-aligned columns sized to their widest cell.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      absl::StrAppend(&text, cells[c], std::string(width[c] - cells[c].size(), ' '),
                      c + 1 < cells.size() ? "  " : "");
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    absl::StrAppend(&out, text, "\n");
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

std::string Csv(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  auto quote = [](const std::string& cell) {
    if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
    std::string q = "\"";
    for (char ch : cell) {
      if (ch == '"') q += '"';
      q += ch;
    }
    return q + "\"";
  };
  std::string out;
  std::vector<std::string> quoted;
  for (const auto& h : header) quoted.push_back(quote(h));
  absl::StrAppend(&out, absl::StrJoin(quoted, ","), "\n");
  for (const auto& row : rows) {
    quoted.clear();
    for (const auto& cell : row) quoted.push_back(quote(cell));
    absl::StrAppend(&out, absl::StrJoin(quoted, ","), "\n");
  }
  return out;
}

std::string Bytes(int64_t bytes) {
  if (bytes <= 0) return "-";
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.1f GiB", bytes / double(1 << 30));
  if (bytes >= (int64_t{1} << 20)) return absl::StrFormat("%.1f MiB", bytes / double(1 << 20));
  if (bytes >= 1024) return absl::StrFormat("%.0f KiB", bytes / 1024.0);
  return absl::StrCat(bytes, " B");
}

const char* ModeName(v1::CacheMode mode) { return mode == v1::HOT ? "hot" : "cold"; }

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

std::string JsonLine(const v1::RunSweepResponse& event) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;  // one object, one line
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(event, &json, options);
  return json + "\n";
}

std::string JsonErrorLine(int code, const std::string& message) {
  v1::RunSweepResponse event;
  event.mutable_error()->set_code(code);
  event.mutable_error()->set_message(message);
  return JsonLine(event);
}

std::string RenderKernels(const v1::ListKernelsResponse& response, Format format) {
  if (format == Format::kJson) return ToJson(response);
  const std::vector<std::string> header = {"name",        "family",    "dtype",     "bytes/elem",
                                           "block",       "items",     "max_items", "min_cc",
                                           "description", "provenance"};
  std::vector<std::vector<std::string>> rows;
  for (const v1::KernelInfo& k : response.kernels()) {
    const v1::LaunchPolicy& p = k.default_policy();
    rows.push_back(
        {k.name(), k.family(), k.dtype(), absl::StrCat(k.bytes_per_element()),
         p.block_size_tunable() ? absl::StrCat(p.block_size()) : "library",
         p.block_size_tunable() ? absl::StrCat(p.items_per_thread()) : "library",
         p.max_items_per_thread() > 0 ? absl::StrCat(p.max_items_per_thread()) : "fixed",
         k.min_compute_capability() > 0
             ? absl::StrCat(k.min_compute_capability() / 10, ".", k.min_compute_capability() % 10)
             : "any",
         k.description(), k.provenance()});
  }
  return format == Format::kCsv ? Csv(header, rows) : Table(header, rows);
}

std::string RenderDevices(const v1::ListDevicesResponse& response, Format format) {
  if (format == Format::kJson) return ToJson(response);
  if (format == Format::kCsv) {
    const std::vector<std::string> header = {"index",
                                             "backend",
                                             "name",
                                             "uuid",
                                             "cc",
                                             "sms",
                                             "l2_cache_bytes",
                                             "peak_bandwidth_bytes_per_second",
                                             "total_memory_bytes",
                                             "free_memory_bytes",
                                             "driver"};
    std::vector<std::vector<std::string>> rows;
    for (const v1::DeviceInfo& d : response.devices()) {
      rows.push_back({absl::StrCat(d.index()), d.backend(), d.name(), d.uuid(),
                      absl::StrCat(d.compute_capability_major(), ".", d.compute_capability_minor()),
                      absl::StrCat(d.multiprocessor_count()), absl::StrCat(d.l2_cache_bytes()),
                      absl::StrCat(d.peak_bandwidth_bytes_per_second()),
                      absl::StrCat(d.total_memory_bytes()), absl::StrCat(d.free_memory_bytes()),
                      d.driver_version()});
    }
    return Csv(header, rows);
  }
  std::string out;
  for (const v1::DeviceInfo& d : response.devices()) {
    absl::StrAppend(&out, "device ", d.index(), " (", d.backend(), "): ", d.name(), "\n");
    auto kv = [&](const std::string& key, const std::string& value) {
      // Keys longer than the column (the PCIe rate's) keep one space; size_t must not wrap.
      absl::StrAppend(&out, "  ", key, std::string(key.size() < 36 ? 36 - key.size() : 1, ' '),
                      value, "\n");
    };
    kv("uuid", d.uuid());
    if (!d.pci_bus_id().empty()) kv("pci bus id", d.pci_bus_id());
    if (d.backend() == "cuda") {
      kv("compute capability",
         absl::StrCat(d.compute_capability_major(), ".", d.compute_capability_minor()));
      kv("multiprocessors (SMs)", absl::StrCat(d.multiprocessor_count()));
      kv("max threads per SM", absl::StrCat(d.max_threads_per_multiprocessor()));
      kv("max blocks per SM", absl::StrCat(d.max_blocks_per_multiprocessor()));
      kv("registers per SM", absl::StrCat(d.registers_per_multiprocessor()));
      kv("shared memory per SM", Bytes(d.shared_memory_per_multiprocessor_bytes()));
      kv("max threads per block", absl::StrCat(d.max_threads_per_block()));
      kv("registers per block", absl::StrCat(d.registers_per_block()));
      kv("shared memory per block", Bytes(d.shared_memory_per_block_bytes()));
      kv("shared memory per block (opt-in)", Bytes(d.shared_memory_per_block_optin_bytes()));
      kv("warp size", absl::StrCat(d.warp_size()));
      kv("L2 cache", Bytes(d.l2_cache_bytes()));
      kv("memory bus width", absl::StrCat(d.memory_bus_width_bits(), " bits"));
      kv("memory clock", absl::StrFormat("%.0f MHz", d.memory_clock_hz() / 1e6));
      kv("SM clock", absl::StrFormat("%.0f MHz", d.sm_clock_hz() / 1e6));
      kv("peak bandwidth (theoretical)", FormatBytesPerSecond(d.peak_bandwidth_bytes_per_second()));
    } else {
      kv("hardware threads", absl::StrCat(d.multiprocessor_count()));
      kv("L1 data cache (per core)", Bytes(d.l1_cache_bytes()));
      kv("L2 cache (per core)", Bytes(d.l2_cache_bytes()));
      kv("L3 cache", Bytes(d.l3_cache_bytes()));
    }
    kv("memory total", Bytes(d.total_memory_bytes()));
    kv("memory free", Bytes(d.free_memory_bytes()));
    kv("driver", d.driver_version());
    kv("runtime", d.runtime_version());
    if (d.has_nvml_index()) kv("nvml index", absl::StrCat(d.nvml_index()));
    if (!d.kernel_driver_version().empty()) kv("kernel driver", d.kernel_driver_version());
    if (d.pcie_link_max_generation() > 0 || d.pcie_link_current_generation() > 0) {
      kv("PCIe link", absl::StrFormat("Gen%d x%d now, Gen%d x%d max",
                                      d.pcie_link_current_generation(), d.pcie_link_current_width(),
                                      d.pcie_link_max_generation(), d.pcie_link_max_width()));
    }
    if (d.pcie_link_bytes_per_second() > 0) {
      kv("PCIe rate (theoretical, per direction)",
         absl::StrCat(FormatBytesPerSecond(d.pcie_link_bytes_per_second()), " (from the ",
                      d.pcie_link_rate_source(), " reading)"));
    }
  }
  return out;
}

std::string RenderResults(const std::vector<v1::RunResult>& results,
                          const std::vector<v1::SweepItemError>& errors, Format format) {
  if (format == Format::kJson) {
    std::vector<std::string> parts;
    for (const auto& r : results) parts.push_back(ToJson(r));
    for (const auto& e : errors) parts.push_back(ToJson(e));
    return absl::StrCat("[\n", absl::StrJoin(parts, ",\n"), "]\n");
  }
  const bool csv = format == Format::kCsv;
  const std::vector<std::string> header =
      csv ? std::vector<std::string>{"kernel",           "dtype",
                                     "elements",         "block_size",
                                     "items_per_thread", "grid_size",
                                     "cache_mode",       "samples",
                                     "median_seconds",   "mean_seconds",
                                     "relative_noise",   "bandwidth_bytes_per_second",
                                     "percent_of_peak",  "verified",
                                     "backend",          "device",
                                     "run_id",           "error"}
          : std::vector<std::string>{"device",    "kernel", "dtype",    "elements", "block",
                                     "items",     "mode",   "samples",  "median",   "noise",
                                     "bandwidth", "%peak",  "verified", "occupancy"};
  std::vector<std::vector<std::string>> rows;
  for (const v1::RunResult& r : results) {
    const auto& q = r.request();
    const std::string verified = !r.verification().requested() ? "skipped"
                                 : r.verification().passed()   ? "pass"
                                                               : "FAIL";
    const std::string peak =
        r.throughput().has_percent_of_peak_bandwidth()
            ? absl::StrFormat("%.1f", r.throughput().percent_of_peak_bandwidth())
            : (csv ? "" : "-");
    // A library launch (CUB) picks its own geometry: "library" in the table, empty in CSV.
    const bool library = q.grid_size() <= 0;
    if (csv) {
      rows.push_back(
          {q.kernel(), q.dtype(), absl::StrCat(q.elements()),
           library ? "" : absl::StrCat(q.block_size()),
           library ? "" : absl::StrCat(q.items_per_thread()),
           library ? "" : absl::StrCat(q.grid_size()), ModeName(q.cache_mode()),
           absl::StrCat(r.timing().samples()), absl::StrFormat("%.9g", r.timing().median_seconds()),
           absl::StrFormat("%.9g", r.timing().mean_seconds()),
           r.timing().noise_known() ? absl::StrFormat("%.6g", r.timing().relative_noise()) : "",
           absl::StrFormat("%.6g", r.throughput().bandwidth_bytes_per_second()), peak, verified,
           r.backend(), absl::StrCat(q.device_index()), r.run_id(), ""});
    } else {
      rows.push_back(
          {absl::StrCat(q.device_index()), q.kernel(), q.dtype(), FormatElementCount(q.elements()),
           library ? "library" : absl::StrCat(q.block_size()),
           library ? "library" : absl::StrCat(q.items_per_thread()), ModeName(q.cache_mode()),
           absl::StrCat(r.timing().samples()), FormatSeconds(r.timing().median_seconds()),
           FormatNoise(r.timing()),
           FormatBytesPerSecond(r.throughput().bandwidth_bytes_per_second()), peak, verified,
           !r.occupancy().limiter().empty()
               ? absl::StrFormat("%.0f%%", 100 * r.occupancy().theoretical_occupancy())
               : "n/a"});
    }
  }
  for (const v1::SweepItemError& e : errors) {
    if (csv) {
      rows.push_back({e.kernel(), "", absl::StrCat(e.elements()), absl::StrCat(e.block_size()),
                      absl::StrCat(e.items_per_thread()), "", "", "", "", "", "", "", "", "", "",
                      absl::StrCat(e.device_index()), "", e.message()});
    } else {
      rows.push_back({absl::StrCat(e.device_index()), e.kernel(), "",
                      FormatElementCount(e.elements()), absl::StrCat(e.block_size()),
                      absl::StrCat(e.items_per_thread()), "", "", "ERROR", "", "", "", "", ""});
    }
  }
  std::string out = csv ? Csv(header, rows) : Table(header, rows);
  if (!csv) {
    for (const auto& e : errors)
      absl::StrAppend(&out, "error in item ", e.index(), ": ", e.message(), "\n");
  }
  return out;
}

std::string RenderResultDetail(const v1::RunResult& r) {
  std::string out = RenderResults({r}, {}, Format::kTable);
  const auto& m = r.measurement();
  absl::StrAppend(&out, "\nrun ", r.run_id(), " on ", r.backend(), " device ",
                  r.request().device_index(), " (", r.device().name(), ")\n");
  if (r.has_user_kernel()) {
    const v1::UserKernelReport& u = r.user_kernel();
    absl::StrAppend(&out, "  user kernel   ", u.entry(), " (", u.kind(), ", sha256 ",
                    u.code_sha256().substr(0, 16), ", ", u.lowered_name(), " for ",
                    u.architecture(), ")\n");
    absl::StrAppend(&out, "  compile       ",
                    u.compile_cache_hit() ? std::string("cache hit")
                                          : absl::StrFormat("%.3f s", u.compile_seconds()),
                    "; signature ", u.signature_checked() ? "checked" : "NOT checked", ": ",
                    u.signature_note(), "\n");
    absl::StrAppend(&out, "  seed          ", u.seed(), " (fresh for this run)\n");
    for (const std::string& check : u.integrity_checks()) {
      absl::StrAppend(&out, "  integrity     ", check, "\n");
    }
    if (!u.compile_log().empty()) absl::StrAppend(&out, "  compile log   ", u.compile_log(), "\n");
    for (const v1::UserKernelComparison& c : u.comparisons()) {
      // speedup: the built-in's median / the user kernel's (> 1: the user kernel is faster).
      absl::StrAppend(&out, absl::StrFormat("  %-13s ", c.role() == "best_builtin" ? "best built-in"
                                                                                   : "vendor"));
      if (c.kernel().empty()) {
        absl::StrAppend(&out, "none: ", c.note(), "\n");
        continue;
      }
      absl::StrAppend(&out, c.kernel(), " ", FormatSeconds(c.median_seconds()),
                      absl::StrFormat(": the user kernel is %.3fx its speed", c.speedup()),
                      c.role() == "best_builtin"
                          ? absl::StrCat(" (fastest of ", c.candidates(), " built-ins)")
                          : std::string(),
                      c.note().empty() ? "" : absl::StrCat("; ", c.note()), "\n");
    }
  }
  absl::StrAppend(&out, "  method        ", m.method(), "\n");
  if (!m.timer().empty()) {
    absl::StrAppend(&out, "  timer         ", m.timer());
    if (m.has_event_median_seconds() && r.timing().median_seconds() > 0) {
      absl::StrAppend(
          &out, " (the same samples by CUDA events: median ",
          FormatSeconds(m.event_median_seconds()),
          absl::StrFormat(", %+.2f%%)",
                          100 * (m.event_median_seconds() / r.timing().median_seconds() - 1)));
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(
      &out, "  stop          ", m.stop_rule().empty() ? "" : m.stop_rule() + ": ", m.stop_reason(),
      absl::StrFormat(" (%d samples taken, %.2f s)", m.samples_taken(), m.sampling_wall_seconds()),
      "\n");
  if (m.duty_cycle() > 0) {
    absl::StrAppend(&out, "  duty cycle    ",
                    absl::StrFormat("%.3f of the sampling loop timed", m.duty_cycle()),
                    r.request().max_duty() > 0
                        ? absl::StrFormat(" (paced to max_duty %g)", r.request().max_duty())
                        : std::string(" (not paced)"),
                    "\n");
  }
  if (m.has_phases()) {
    const v1::RunPhases& p = m.phases();
    // Buffer reuse within a sweep: what open and release did not do.
    const char* reuse = p.buffers_reused() && p.buffers_kept()
                            ? "; buffers reused from the previous run of this sweep and kept for "
                              "the next"
                        : p.buffers_reused()
                            ? "; buffers reused from the previous run of this sweep"
                        : p.buffers_kept() ? "; buffers kept for the next run of this sweep"
                                           : "";
    absl::StrAppend(&out, "  phases        ",
                    absl::StrFormat("host inputs %.3f s, open %.3f s, sampling %.3f s, "
                                    "verification %.3f s%s, release %.3f s (in the worker)%s",
                                    p.host_inputs_seconds(), p.open_seconds(), p.sampling_seconds(),
                                    p.verification_seconds(),
                                    r.request().profile()
                                        ? absl::StrFormat(", counters %.3f s", p.counters_seconds())
                                        : std::string(),
                                    p.release_seconds(), reuse),
                    "\n");
  }
  if (const int64_t pad = r.request().placement_pad_bytes(); pad > 0) {
    absl::StrAppend(&out, "  placement     a pad of ", FormatElementCount(pad),
                    " bytes after each device buffer of >= 1Mi bytes\n");
  }
  if (const int copies = r.request().placements(); copies > 1 && r.backend() != "cpu") {
    absl::StrAppend(&out, "  placements    cold samples rotate over ", copies,
                    " copies of the device buffers\n");
  }
  for (const std::string& note : m.notes()) absl::StrAppend(&out, "  note          ", note, "\n");
  const auto& t = r.timing();
  if (!t.noise_known()) {
    absl::StrAppend(&out, "  noise         unknown: ", t.samples(), " sample(s), fewer than two\n");
  } else if (t.below_min_samples()) {
    absl::StrAppend(&out, "  noise         ", absl::StrFormat("%.2f%%", 100 * t.relative_noise()),
                    " from ", t.samples(), " samples, fewer than min_samples ",
                    r.request().min_samples(), ": unreliable\n");
  }
  absl::StrAppend(&out, "  percentiles   p5 ", FormatSeconds(t.p5_seconds()), "  p25 ",
                  FormatSeconds(t.p25_seconds()), "  p50 ", FormatSeconds(t.median_seconds()),
                  "  p75 ", FormatSeconds(t.p75_seconds()), "  p95 ",
                  FormatSeconds(t.p95_seconds()), "  IQR ", FormatSeconds(t.iqr_seconds()), "\n");
  if (r.has_samples()) {
    absl::StrAppend(&out, "  samples       ", r.samples().seconds_size(), " returned of ",
                    r.samples().count(), r.samples().strided() ? " (evenly strided)" : "", "\n");
  }
  absl::StrAppend(&out, "  timing        min ", FormatSeconds(r.timing().min_seconds()),
                  "  median ", FormatSeconds(r.timing().median_seconds()), "  mean ",
                  FormatSeconds(r.timing().mean_seconds()), "  max ",
                  FormatSeconds(r.timing().max_seconds()), "  stddev ",
                  FormatSeconds(r.timing().stddev_seconds()), "\n");
  absl::StrAppend(&out, "  throughput    ",
                  FormatBytesPerSecond(r.throughput().bandwidth_bytes_per_second()), " (median), ",
                  FormatBytesPerSecond(r.throughput().bandwidth_mean_bytes_per_second()),
                  " (mean), ", absl::StrFormat("%.4g", r.throughput().elements_per_second()),
                  " elements/s, ", r.throughput().bytes_moved(), " bytes per launch\n");
  if (r.throughput().has_percent_of_peak_bandwidth() ||
      r.throughput().has_percent_of_copy_ceiling()) {
    absl::StrAppend(
        &out, "  ceilings      ",
        r.throughput().has_percent_of_peak_bandwidth()
            ? absl::StrFormat(
                  "%.1f%% of theoretical peak %s", r.throughput().percent_of_peak_bandwidth(),
                  r.throughput().has_peak() && r.throughput().metric() == "operations_per_second"
                      ? absl::StrFormat("%.4g %s/s", r.throughput().peak(),
                                        r.throughput().operation_unit())
                      : FormatBytesPerSecond(r.throughput().has_peak()
                                                 ? r.throughput().peak()
                                                 : r.device().peak_bandwidth_bytes_per_second()))
            : std::string("theoretical peak unknown"),
        r.throughput().has_percent_of_copy_ceiling()
            ? absl::StrFormat("; %.1f%% of the measured copy_d2d ceiling %s",
                              r.throughput().percent_of_copy_ceiling(),
                              FormatBytesPerSecond(r.throughput().copy_ceiling_bytes_per_second()))
            : std::string("; copy_d2d ceiling not measured yet on this device"),
        "\n");
  }
  if (m.max_sm_clock_hz() > 0) {
    // Servers before the throttle_threshold option discarded below 75% and did not say so.
    const double threshold =
        r.request().has_throttle_threshold() ? r.request().throttle_threshold() : 0.75;
    absl::StrAppend(&out, "  SM clock      ", absl::StrFormat("%.0f", m.min_sm_clock_hz() / 1e6),
                    "-", absl::StrFormat("%.0f", m.max_sm_clock_hz() / 1e6), " MHz, ",
                    threshold > 0
                        ? absl::StrFormat("%d throttled samples discarded (under %.0f%% of the "
                                          "default clock)",
                                          m.throttled_samples(), 100 * threshold)
                        : std::string("throttling check off (throttle_threshold 0): every "
                                      "sample kept"));
    if (m.low_clock_samples() > m.throttled_samples()) {
      absl::StrAppend(&out, "; ", m.low_clock_samples() - m.throttled_samples(), " kept under 75%");
    }
    absl::StrAppend(&out, "\n");
  }
  if (m.clock_event_reasons_size() > 0) {
    absl::StrAppend(&out, "  clock events  ", absl::StrJoin(m.clock_event_reasons(), ", "),
                    " (NVML, during the run)\n");
  }
  if (!r.launch_report().empty()) {
    absl::StrAppend(&out, "  launch report ", r.launch_report(), "\n");
  }
  const auto& v = r.verification();
  if (v.requested()) {
    absl::StrAppend(
        &out, "  verification  ", v.passed() ? "pass" : "FAIL", ": ",
        v.method().empty() ? absl::StrCat(v.checked_elements(), " elements") : v.method(),
        ", max abs error ", absl::StrFormat("%.3g", v.max_abs_error()), ", max rel error ",
        absl::StrFormat("%.3g", v.max_rel_error()), "\n");
  }
  const auto& o = r.occupancy();
  if (o.available()) {
    absl::StrAppend(&out, "  launch        grid ", o.grid_size(), " x block ", o.block_size(), ", ",
                    absl::StrFormat("%.2f", o.waves()), " waves\n");
    absl::StrAppend(&out, "  resources     ", o.registers_per_thread(), " registers/thread (",
                    o.registers_per_warp_allocated(), " allocated per warp), ",
                    o.static_shared_bytes(), " B static shared (",
                    o.shared_memory_per_block_allocated(), " B allocated per block), ",
                    o.local_bytes_per_thread(), " B local/thread, sm_", o.binary_version(), "\n");
    absl::StrAppend(
        &out, "  occupancy     ", o.active_blocks_per_multiprocessor(),
        " blocks/SM = ", o.active_warps_per_multiprocessor(), "/", o.max_warps_per_multiprocessor(),
        " warps, theoretical ", absl::StrFormat("%.1f%%", 100 * o.theoretical_occupancy()),
        ", limited by ", o.limiter(), " (blocks/SM by warps ", o.blocks_limit_warps(),
        ", registers ",
        o.blocks_limit_registers() == 2147483647 ? std::string("-")
                                                 : absl::StrCat(o.blocks_limit_registers()),
        ", shared memory ",
        o.blocks_limit_shared_memory() == 2147483647 ? std::string("-")
                                                     : absl::StrCat(o.blocks_limit_shared_memory()),
        ", cap ", o.blocks_limit_blocks(), "; occupancy API ",
        o.api_active_blocks_per_multiprocessor(), ")\n");
  } else {
    absl::StrAppend(&out, "  occupancy     unavailable: ", o.unavailable_reason(), "\n");
  }
  if (o.has_achieved_occupancy()) {
    absl::StrAppend(
        &out, "  achieved      ", absl::StrFormat("%.1f%%", 100 * o.achieved_occupancy()),
        " occupancy",
        o.has_dram_throughput_percent()
            ? absl::StrFormat(", DRAM throughput %.1f%% of peak", o.dram_throughput_percent())
            : std::string(),
        " (hardware counters)\n");
  } else {
    absl::StrAppend(&out, "  achieved      unavailable: ", o.achieved_unavailable_reason(), "\n");
  }
  if (!r.explanation().empty()) absl::StrAppend(&out, "  verdict       ", r.explanation(), "\n");
  return out;
}

std::string FormatNoise(const v1::TimingStatistics& t) {
  if (!t.noise_known())
    return absl::StrCat("n/a (", t.samples(), " sample", t.samples() == 1 ? "" : "s", ")");
  std::string noise = absl::StrFormat("%.2f%%", 100 * t.relative_noise());
  if (t.below_min_samples()) absl::StrAppend(&noise, " (<min_samples)");
  return noise;
}

std::string RenderHistogram(const v1::RunResult& r, int bins) {
  const auto& seconds = r.samples().seconds();
  if (seconds.empty()) {
    return "no samples in this result (ask for them with --samples or --histogram)\n";
  }
  std::vector<double> sorted(seconds.begin(), seconds.end());
  std::sort(sorted.begin(), sorted.end());
  const double lo = sorted.front();
  // Bins end at the 99th percentile so one slow outlier does not squash the shape.
  const double hi = sorted[static_cast<size_t>(0.99 * static_cast<double>(sorted.size() - 1))];
  bins = std::max(1, bins);
  const double width = hi > lo ? (hi - lo) / bins : 0;
  std::vector<int64_t> counts(bins, 0);
  int64_t above = 0;
  for (double v : sorted) {
    if (v > hi) {
      ++above;
      continue;
    }
    const int bin = width > 0 ? std::min(bins - 1, static_cast<int>((v - lo) / width)) : 0;
    ++counts[bin];
  }
  const int64_t most =
      std::max<int64_t>(1, std::max(above, *std::max_element(counts.begin(), counts.end())));
  constexpr int kBarWidth = 50;
  std::string out = absl::StrCat(
      "histogram of ", sorted.size(), " samples",
      r.samples().strided() ? absl::StrCat(" (evenly strided from ", r.samples().count(), ")")
                            : std::string(),
      ", per-launch time:\n");
  auto row = [&](const std::string& label, int64_t count) {
    const int bar = static_cast<int>(std::llround(static_cast<double>(count) * kBarWidth / most));
    absl::StrAppend(&out, label, std::string(label.size() < 26 ? 26 - label.size() : 1, ' '),
                    absl::StrFormat("%7d ", count), std::string(bar, '#'), "\n");
  };
  for (int b = 0; b < (width > 0 ? bins : 1); ++b) {
    row(absl::StrCat(FormatSeconds(lo + b * width), " - ",
                     FormatSeconds(width > 0 ? lo + (b + 1) * width : hi)),
        counts[b]);
  }
  if (above > 0) row(absl::StrCat("> ", FormatSeconds(hi)), above);
  return out;
}

}  // namespace gpubench::client
