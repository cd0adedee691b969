// `gpubench fleet`: one plan on many servers (client/fleet.h), outliers and regressions.
#include "client/fleet.h"

#include <grpcpp/grpcpp.h>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "common/files.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "proto/plan_json.h"

ABSL_FLAG(
    std::string, plan, "",
    "fleet: JSON plan file, as for --schedule_plan (a RunSweepRequest, or {\"sweeps\": [...]}).");
ABSL_FLAG(std::string, targets, "", "fleet: comma-separated host:port targets.");
ABSL_FLAG(std::string, targets_file, "", "fleet: file of host:port targets, one per line.");
ABSL_FLAG(std::string, dns, "",
          "fleet: comma-separated name:port; every address the name resolves to is a target "
          "(a Kubernetes headless Service returns every pod).");
ABSL_FLAG(int, parallelism, 8, "fleet: targets benchmarked at once.");
ABSL_FLAG(double, target_timeout, 900, "fleet: seconds for the whole plan on one target.");
ABSL_FLAG(int, retries, 2, "fleet: retries of a target after UNAVAILABLE (doubling backoff).");
ABSL_FLAG(int64_t, max_target_rows, 100000,
          "fleet: results kept from one target; more ends that target with an error (a broken "
          "or hostile server cannot exhaust the client's memory).");
ABSL_FLAG(int64_t, max_target_bytes, 256 << 20,
          "fleet: bytes of results and errors read from one target; more ends that target.");
ABSL_FLAG(int64_t, max_target_errors, 1000,
          "fleet: plan item errors kept from one target; more ends that target.");
ABSL_FLAG(std::string, baseline, "",
          "fleet: earlier --format=json report (or --report_file); exit 5 when a GPU is slower, a "
          "node that completed there failed, or a row of it is missing now.");
ABSL_FLAG(double, regression_threshold, 0.05, "fleet: bandwidth drop that counts as a regression.");
ABSL_FLAG(double, outlier_threshold, 0.10, "fleet: shortfall under the model's median flagged.");
ABSL_FLAG(std::string, report_file, "",
          "fleet: also write the whole JSON report (rows, summaries, outliers, failures, "
          "regressions) to this file.");

namespace gpubench::client {
namespace {

// A week: longer is a typo, and 1e308 s overflows the deadline arithmetic.
constexpr double kMaxTargetTimeout = 7 * 24 * 3600;

}  // namespace

int Fleet(const Invocation& /*invocation*/) {
  std::string plan_text;
  if (absl::GetFlag(FLAGS_plan).empty() ||
      !ReadFileToString(absl::GetFlag(FLAGS_plan), &plan_text)) {
    std::cerr << "gpubench: fleet needs a readable --plan file\n";
    return kExitUsage;
  }
  absl::StatusOr<v1::Plan> plan = ParsePlanJson(plan_text);
  if (!plan.ok()) {
    std::cerr << "gpubench: --plan: " << plan.status().message() << "\n";
    return kExitUsage;
  }
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    for (absl::string_view p : absl::StrSplit(s, ',', absl::SkipWhitespace())) out.emplace_back(p);
    return out;
  };
  absl::StatusOr<std::vector<std::string>> targets =
      ResolveTargets(split(absl::GetFlag(FLAGS_targets)), absl::GetFlag(FLAGS_targets_file),
                     split(absl::GetFlag(FLAGS_dns)));
  if (!targets.ok()) {
    std::cerr << "gpubench: " << targets.status().message() << "\n";
    return kExitUsage;
  }
  std::optional<v1::FleetReport> baseline;
  if (const std::string f = absl::GetFlag(FLAGS_baseline); !f.empty()) {
    std::string text;
    if (!ReadFileToString(f, &text)) {
      std::cerr << "gpubench: cannot read --baseline " << f << "\n";
      return kExitUsage;
    }
    absl::StatusOr<v1::FleetReport> parsed = ParseFleetReport(text);
    if (!parsed.ok()) {
      std::cerr << "gpubench: --baseline " << f << ": " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    baseline = *std::move(parsed);
  }
  FleetOptions options;
  options.parallelism = absl::GetFlag(FLAGS_parallelism);
  options.target_timeout_seconds = absl::GetFlag(FLAGS_target_timeout);
  // NaN, negative or absurd deadlines would turn into undefined millisecond counts.
  if (!(options.target_timeout_seconds > 0 &&
        options.target_timeout_seconds <= kMaxTargetTimeout)) {
    std::cerr << "gpubench: --target_timeout must be in (0, " << kMaxTargetTimeout
              << "] seconds (got " << options.target_timeout_seconds << ")\n";
    return kExitUsage;
  }
  options.max_rows = absl::GetFlag(FLAGS_max_target_rows);
  options.max_bytes = absl::GetFlag(FLAGS_max_target_bytes);
  options.max_errors = absl::GetFlag(FLAGS_max_target_errors);
  if (options.max_rows < 1 || options.max_bytes < 1 || options.max_errors < 0) {
    std::cerr << "gpubench: --max_target_rows and --max_target_bytes must be >= 1, "
                 "--max_target_errors >= 0\n";
    return kExitUsage;
  }
  options.retries = absl::GetFlag(FLAGS_retries);
  options.outlier_threshold = absl::GetFlag(FLAGS_outlier_threshold);
  options.regression_threshold = absl::GetFlag(FLAGS_regression_threshold);
  options.progress = absl::GetFlag(FLAGS_progress);
  v1::FleetReport report = RunFleet(
      *targets, *plan, options, [](const std::string& t) { return MakeChannel(t); },
      [](grpc::ClientContext* c) {
        if (!Token().empty()) c->AddMetadata("authorization", "Bearer " + Token());
      });
  if (baseline) {
    report.set_baseline(absl::GetFlag(FLAGS_baseline));
    CompareWithBaseline(*baseline, options.regression_threshold, &report);
  }
  std::cout << RenderFleet(report, absl::GetFlag(FLAGS_format)) << std::flush;
  bool written = static_cast<bool>(std::cout);
  if (!written) std::cerr << "gpubench: cannot write stdout\n";
  if (const std::string f = absl::GetFlag(FLAGS_report_file); !f.empty()) {
    // Whole or not at all, and never through a link planted at a predictable temporary name.
    if (absl::Status s = ReplaceFileContents(f, RenderFleet(report, "json")); !s.ok()) {
      std::cerr << "gpubench: could not write --report_file: " << s.message() << "\n";
      written = false;
    }
  }
  for (const v1::FleetSdcSuspect& s : report.sdc_suspects()) std::cerr << s.description() << "\n";
  if (!report.regressions().empty()) {
    std::cerr << "REGRESSIONS against " << report.baseline() << " (more than "
              << 100 * options.regression_threshold << "% slower, failed, or missing):\n";
    for (const v1::FleetRegression& g : report.regressions()) {
      std::cerr << "  " << g.description() << "\n";
    }
    return kExitRegression;  // stays 5 even when a write failed (said above)
  }
  if (!report.sdc_suspects().empty()) return kExitRegression;  // an output hash disagreed
  if (!written) return kExitRunFailed;  // a report nobody can read is not a success
  if (!report.failures().empty()) return kExitRunFailed;
  return kExitOk;
}

}  // namespace gpubench::client
