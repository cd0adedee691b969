// What the measuring commands share (options.cc): --format, run/sweep output (--output_file,
// nvbench-json), the measurement flags as MeasurementOptions, and the list and size flags.
#ifndef GPUBENCH_CLIENT_COMMANDS_OPTIONS_H_
#define GPUBENCH_CLIENT_COMMANDS_OPTIONS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/output.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

// --format, or false (after a message).
bool ParseFormat(Format* format);
// The command line as given (nvbench-json records it).
std::vector<std::string>& Argv();
// Writes run/sweep output to --output_file, or stdout. False (after a message) when the file
// cannot be written.
bool Emit(const std::string& text);
// The measurement flags into `m`, with `mode` (cold | hot); false (after a message) on a bad
// value.
bool FillMeasurement(v1::MeasurementOptions* m, const std::string& mode);
grpc::Status ListCatalog(v1::Benchmark::Stub& stub, v1::ListKernelsResponse* response);
// --format=nvbench-json: the file with every device of the server (ListDevices; the results'
// devices, with a warning, when that fails) and, with --output_file, the sample-times side
// files beside it. False (after a message) when something could not be written.
bool EmitNvbench(v1::Benchmark::Stub& stub, const std::vector<v1::RunResult>& results,
                 const std::vector<v1::SweepItemError>& errors, v1::CacheMode mode);
// "gpubench CMD KERNEL --size N": the kernel argument and the parsed size, or false (after a
// message) on a usage error.
bool ParseKernelAndSize(const std::vector<std::string>& args, const char* usage,
                        std::string* kernel, int64_t* elements);
// A comma-separated integer flag (--block_sizes, --items_per_thread), or false (after a message).
bool ParseIntList(absl::string_view flag, const std::string& text, std::vector<int>* out);
bool ParseBlockSizes(std::vector<int>* out);
bool ParseItemsPerThread(std::vector<int>* out);
// A comma-separated list flag; false (after "sweep needs --flag") when it is empty.
bool SplitList(const std::string& flag, const std::string& text, std::vector<std::string>* out);
// Parses --sizes entries into `request`, or false (after a message).
bool AddSizes(const std::vector<std::string>& sizes, v1::RunSweepRequest* request);
// The sweep options `sweep`, `compare` and `best` share: device, measurement, verify, seed.
bool FillSweepCommon(v1::RunSweepRequest* request, const std::string& mode);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_COMMANDS_OPTIONS_H_
