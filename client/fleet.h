// `gpubench fleet`: one plan across many gpubench servers, with bounded parallelism, per-target
// deadlines, retries with backoff, a summary per GPU model and measurement with outliers, and
// regression checks against a baseline report. The report is a v1::FleetReport (fleet.proto).
#ifndef GPUBENCH_CLIENT_FLEET_H_
#define GPUBENCH_CLIENT_FLEET_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "gpubench/v1/fleet.pb.h"
#include "gpubench/v1/plan.pb.h"

namespace gpubench::client {

// Targets from "host:port" lists, a file (one per line, '#' comments; at most
// kMaxTargetsFileBytes and kMaxTargetsFileLines) and DNS names
// ("name:port", every address the name resolves to). Deduplicated, order kept.
absl::StatusOr<std::vector<std::string>> ResolveTargets(const std::vector<std::string>& targets,
                                                        const std::string& targets_file,
                                                        const std::vector<std::string>& dns);

struct FleetOptions {
  int parallelism = 8;
  double target_timeout_seconds = 900;  // whole plan on one target, retries included
  int retries = 2;                      // after the first attempt, on UNAVAILABLE / connection loss
  double backoff_seconds = 1;           // doubled after each retry
  double outlier_threshold = 0.10;      // a GPU > 10% under its model's median is flagged
  double regression_threshold = 0.05;   // > 5% slower than the baseline is a regression
  bool progress = true;
  // Per target, per attempt: what one server may send before the client ends that target with
  // an error (no retry). A broken or hostile server would otherwise grow memory until
  // target_timeout.
  int64_t max_rows = 100000;
  int64_t max_bytes = int64_t{256} << 20;  // results and item errors, as serialized
  int64_t max_errors = 1000;
};

// --targets_file limits: a larger file (or /dev/zero) is refused, not read without bound.
inline constexpr int64_t kMaxTargetsFileBytes = 1 << 20;
inline constexpr int kMaxTargetsFileLines = 10000;

// Runs `plan` (its sweeps in order) on every target and returns the report: targets, rows, failures, and (Summarize)
// the per-model summaries and outliers. `make_channel` builds a channel for a target (TLS/token
// options live there); `decorate` adds per-call metadata (the bearer token).
v1::FleetReport RunFleet(const std::vector<std::string>& targets, const v1::Plan& plan,
                         const FleetOptions& options,
                         const std::function<std::shared_ptr<grpc::Channel>(const std::string&)>&
                             make_channel,
                         const std::function<void(grpc::ClientContext*)>& decorate);

// (Re)computes report->summaries and report->outliers from the rows: one group per GPU model and
// measurement (kernel, elements, mode, block size, items per thread); a GPU more than `threshold`
// under its group's median is an outlier. Also sets the target counts, failures and the
// SDC suspects (output hashes that disagree with their group's majority, FleetSdcSuspect).
void Summarize(double threshold, v1::FleetReport* report);

// Parses a report printed by `gpubench fleet --format=json` (or --report_file).
absl::StatusOr<v1::FleetReport> ParseFleetReport(const std::string& json);

// Compares `report` with `baseline` by hardware identity (node, GPU UUID) and measurement, never by
// address; fills report->regressions: SLOWER (more than `threshold` down), FAILED (a node or target
// that completed in the baseline failed now), MISSING (a baseline row with no counterpart now).
void CompareWithBaseline(const v1::FleetReport& baseline, double threshold,
                         v1::FleetReport* report);

// Renders the report: table (rows, per-model summary, outliers, failures, regressions), csv
// (rows, then failed targets) or json (the whole v1::FleetReport).
std::string RenderFleet(const v1::FleetReport& report, const std::string& format);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_FLEET_H_
