// Rendering of gpubench.v1 messages for the CLI: table, JSON (protobuf's JSON mapping, the same
// shape grpcurl prints and plan files use) and CSV.
#ifndef GPUBENCH_CLIENT_OUTPUT_H_
#define GPUBENCH_CLIENT_OUTPUT_H_

#include <string>
#include <vector>

#include "gpubench/v1/benchmark.pb.h"

namespace gpubench::client {

enum class Format { kTable, kJson, kCsv, kNvbenchJson, kJsonl };

std::string ToJson(const google::protobuf::Message& message);
// --format=jsonl: one line of compact JSON per finished item, {"result": RunResult} or
// {"error": SweepItemError} (RunSweepResponse's JSON mapping), so a reader can act on each
// line as it arrives.
std::string JsonLine(const v1::RunSweepResponse& event);
// The line for a failed call (no item): {"error": {"index": 0, "code": N, "message": "..."}}.
std::string JsonErrorLine(int code, const std::string& message);

std::string RenderKernels(const v1::ListKernelsResponse& response, Format format);
std::string RenderDevices(const v1::ListDevicesResponse& response, Format format);
// Results (and failed sweep items) as one table / CSV / JSON array.
std::string RenderResults(const std::vector<v1::RunResult>& results,
                          const std::vector<v1::SweepItemError>& errors, Format format);
// The detailed view of one result (table format of `gpubench run`).
std::string RenderResultDetail(const v1::RunResult& result);
// A text histogram of the result's returned samples (keep_samples), `bins` rows between the
// smallest sample and the 99th percentile, one more row for slower outliers. Says so when the
// result carries no samples.
std::string RenderHistogram(const v1::RunResult& result, int bins = 20);
// The noise column: "0.42%", "n/a (1 sample)" when unknown, "3.1% (<min_samples)" when below
// min_samples.
std::string FormatNoise(const v1::TimingStatistics& timing);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_OUTPUT_H_
