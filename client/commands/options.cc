// Options and output shared by the measuring commands (options.h).
#include "client/commands/options.h"

#include <fstream>
#include <iostream>
#include <limits>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/nvbench_json.h"
#include "common/sizes.h"

namespace gpubench::client {
namespace {

// A flag that takes a fraction, given a value that looks like a percent (over 1, up to
// `percent_max`): says so, with the fraction meant, and returns true. `of` says what the value is
// a fraction of, with an example.
bool RefusedAsPercent(absl::string_view flag, double value, double percent_max,
                      absl::string_view of) {
  if (!(value > 1 && value <= percent_max)) return false;
  std::cerr << "gpubench: --" << flag << " " << value
            << " looks like a percent; it is a fraction of " << of << ": for " << value
            << "% pass --" << flag << "=" << value / 100 << "\n";
  return true;
}

}  // namespace

bool ParseFormat(Format* format) {
  const std::string f = absl::GetFlag(FLAGS_format);
  if (f == "table")
    *format = Format::kTable;
  else if (f == "json")
    *format = Format::kJson;
  else if (f == "csv")
    *format = Format::kCsv;
  else if (f == "nvbench-json")
    *format = Format::kNvbenchJson;
  else if (f == "jsonl")
    *format = Format::kJsonl;
  else {
    std::cerr << "gpubench: --format must be table, json, jsonl, csv or nvbench-json (got '" << f
              << "')\n";
    return false;
  }
  return true;
}

std::vector<std::string>& Argv() {
  static std::vector<std::string> argv;
  return argv;
}

bool Emit(const std::string& text) {
  const std::string path = absl::GetFlag(FLAGS_output_file);
  if (path.empty()) {
    std::cout << text << std::flush;
    if (!std::cout) std::cerr << "gpubench: cannot write stdout\n";
    return static_cast<bool>(std::cout);
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    std::cerr << "gpubench: cannot write --output_file " << path << "\n";
    return false;
  }
  return true;
}

bool FillMeasurement(v1::MeasurementOptions* m, const std::string& mode) {
  if (mode == "cold")
    m->set_cache_mode(v1::COLD);
  else if (mode == "hot")
    m->set_cache_mode(v1::HOT);
  else {
    std::cerr << "gpubench: --mode must be cold or hot (got '" << mode << "')\n";
    return false;
  }
  m->set_warmup_launches(absl::GetFlag(FLAGS_warmup));
  m->set_min_samples(absl::GetFlag(FLAGS_min_samples));
  m->set_max_samples(absl::GetFlag(FLAGS_max_samples));
  m->set_min_time_seconds(absl::GetFlag(FLAGS_min_time));
  const double max_noise = absl::GetFlag(FLAGS_max_noise);
  if (RefusedAsPercent("max_noise", max_noise, std::numeric_limits<double>::infinity(),
                       "the mean (0.005 = 0.5%)")) {
    return false;
  }
  if (max_noise >= 0.1) {
    std::cerr << "gpubench: note: --max_noise " << max_noise << " means " << 100 * max_noise
              << "% relative standard deviation (a fraction, not a percent)\n";
  }
  m->set_max_noise(max_noise);
  m->set_profile_runs(absl::GetFlag(FLAGS_profile_runs));
  m->set_keep_samples(absl::GetFlag(FLAGS_samples) || absl::GetFlag(FLAGS_histogram));
  m->set_timeout_seconds(absl::GetFlag(FLAGS_timeout));
  const std::string timer = absl::GetFlag(FLAGS_timer);
  if (timer == "auto")
    m->set_timer(v1::TIMER_AUTO);
  else if (timer == "cupti")
    m->set_timer(v1::TIMER_CUPTI);
  else if (timer == "events")
    m->set_timer(v1::TIMER_EVENTS);
  else if (timer == "gpu_time")
    m->set_timer(v1::TIMER_GPU_TIME);
  else {
    std::cerr << "gpubench: --timer must be auto, cupti, events or gpu_time (got '" << timer
              << "')\n";
    return false;
  }
  if (const std::optional<double> threshold = absl::GetFlag(FLAGS_throttle_threshold);
      threshold.has_value()) {
    if (RefusedAsPercent("throttle_threshold", *threshold, 100,
                         "the default SM clock (0.75 = 75%)")) {
      return false;
    }
    m->set_throttle_threshold(*threshold);  // the server refuses values outside [0, 1)
  }
  const double max_duty = absl::GetFlag(FLAGS_max_duty);
  if (RefusedAsPercent("max_duty", max_duty, 100, "the sampling loop's wall time (0.8 = 80%)")) {
    return false;
  }
  m->set_max_duty(max_duty);  // the server refuses values outside [0, 1]
  // Bytes, in --size's syntax; 0 (or empty) leaves the server's default. The server checks the
  // range (at most 1 GiB).
  if (const std::string pad = absl::GetFlag(FLAGS_placement_pad); !pad.empty() && pad != "0") {
    absl::StatusOr<int64_t> bytes = ParseElementCount(pad);
    if (!bytes.ok()) {
      std::cerr << "gpubench: --placement_pad: " << bytes.status().message()
                << " (bytes, e.g. 34Mi or 35651584)\n";
      return false;
    }
    m->set_placement_pad_bytes(*bytes);
  }
  m->set_placements(absl::GetFlag(FLAGS_placements));  // the server checks [0, 16]
  return true;
}

grpc::Status ListCatalog(v1::Benchmark::Stub& stub, v1::ListKernelsResponse* response) {
  grpc::ClientContext context;
  SetDeadline(&context);
  return stub.ListKernels(&context, v1::ListKernelsRequest(), response);
}

bool EmitNvbench(v1::Benchmark::Stub& stub, const std::vector<v1::RunResult>& results,
                 const std::vector<v1::SweepItemError>& errors, v1::CacheMode mode) {
  NvbenchInput input;
  input.results = results;
  input.errors = errors;
  input.errors_mode = mode;
  input.argv = Argv();
  input.json_path = absl::GetFlag(FLAGS_output_file);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListDevicesResponse devices;
  if (grpc::Status s = stub.ListDevices(&context, v1::ListDevicesRequest(), &devices); s.ok()) {
    input.devices.assign(devices.devices().begin(), devices.devices().end());
  } else {
    std::cerr << "gpubench: warning: ListDevices failed (" << s.error_message()
              << "); the nvbench devices section lists only the results' devices\n";
  }
  const NvbenchOutput output = RenderNvbench(input);
  if (!input.json_path.empty()) {
    if (absl::Status s = WriteNvbenchSideFiles(output, input.json_path); !s.ok()) {
      std::cerr << "gpubench: " << s.message() << "\n";
      return false;
    }
  }
  return Emit(output.json);
}

bool ParseKernelAndSize(const std::vector<std::string>& args, const char* usage,
                        std::string* kernel, int64_t* elements) {
  if (args.size() != 3) {
    std::cerr << "gpubench: usage: " << usage << "\n";
    return false;
  }
  *kernel = args[2];
  absl::StatusOr<int64_t> size = ParseElementCount(absl::GetFlag(FLAGS_size));
  if (!size.ok()) {
    std::cerr << "gpubench: --size: " << size.status().message() << "\n";
    return false;
  }
  *elements = *size;
  return true;
}

bool ParseIntList(absl::string_view flag, const std::string& text, std::vector<int>* out) {
  for (absl::string_view b : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int value = 0;
    if (!absl::SimpleAtoi(b, &value)) {
      std::cerr << "gpubench: --" << flag << ": '" << b << "' is not an integer\n";
      return false;
    }
    out->push_back(value);
  }
  return true;
}
bool ParseBlockSizes(std::vector<int>* out) {
  return ParseIntList("block_sizes", absl::GetFlag(FLAGS_block_sizes), out);
}
bool ParseItemsPerThread(std::vector<int>* out) {
  return ParseIntList("items_per_thread", absl::GetFlag(FLAGS_items_per_thread), out);
}

bool SplitList(const std::string& flag, const std::string& text, std::vector<std::string>* out) {
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    out->emplace_back(part);
  }
  if (out->empty()) {
    std::cerr << "gpubench: sweep needs --" << flag << "\n";
    return false;
  }
  return true;
}

bool AddSizes(const std::vector<std::string>& sizes, v1::RunSweepRequest* request) {
  for (const auto& s : sizes) {
    absl::StatusOr<int64_t> n = ParseElementCount(s);
    if (!n.ok()) {
      std::cerr << "gpubench: --sizes: " << n.status().message() << "\n";
      return false;
    }
    request->add_sizes(*n);
  }
  return true;
}

bool FillSweepCommon(v1::RunSweepRequest* request, const std::string& mode) {
  request->set_device_index(absl::GetFlag(FLAGS_device));
  request->set_device_uuid(absl::GetFlag(FLAGS_device_uuid));
  request->set_verify(absl::GetFlag(FLAGS_verify));
  if (absl::GetFlag(FLAGS_seed) >= 0) request->set_seed(absl::GetFlag(FLAGS_seed));
  return FillMeasurement(request->mutable_measurement(), mode);
}

}  // namespace gpubench::client
