#include "client/fleet.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/sizes.h"

namespace gpubench::client {
namespace {

using Json = nlohmann::json;

absl::StatusOr<std::vector<std::string>> ResolveDns(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--dns entry '", spec, "' must be name:port"));
  }
  const std::string name = spec.substr(0, colon), port = spec.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (int rc = getaddrinfo(name.c_str(), port.c_str(), &hints, &result); rc != 0) {
    return absl::NotFoundError(absl::StrCat("cannot resolve ", name, ": ", gai_strerror(rc)));
  }
  std::vector<std::string> out;
  for (addrinfo* a = result; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {0};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof(text));
      out.push_back(absl::StrCat(text, ":", port));
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                sizeof(text));
      out.push_back(absl::StrCat("[", text, "]:", port));
    }
  }
  freeaddrinfo(result);
  return out;
}

bool Retryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::UNKNOWN ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

std::chrono::system_clock::time_point ToSystem(std::chrono::steady_clock::time_point t) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             t - std::chrono::steady_clock::now());
}

Json RowJson(const FleetRow& r) {
  return {{"target", r.target},       {"gpu_model", r.gpu_model},
          {"gpu_uuid", r.gpu_uuid},   {"driver", r.driver},
          {"device", r.device},       {"kernel", r.kernel},
          {"dtype", r.dtype},         {"elements", r.elements},
          {"cache_mode", r.cache_mode}, {"median_seconds", r.median_seconds},
          {"bandwidth_bytes_per_second", r.bandwidth_bytes_per_second},
          {"verified", r.verified}};
}

struct SummaryRow {
  std::string gpu_model, kernel, cache_mode;
  int64_t elements;
  int targets;
  double median_bw, min_bw, max_bw;
  std::vector<std::string> outliers;
};

std::vector<SummaryRow> Summarize(const std::vector<FleetRow>& rows, double threshold) {
  std::map<std::tuple<std::string, std::string, int64_t, std::string>, std::vector<const FleetRow*>>
      groups;
  for (const FleetRow& r : rows) groups[{r.gpu_model, r.kernel, r.elements, r.cache_mode}].push_back(&r);
  std::vector<SummaryRow> out;
  for (auto& [key, members] : groups) {
    std::vector<double> bw;
    for (const FleetRow* r : members) bw.push_back(r->bandwidth_bytes_per_second);
    std::sort(bw.begin(), bw.end());
    const size_t n = bw.size();
    const double median = n % 2 ? bw[n / 2] : 0.5 * (bw[n / 2 - 1] + bw[n / 2]);
    SummaryRow s{std::get<0>(key), std::get<1>(key), std::get<3>(key), std::get<2>(key),
                 static_cast<int>(n), median, bw.front(), bw.back(), {}};
    for (const FleetRow* r : members) {
      if (r->bandwidth_bytes_per_second < median * (1 - threshold)) {
        s.outliers.push_back(absl::StrFormat("%s (%.1f%% under)", r->target,
                                             100 * (1 - r->bandwidth_bytes_per_second / median)));
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<FleetRow> FleetReport::rows() const {
  std::vector<FleetRow> out;
  for (const TargetOutcome& t : targets) out.insert(out.end(), t.rows.begin(), t.rows.end());
  return out;
}

absl::StatusOr<std::vector<std::string>> ResolveTargets(const std::vector<std::string>& targets,
                                                        const std::string& targets_file,
                                                        const std::vector<std::string>& dns) {
  std::vector<std::string> all = targets;
  if (!targets_file.empty()) {
    std::ifstream in(targets_file);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", targets_file));
    std::string line;
    while (std::getline(in, line)) {
      std::string t(absl::StripAsciiWhitespace(line));
      if (!t.empty() && t[0] != '#') all.push_back(t);
    }
  }
  for (const std::string& d : dns) {
    absl::StatusOr<std::vector<std::string>> resolved = ResolveDns(d);
    if (!resolved.ok()) return resolved.status();
    all.insert(all.end(), resolved->begin(), resolved->end());
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& t : all) {
    if (seen.insert(t).second) out.push_back(t);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError("no targets: use --targets, --targets_file or --dns");
  }
  return out;
}

FleetReport RunFleet(const std::vector<std::string>& targets, const v1::RunSweepRequest& plan,
                     const FleetOptions& options,
                     const std::function<std::shared_ptr<grpc::Channel>(const std::string&)>&
                         make_channel,
                     const std::function<void(grpc::ClientContext*)>& decorate) {
  FleetReport report;
  report.targets.resize(targets.size());
  std::atomic<size_t> next{0};
  std::atomic<int> finished{0};
  std::mutex print_mu;
  auto say = [&](const std::string& line) {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(print_mu);
    std::cerr << "[" << finished.load() << "/" << targets.size() << " done] " << line << "\n";
  };
  auto work = [&] {
    for (size_t i = next++; i < targets.size(); i = next++) {
      TargetOutcome& out = report.targets[i];
      out.target = targets[i];
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::milliseconds(
                                static_cast<int64_t>(1000 * options.target_timeout_seconds));
      double backoff = options.backoff_seconds;
      while (true) {
        ++out.attempts;
        out.rows.clear();
        out.error.clear();
        auto channel = make_channel(out.target);
        auto stub = v1::Benchmark::NewStub(channel);
        grpc::Status status;
        v1::DeviceInfo device;
        {
          grpc::ClientContext ctx;
          decorate(&ctx);
          ctx.set_deadline(std::min(ToSystem(deadline),
                                    std::chrono::system_clock::now() + std::chrono::seconds(15)));
          v1::ListDevicesResponse devices;
          status = stub->ListDevices(&ctx, {}, &devices);
          if (status.ok()) {
            for (const auto& d : devices.devices()) {
              if (d.index() == plan.device_index()) device = d;
            }
          }
        }
        std::vector<std::string> item_errors;
        if (status.ok()) {
          say(absl::StrCat(out.target, ": running on ", device.name(), " (attempt ",
                           out.attempts, ")"));
          grpc::ClientContext ctx;
          decorate(&ctx);
          ctx.set_deadline(ToSystem(deadline));
          auto reader = stub->RunSweep(&ctx, plan);
          v1::RunSweepResponse event;
          while (reader->Read(&event)) {
            if (event.has_result()) {
              const v1::RunResult& r = event.result();
              out.rows.push_back({out.target, r.device().name(), r.device().uuid(),
                                  r.device().driver_version(), r.request().kernel(),
                                  r.request().dtype(),
                                  r.request().cache_mode() == v1::HOT ? "hot" : "cold",
                                  r.request().elements(), r.request().device_index(),
                                  r.timing().median_seconds(),
                                  r.throughput().bandwidth_bytes_per_second(),
                                  r.verification().passed() || !r.verification().requested()});
            } else if (event.has_error()) {
              item_errors.push_back(absl::StrCat(event.error().kernel(), " ",
                                                 event.error().elements(), ": ",
                                                 event.error().message()));
            }
          }
          status = reader->Finish();
        }
        if (status.ok() && item_errors.empty()) {
          out.ok = true;
          break;
        }
        out.error = status.ok() ? absl::StrCat(item_errors.size(), " plan item(s) failed: ",
                                               absl::StrJoin(item_errors, "; "))
                                : absl::StrCat("code ", static_cast<int>(status.error_code()), ": ",
                                               status.error_message());
        const auto now = std::chrono::steady_clock::now();
        const bool time_left =
            now + std::chrono::milliseconds(static_cast<int64_t>(1000 * backoff)) < deadline;
        if (!status.ok() && Retryable(status.error_code()) && out.attempts <= options.retries &&
            time_left) {
          say(absl::StrCat(out.target, ": ", out.error, "; retrying in ", backoff, " s"));
          std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(1000 * backoff)));
          backoff *= 2;
          continue;
        }
        break;
      }
      ++finished;
      say(absl::StrCat(out.target, out.ok ? ": ok, " : ": FAILED: ",
                       out.ok ? absl::StrCat(out.rows.size(), " results") : out.error));
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(options.parallelism, static_cast<int>(targets.size())));
  for (int t = 0; t < n; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  return report;
}

std::string RenderFleet(const FleetReport& report, const FleetOptions& options,
                        const std::string& format) {
  const std::vector<FleetRow> rows = report.rows();
  const std::vector<SummaryRow> summary = Summarize(rows, options.outlier_threshold);
  if (format == "json") {
    Json j;
    j["targets"] = Json::array();
    for (const TargetOutcome& t : report.targets) {
      Json rows_json = Json::array();
      for (const FleetRow& r : t.rows) rows_json.push_back(RowJson(r));
      j["targets"].push_back({{"target", t.target}, {"ok", t.ok}, {"error", t.error},
                              {"attempts", t.attempts}, {"rows", rows_json}});
    }
    j["summary"] = Json::array();
    for (const SummaryRow& s : summary) {
      j["summary"].push_back({{"gpu_model", s.gpu_model}, {"kernel", s.kernel},
                              {"elements", s.elements}, {"cache_mode", s.cache_mode},
                              {"targets", s.targets}, {"median_bandwidth", s.median_bw},
                              {"min_bandwidth", s.min_bw}, {"max_bandwidth", s.max_bw},
                              {"outliers", s.outliers}});
    }
    return j.dump(2) + "\n";
  }
  std::string out;
  if (format == "csv") {
    out = "target,gpu_model,gpu_uuid,driver,device,kernel,dtype,elements,cache_mode,"
          "median_seconds,bandwidth_bytes_per_second,verified,error\n";
    for (const FleetRow& r : rows) {
      absl::StrAppend(&out, absl::StrFormat("%s,\"%s\",%s,\"%s\",%d,%s,%s,%d,%s,%.9g,%.6g,%s,\n",
                                            r.target, r.gpu_model, r.gpu_uuid, r.driver, r.device,
                                            r.kernel, r.dtype, r.elements, r.cache_mode,
                                            r.median_seconds, r.bandwidth_bytes_per_second,
                                            r.verified ? "pass" : "FAIL"));
    }
    for (const TargetOutcome& t : report.targets) {
      if (!t.ok) {
        std::string e = t.error;
        std::replace(e.begin(), e.end(), '"', '\'');
        absl::StrAppend(&out, t.target, ",,,,,,,,,,,,\"", e, "\"\n");
      }
    }
    return out;
  }
  absl::StrAppend(&out, absl::StrFormat("%-24s %-22s %-16s %-9s %-5s %12s %12s %s\n", "target",
                                        "gpu", "kernel", "elements", "mode", "median", "bandwidth",
                                        "verified"));
  for (const FleetRow& r : rows) {
    absl::StrAppend(&out, absl::StrFormat("%-24s %-22s %-16s %-9s %-5s %12s %12s %s\n", r.target,
                                          r.gpu_model.substr(0, 22), r.kernel,
                                          FormatElementCount(r.elements), r.cache_mode,
                                          FormatSeconds(r.median_seconds),
                                          FormatBytesPerSecond(r.bandwidth_bytes_per_second),
                                          r.verified ? "pass" : "FAIL"));
  }
  absl::StrAppend(&out, "\nfleet summary per GPU model (outliers: more than ",
                  absl::StrFormat("%.0f", 100 * options.outlier_threshold),
                  "% under the model's median)\n");
  for (const SummaryRow& s : summary) {
    absl::StrAppend(&out, absl::StrFormat(
                              "  %-22s %-16s %-9s %-5s n=%d median %s min %s spread %.1f%%%s\n",
                              s.gpu_model.substr(0, 22), s.kernel, FormatElementCount(s.elements),
                              s.cache_mode, s.targets, FormatBytesPerSecond(s.median_bw),
                              FormatBytesPerSecond(s.min_bw),
                              s.median_bw > 0 ? 100 * (s.max_bw - s.min_bw) / s.median_bw : 0.0,
                              s.outliers.empty() ? ""
                                                 : absl::StrCat("  OUTLIERS: ",
                                                                absl::StrJoin(s.outliers, ", "))));
  }
  int failed = 0;
  for (const TargetOutcome& t : report.targets) failed += !t.ok;
  absl::StrAppend(&out, "\n", report.targets.size() - failed, " of ", report.targets.size(),
                  " targets completed\n");
  for (const TargetOutcome& t : report.targets) {
    if (!t.ok) {
      absl::StrAppend(&out, "FAILED ", t.target, " after ", t.attempts, " attempt(s): ", t.error,
                      "\n");
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> FindRegressions(const FleetReport& report,
                                                         const std::string& baseline_json,
                                                         double threshold) {
  Json base;
  try {
    base = Json::parse(baseline_json);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("baseline is not JSON: ", e.what()));
  }
  if (!base.contains("targets") || !base["targets"].is_array()) {
    return absl::InvalidArgumentError("baseline has no 'targets' (use a --format=json report)");
  }
  std::map<std::tuple<std::string, int, std::string, int64_t, std::string>, double> old;
  std::set<std::string> old_targets;
  for (const Json& t : base["targets"]) {
    if (t.value("ok", false)) old_targets.insert(t.value("target", ""));
    for (const Json& r : t.value("rows", Json::array())) {
      old[{r.value("target", ""), r.value("device", 0), r.value("kernel", ""),
           r.value("elements", int64_t{0}), r.value("cache_mode", "")}] =
          r.value("bandwidth_bytes_per_second", 0.0);
    }
  }
  std::vector<std::string> regressions;
  for (const TargetOutcome& t : report.targets) {
    if (!t.ok && old_targets.count(t.target)) {
      regressions.push_back(absl::StrCat(t.target, ": completed in the baseline, failed now: ",
                                         t.error));
    }
    for (const FleetRow& r : t.rows) {
      auto it = old.find({r.target, r.device, r.kernel, r.elements, r.cache_mode});
      if (it == old.end() || it->second <= 0) continue;
      const double change = r.bandwidth_bytes_per_second / it->second - 1;
      if (change < -threshold) {
        regressions.push_back(absl::StrFormat(
            "%s device %d (%s %s): %s %s %s: %s now vs %s in the baseline (%.1f%%)", r.target,
            r.device, r.gpu_model, r.gpu_uuid, r.kernel, FormatElementCount(r.elements),
            r.cache_mode, FormatBytesPerSecond(r.bandwidth_bytes_per_second),
            FormatBytesPerSecond(it->second), 100 * change));
      }
    }
  }
  return regressions;
}

}  // namespace gpubench::client
