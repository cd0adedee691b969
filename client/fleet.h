// `gpubench fleet`: one plan across many gpubench servers, with bounded parallelism, per-target
// deadlines, retries with backoff, a fleet summary per GPU model with outliers, and regression
// checks against a baseline report.
#ifndef GPUBENCH_CLIENT_FLEET_H_
#define GPUBENCH_CLIENT_FLEET_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

// Targets from "host:port" lists, a file (one per line, '#' comments) and DNS names
// ("name:port", every address the name resolves to). Deduplicated, order kept.
absl::StatusOr<std::vector<std::string>> ResolveTargets(const std::vector<std::string>& targets,
                                                        const std::string& targets_file,
                                                        const std::vector<std::string>& dns);

struct FleetOptions {
  int parallelism = 8;
  double target_timeout_seconds = 900;  // whole plan on one target, retries included
  int retries = 2;                      // after the first attempt, on UNAVAILABLE / connection loss
  double backoff_seconds = 1;           // doubled after each retry
  double outlier_threshold = 0.10;      // a target > 10% under its model's median is flagged
  double regression_threshold = 0.05;   // > 5% slower than the baseline is a regression
  bool progress = true;
};

struct FleetRow {
  std::string target, gpu_model, gpu_uuid, driver, kernel, dtype, cache_mode;
  int64_t elements = 0;
  int device = 0;
  double median_seconds = 0;
  double bandwidth_bytes_per_second = 0;
  bool verified = false;
};

struct TargetOutcome {
  std::string target;
  bool ok = false;
  std::string error;  // why it failed, when it did
  int attempts = 0;
  std::vector<FleetRow> rows;
};

struct FleetReport {
  std::vector<TargetOutcome> targets;
  std::vector<FleetRow> rows() const;
};

// Runs `plan` on every target. `make_channel` builds a channel for a target (TLS/token options
// live there); `decorate` adds per-call metadata (the bearer token).
FleetReport RunFleet(const std::vector<std::string>& targets, const v1::RunSweepRequest& plan,
                     const FleetOptions& options,
                     const std::function<std::shared_ptr<grpc::Channel>(const std::string&)>&
                         make_channel,
                     const std::function<void(grpc::ClientContext*)>& decorate);

// Renders rows, the per-model summary with outliers, and failures. `format`: table, csv, json.
std::string RenderFleet(const FleetReport& report, const FleetOptions& options,
                        const std::string& format);

// Compares with a baseline (a previous `--format=json` report). Returns the regressions as
// readable lines (empty: none). INVALID_ARGUMENT for an unreadable baseline.
absl::StatusOr<std::vector<std::string>> FindRegressions(const FleetReport& report,
                                                         const std::string& baseline_json,
                                                         double threshold);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_FLEET_H_
