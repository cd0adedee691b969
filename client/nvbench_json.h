// gpubench results in nvbench's JSON schema (the json_printer's file version 1.0.0), written so
// that nvbench's own tools (scripts/nvbench_compare.py, its robust successor, nvbench_histogram)
// read them as they read nvbench's files. docs/output-formats.md has the whole mapping.
//
// - One benchmark per kernel and mode: cold results under the kernel's name, hot results under
//   "<kernel> (hot)". Both carry their per-launch statistics in nv/cold/* tags, because those
//   are the only tags the compare scripts read (hot-only nv/batch/* summaries made a hot CI
//   gate compare nothing); the separate name keeps a hot result from ever pairing with a cold one.
// - States are named by what a user compares: "Device=0 Elements=16777216". The launch (block
//   size, items per thread) is an axis-less gpubench/launch summary, so an applied autotune does
//   not rename the state; BlockSize/ItemsPerThread become axes only where one file holds several
//   launches of one device and size (a launch sweep), which would otherwise share a name.
// - The devices section lists every device the server has (ListDevices), so files of one server
//   compare whatever subset each ran on.
// - Failed sweep items are skipped states (is_skipped, skip_reason), as nvbench writes them.
// - With the samples (the client asks for them), q1/median/q3 use nvbench's rule (the sample at
//   rank round(p x (n - 1)) of the sorted times) and the samples go to nvbench's side file
//   (<json>-bin/<k>.bin, little-endian float32, nv/json/bin:nv/cold/sample_times).
#ifndef GPUBENCH_CLIENT_NVBENCH_JSON_H_
#define GPUBENCH_CLIENT_NVBENCH_JSON_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpubench/v1/benchmark.pb.h"

namespace gpubench::client {

struct NvbenchInput {
  std::vector<v1::RunResult> results;
  std::vector<v1::SweepItemError> errors;  // written as skipped states
  v1::CacheMode errors_mode = v1::COLD;     // the sweep's mode (errors do not carry it)
  // Every device of the server (ListDevices); empty: the devices the results saw.
  std::vector<v1::DeviceInfo> devices;
  std::vector<std::string> argv;  // meta.argv
  // Where the JSON is written. Empty (stdout): no sample-times side files.
  std::string json_path;
};

struct NvbenchFile {
  std::string path;   // as written in the JSON: relative to the JSON file's directory
  std::string bytes;
};

struct NvbenchOutput {
  std::string json;  // ends with a newline
  std::vector<NvbenchFile> side_files;
};

NvbenchOutput RenderNvbench(const NvbenchInput& input);

// Writes `output`'s side files beside `json_path` (creating <json>-bin/).
absl::Status WriteNvbenchSideFiles(const NvbenchOutput& output, const std::string& json_path);

// The JSON alone, devices from the results (tests, callers without a server).
std::string RenderNvbenchJson(const std::vector<v1::RunResult>& results,
                              const std::vector<std::string>& argv);

// nvbench's quantile: the sample at zero-based rank round(q x (n - 1)) of the sorted samples
// (nvbench/detail/statistics.cuh percentile_rank), not an interpolation. NaN when empty.
double NvbenchQuantile(std::vector<double> samples, double q);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_NVBENCH_JSON_H_
