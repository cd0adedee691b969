// Options and output shared by the measuring commands (options.h).
#include "client/commands/options.h"

#include <fstream>
#include <iostream>
#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/nvbench_json.h"
#include "common/measurement_options.h"
#include "common/sizes.h"
#include "server/service/proto_options.h"

namespace gpubench::client {
namespace {

// A flag that takes a fraction, given a value that looks like a percent (over 1, up to 100):
// says so, with the fraction meant, and returns true. Larger values are the server's
// INVALID_ARGUMENT (out of range).
bool RefusedAsPercent(const OptionSpec& o, double value) {
  if (!(o.fraction && value > 1 && value <= 100)) return false;
  std::cerr << "gpubench: --" << o.cli_flag << " " << value << " looks like a percent; it is a "
            << o.unit << ": for " << value << "% pass --" << o.cli_flag << "=" << value / 100
            << "\n";
  return true;
}

// The value of row `o`'s flag, as WriteOption takes it; nullopt when the flag leaves the option
// to the server (an unset optional flag, an empty size) or false (after a message) when it is
// not a value of the row.
bool ParseOptionFlag(const OptionSpec& o, const std::string& text, std::optional<double>* out) {
  const std::string flag = absl::StrCat("--", o.cli_flag);
  out->reset();
  if (text.empty()) return true;  // std::optional flags print unset as ""
  if (o.kind == OptionKind::kChoice) {
    absl::StatusOr<int> choice = ParseChoice(o, text, flag);
    if (!choice.ok()) {
      std::cerr << "gpubench: " << choice.status().message() << "\n";
      return false;
    }
    *out = *choice;
    return true;
  }
  if (o.kind == OptionKind::kBool) {
    *out = text == "true" ? 1 : 0;
    return true;
  }
  if (o.unit == "bytes") {  // in --size's syntax; "0" leaves the server's default
    if (text == "0") return true;
    absl::StatusOr<int64_t> bytes = ParseElementCount(text);
    if (!bytes.ok()) {
      std::cerr << "gpubench: " << flag << ": " << bytes.status().message()
                << " (bytes, e.g. 34Mi or 35651584)\n";
      return false;
    }
    *out = static_cast<double>(*bytes);
    return true;
  }
  double value = 0;
  if (!absl::SimpleAtod(text, &value)) {
    std::cerr << "gpubench: " << flag << ": '" << text << "' is not a number\n";
    return false;
  }
  if (RefusedAsPercent(o, value)) return false;
  *out = value;
  return true;  // the server checks the range (one place: its option table)
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
  // Every row of the option table with a CLI flag (common/measurement_options.h), read by name.
  for (const OptionSpec& o : kMeasurementOptions) {
    if (o.cli_flag.empty()) continue;
    std::string text = mode;  // --mode, or compare's current --modes entry
    if (o.id != OptionId::kCacheMode) {
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(o.cli_flag);
      if (flag == nullptr) {
        std::cerr << "gpubench: internal error: the option table names --" << o.cli_flag
                  << ", which this build does not define\n";
        return false;
      }
      text = flag->CurrentValue();
    }
    std::optional<double> value;
    if (!ParseOptionFlag(o, text, &value)) return false;
    if (o.id == OptionId::kKeepSamples && absl::GetFlag(FLAGS_histogram)) value = 1;
    if (o.id == OptionId::kMaxNoise && value.has_value() && *value >= 0.1) {
      std::cerr << "gpubench: note: --max_noise " << *value << " means " << 100 * *value
                << "% relative standard deviation (a fraction, not a percent)\n";
    }
    if (value.has_value()) WriteOption(m, o, *value);
  }
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
