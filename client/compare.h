// `gpubench compare` and `gpubench best`: which kernels they run, how a sweep's results become the
// seed article's comparison tables, and how the fastest variant is chosen. No flags here: the
// CLI (client/main.cc) parses them and calls these.
#ifndef GPUBENCH_CLIENT_COMPARE_H_
#define GPUBENCH_CLIENT_COMPARE_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>
#include <vector>

#include "client/output.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

// One RunSweep stream, read to the end: results, per-item errors and the final status. With
// `progress`, each item's state goes to stderr as it streams.
struct SweepOutcome {
  std::vector<v1::RunResult> results;
  std::vector<v1::SweepItemError> errors;
  grpc::Status status;
};
// `on_item`, when set, sees each result or item error as it arrives (--format=jsonl streams).
SweepOutcome CollectSweep(
    v1::Benchmark::Stub& stub, const v1::RunSweepRequest& request,
    const std::function<void(grpc::ClientContext*)>& prepare_context, bool progress,
    const std::function<void(const v1::RunSweepResponse&)>& on_item = nullptr);

// Whether `dtype` is one the add kernels come in: "f32", "f16" or "bf16".
bool IsAddDtype(const std::string& dtype);

// The seed article's label of its six kernels ("V1".."V6": add_f32 .. add_f16x8_pack); empty for
// every other kernel.
std::string SeedLabel(const std::string& kernel);

// What `gpubench compare` runs for `dtypes` ("f32", "f16", "bf16"), in catalog order, available
// on the server only: the seed patterns, gpubench's own tuned add variants, CUB's add and the
// copy ceiling (copy_d2d).
std::vector<std::string> CompareKernels(const v1::ListKernelsResponse& kernels,
                                        const std::vector<std::string>& dtypes);

// The candidates of `gpubench best` for `dtype`: every elementwise add of that dtype that is
// gpubench's own code (seed patterns and tuned variants; not the library baselines), available on
// the server, in catalog order.
std::vector<std::string> BestCandidates(const v1::ListKernelsResponse& kernels,
                                        const std::string& dtype);

// Index of the verified result with the lowest median time (ties: the earlier one), or -1 when
// none passed.
int FastestResult(const std::vector<v1::RunResult>& results);

// The comparison: one table per (cache mode, size), in the order the modes and sizes first
// appear, rows in the order of `results`. Columns: kernel (with the seed label), dtype, launch,
// median time, bandwidth, speed-up over the dtype's scalar seed kernel (add_f32 / add_f16 /
// add_bf16; "-" when it did not run) and percent of copy_d2d's bandwidth at the same size and
// mode (the copy ceiling; "-" when it did not run). CSV: one row per result with those columns.
// JSON: the results as RenderResults prints them.
std::string RenderCompare(const std::vector<v1::RunResult>& results,
                          const std::vector<v1::SweepItemError>& errors, Format format);

// The choice of `gpubench best`: the winner, then every candidate fastest first with its ratio to
// the winner, and how the choice was made. CSV: the candidates fastest first (rank column first);
// JSON: the winner's RunResult. Empty results: a line saying no candidate passed.
std::string RenderBest(const std::vector<v1::RunResult>& results,
                       const std::vector<v1::SweepItemError>& errors, Format format);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_COMPARE_H_
