#include "client/fleet.h"

#include <arpa/inet.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <netdb.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/output.h"
#include "common/sizes.h"
#include "common/statistics.h"

namespace gpubench::client {
namespace {

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

const char* ModeName(v1::CacheMode mode) { return mode == v1::HOT ? "hot" : "cold"; }

// "ENTRY@HASH": a user kernel's entry and the first 12 hex digits of its code's SHA-256 (the hash
// git shows of a commit: enough to tell a user's revisions apart in one report).
std::string UserKernelId(const std::string& entry, const std::string& sha256_hex) {
  return absl::StrCat(entry, "@", sha256_hex.substr(0, 12));
}

// The SHA-256 of a user kernel's code in hex: the server's UserKernelReport.code_sha256 of the
// same submitted bytes.
std::string CodeSha256(const v1::UserKernel& k) {
  const std::string& code = k.has_ptx() ? k.ptx() : k.has_cubin() ? k.cubin() : k.source();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(code.data(), code.size(), digest, &size, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    absl::StrAppend(&hex, absl::Hex(digest[i], absl::kZeroPad2));
  }
  return hex;
}

// What a row measured, as summaries, outliers, regressions and the table name it: the catalog
// kernel, or "user:ENTRY@HASH" for a user kernel (all of whose rows have kernel "user_kernel").
std::string KernelOf(const v1::FleetRow& r) {
  return r.user_kernel().empty() ? r.kernel() : absl::StrCat("user:", r.user_kernel());
}

// What identifies a measurement: where it ran (node, GPU) and what it measured.
using MeasurementKey = std::tuple<std::string, int64_t, int, int, int>;
using RowKey = std::tuple<std::string, std::string, MeasurementKey>;

MeasurementKey MeasurementOf(const v1::FleetRow& r) {
  // COLD and CACHE_MODE_UNSPECIFIED mean the same.
  return {KernelOf(r), r.elements(), r.cache_mode() == v1::HOT ? v1::HOT : v1::COLD, r.block_size(),
          r.items_per_thread()};
}

RowKey KeyOf(const v1::FleetRow& r) { return {r.node_name(), r.gpu_uuid(), MeasurementOf(r)}; }

// "add_f32 64Ki cold block 256x4", the measurement in words.
std::string MeasurementText(const std::string& kernel, int64_t elements, v1::CacheMode mode,
                            int block_size, int items_per_thread) {
  return absl::StrCat(kernel, " ", FormatElementCount(elements), " ", ModeName(mode), " block ",
                      block_size, "x", items_per_thread);
}

// "node-a GPU-1234 (NVIDIA H200) at 10.0.0.5:50051"
std::string GpuText(const std::string& node, const std::string& uuid, const std::string& model,
                    const std::string& target) {
  return absl::StrCat(node.empty() ? "(unnamed node)" : node, " ", uuid,
                      model.empty() ? "" : absl::StrCat(" (", model, ")"),
                      target.empty() ? "" : absl::StrCat(" at ", target));
}

// The primary metric of a row (what outliers and regressions judge) and its value; a row of an
// older version's report has only bandwidth.
std::string MetricOf(const v1::FleetRow& r) {
  return r.metric().empty() ? "bytes_per_second" : r.metric();
}
double ValueOf(const v1::FleetRow& r) {
  return r.metric().empty() ? r.bandwidth_bytes_per_second() : r.value();
}
// Seconds per operation (latency): lower is better; every rate: higher is better.
bool LowerIsBetter(const std::string& metric) { return metric == "seconds_per_operation"; }
// How much worse `value` is than `reference`, as a fraction (> 0: worse).
double FractionWorse(double value, double reference, const std::string& metric) {
  return LowerIsBetter(metric) ? value / reference - 1 : 1 - value / reference;
}

// A row's 95% interval of its value, when it has a usable one: one that holds the value (an
// edited or older report's row may not; it is then judged by its value alone).
struct Interval {
  double low, high;
};
Interval IntervalOf(const v1::FleetRow& r) {
  const double v = ValueOf(r);
  if (r.metric().empty() || !(r.value_high() > 0) || !(r.value_low() <= v) ||
      !(v <= r.value_high())) {
    return {v, v};
  }
  return {r.value_low(), r.value_high()};
}

// "3.21 TB/s", "512.3 TFLOP/s", "612.4 ns/load".
std::string FormatValue(const std::string& metric, const std::string& unit, double value) {
  const std::string what = unit.empty() ? "op" : unit;
  if (metric == "seconds_per_operation") return absl::StrCat(FormatSeconds(value), "/", what);
  if (metric == "operations_per_second") {
    static constexpr std::pair<double, const char*> kScales[] = {
        {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}};
    for (const auto& [scale, prefix] : kScales) {
      if (value >= scale) return absl::StrFormat("%.1f %s%s/s", value / scale, prefix, what);
    }
    return absl::StrFormat("%.4g %s/s", value, what);
  }
  return FormatBytesPerSecond(value);
}

// One result of the plan as a report row.
void FillRow(const v1::RunResult& r, const std::string& target, v1::FleetRow* row) {
  row->set_node_name(r.device().node_name());
  row->set_gpu_uuid(r.device().uuid());
  row->set_gpu_model(r.device().name());
  row->set_device_index(r.request().device_index());
  row->set_driver_version(r.device().driver_version());
  row->set_target(target);
  row->set_kernel(r.request().kernel());
  if (r.has_user_kernel()) {
    row->set_user_kernel(UserKernelId(r.user_kernel().entry(), r.user_kernel().code_sha256()));
    row->set_user_kernel_sha256(r.user_kernel().code_sha256());
  }
  row->set_dtype(r.request().dtype());
  row->set_elements(r.request().elements());
  row->set_cache_mode(r.request().cache_mode() == v1::HOT ? v1::HOT : v1::COLD);
  row->set_block_size(r.request().block_size());
  row->set_items_per_thread(r.request().items_per_thread());
  row->set_median_seconds(r.timing().median_seconds());
  row->set_sampling_wall_seconds(r.measurement().sampling_wall_seconds());
  row->set_samples_taken(r.measurement().samples_taken());
  row->set_stop_rule(r.measurement().stop_rule());
  *row->mutable_phases() = r.measurement().phases();
  row->set_bandwidth_bytes_per_second(r.throughput().bandwidth_bytes_per_second());
  row->set_verified(r.verification().passed() || !r.verification().requested());
  const v1::Throughput& t = r.throughput();
  row->set_metric(t.metric().empty() ? "bytes_per_second" : t.metric());
  row->set_operation_unit(t.operation_unit());
  row->set_seed(r.request().seed());
  if (r.has_output_hash()) row->set_output_hash(r.output_hash());
  row->set_value(row->metric() == "operations_per_second"   ? t.operations_per_second()
                 : row->metric() == "seconds_per_operation" ? t.seconds_per_operation()
                                                            : t.bandwidth_bytes_per_second());
  // The median's 95% interval: 1.96 x its asymptotic standard error, 1.2533 sigma / sqrt(n). Sigma
  // from the IQR (IQR / 1.349) where there is one: one preempted sample can make the stddev
  // larger than the median and the interval unbounded, which would hide a 100x regression.
  const double median = r.timing().median_seconds();
  const int n = r.timing().samples();
  if (n >= 2 && median > 0 && row->value() > 0) {
    const double sigma = r.timing().iqr_seconds() > 0 ? r.timing().iqr_seconds() / 1.349
                                                      : r.timing().stddev_seconds();
    const double half = 1.96 * 1.2533 * sigma / std::sqrt(1.0 * n);
    if (row->metric() == "seconds_per_operation") {
      row->set_value_low(row->value() * std::max(0.0, median - half) / median);
      row->set_value_high(row->value() * (median + half) / median);
    } else {
      row->set_value_low(row->value() * median / (median + half));
      row->set_value_high(median - half > 0 ? row->value() * median / (median - half)
                                            : std::numeric_limits<double>::infinity());
    }
  }
}

void FillRegressionFrom(const v1::FleetRow& r, v1::FleetRegression* g) {
  g->set_node_name(r.node_name());
  g->set_gpu_uuid(r.gpu_uuid());
  g->set_gpu_model(r.gpu_model());
  g->set_target(r.target());
  g->set_kernel(KernelOf(r));
  g->set_elements(r.elements());
  g->set_cache_mode(r.cache_mode());
  g->set_block_size(r.block_size());
  g->set_items_per_thread(r.items_per_thread());
}

// The GPUs whose output must be bit-identical: one model and driver, one kernel, size and seed.
using SdcKey = std::tuple<std::string, std::string, std::string, int64_t, uint64_t>;

// Fills report->sdc_suspects: in every group of two or more GPUs with an output hash, each GPU
// whose hash is not the strict majority's (every GPU when no hash has a strict majority).
void FindSdcSuspects(v1::FleetReport* report) {
  report->clear_sdc_suspects();
  std::map<SdcKey, std::map<std::string, const v1::FleetRow*>> groups;  // by GPU: one row each
  for (const v1::FleetTarget& t : report->targets()) {
    for (const v1::FleetRow& r : t.rows()) {
      // A user kernel's inputs come from a fresh seed on every run: no two GPUs share one, and a
      // replay by seed is refused.
      if (!r.has_output_hash() || !r.user_kernel().empty()) continue;
      groups[{r.gpu_model(), r.driver_version(), r.kernel(), r.elements(), r.seed()}].emplace(
          absl::StrCat(r.node_name(), "/", r.gpu_uuid()), &r);
    }
  }
  for (const auto& [key, gpus] : groups) {
    if (gpus.size() < 2) continue;
    std::map<uint64_t, int> votes;
    for (const auto& [id, r] : gpus) ++votes[r->output_hash()];
    if (votes.size() == 1) continue;
    std::optional<uint64_t> majority;
    int agreeing = 0;
    for (const auto& [hash, n] : votes) {
      if (2 * n > static_cast<int>(gpus.size())) majority = hash, agreeing = n;
    }
    for (const auto& [id, r] : gpus) {
      if (majority && r->output_hash() == *majority) continue;
      v1::FleetSdcSuspect* s = report->add_sdc_suspects();
      s->set_node_name(r->node_name());
      s->set_gpu_uuid(r->gpu_uuid());
      s->set_gpu_model(r->gpu_model());
      s->set_driver_version(r->driver_version());
      s->set_target(r->target());
      s->set_kernel(r->kernel());
      s->set_elements(r->elements());
      s->set_seed(r->seed());
      s->set_output_hash(r->output_hash());
      if (majority) s->set_majority_hash(*majority);
      s->set_group_gpus(static_cast<int>(gpus.size()));
      s->set_agreeing_gpus(agreeing);
      s->set_description(absl::StrFormat(
          "SDC_SUSPECT %s: %s %s seed %d: output hash %016x %s (%d GPUs of this model and driver "
          "%s); replay: gpubench run %s --size=%d --seed=%d",
          GpuText(r->node_name(), r->gpu_uuid(), r->gpu_model(), r->target()), r->kernel(),
          FormatElementCount(r->elements()), r->seed(), r->output_hash(),
          majority ? absl::StrFormat("differs from the majority's %016x", *majority)
                   : std::string("and no hash has a majority"),
          static_cast<int>(gpus.size()),
          majority ? absl::StrCat(agreeing, " agree") : std::string("disagree"), r->kernel(),
          r->elements(), r->seed()));
    }
  }
}

google::protobuf::Timestamp Now() {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::GetCurrentTimeNanos());
}
}  // namespace

absl::StatusOr<std::vector<std::string>> ResolveTargets(const std::vector<std::string>& targets,
                                                        const std::string& targets_file,
                                                        const std::vector<std::string>& dns) {
  std::vector<std::string> all = targets;
  if (!targets_file.empty()) {
    std::ifstream in(targets_file, std::ios::binary);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", targets_file));
    // Read one byte past the limit: a longer file (a device such as /dev/zero, a wrong path)
    // is refused instead of read without bound.
    std::string text(kMaxTargetsFileBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("cannot read ", targets_file));
    if (static_cast<int64_t>(text.size()) > kMaxTargetsFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(targets_file, " is larger than ", kMaxTargetsFileBytes, " bytes"));
    }
    int lines = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (++lines > kMaxTargetsFileLines) {
        return absl::InvalidArgumentError(
            absl::StrCat(targets_file, " has more than ", kMaxTargetsFileLines, " lines"));
      }
      std::string t(absl::StripAsciiWhitespace(line));
      if (t.find('\0') != std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat(targets_file, " line ", lines, " holds a NUL byte: not a text file"));
      }
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

v1::FleetReport RunFleet(
    const std::vector<std::string>& targets, const v1::Plan& plan, const FleetOptions& options,
    const std::function<std::shared_ptr<grpc::Channel>(const std::string&)>& make_channel,
    const std::function<void(grpc::ClientContext*)>& decorate) {
  v1::FleetReport report;
  *report.mutable_started_at() = Now();
  std::vector<v1::FleetTarget> outcomes(targets.size());
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
      v1::FleetTarget& out = outcomes[i];
      out.set_target(targets[i]);
      const auto target_started = std::chrono::steady_clock::now();
      const auto deadline =
          std::chrono::steady_clock::now() +
          std::chrono::milliseconds(static_cast<int64_t>(1000 * options.target_timeout_seconds));
      double backoff = options.backoff_seconds;
      while (true) {
        out.set_attempts(out.attempts() + 1);
        out.clear_rows();
        out.clear_error();
        out.clear_skipped();
        auto channel = make_channel(out.target());
        auto stub = v1::Benchmark::NewStub(channel);
        // A short query (devices, server info): the target's credentials, at most 15 s.
        auto prepare_query = [&](grpc::ClientContext* ctx) {
          decorate(ctx);
          ctx->set_deadline(std::min(ToSystem(deadline),
                                     std::chrono::system_clock::now() + std::chrono::seconds(15)));
        };
        grpc::Status status;
        v1::DeviceInfo device;
        int device_count = 0;
        {
          grpc::ClientContext ctx;
          prepare_query(&ctx);
          v1::ListDevicesResponse devices;
          status = stub->ListDevices(&ctx, {}, &devices);
          if (status.ok()) {
            device_count = devices.devices_size();
            for (const auto& d : devices.devices()) {
              if (plan.sweeps_size() > 0 && d.index() == plan.sweeps(0).device_index()) device = d;
              if (out.node_name().empty()) out.set_node_name(d.node_name());
            }
          }
        }
        std::vector<std::string> item_errors;
        int64_t bytes = 0, errors_seen = 0;
        std::string over_limit;  // set when the target went past a limit: no retry
        if (status.ok()) {
          say(absl::StrCat(out.target(), ": node ", out.node_name(), ", running on ", device.name(),
                           " (attempt ", out.attempts(), ")"));
          // The plan's sweeps in order, each its own stream; the first failed stream ends the
          // attempt (a retry runs the whole plan again). Each with its 1-based place in the plan.
          std::vector<std::pair<int, const v1::RunSweepRequest*>> sweeps;
          for (const v1::RunSweepRequest& sweep : plan.sweeps()) {
            sweeps.emplace_back(static_cast<int>(sweeps.size()) + 1, &sweep);
          }
          if (device_count >= 2) {  // peer sweeps need a second device
            for (int j = 0; j < plan.multi_device_sweeps_size(); ++j) {
              sweeps.emplace_back(plan.sweeps_size() + j + 1, &plan.multi_device_sweeps(j));
            }
          }
          // A user-kernel sweep runs only where the server allows user kernels; elsewhere it is
          // a skip that says why, not a failure: one node without --allow_user_kernels must not
          // fail the fleet or hide its catalog rows.
          std::string user_kernels_refused;
          if (std::any_of(sweeps.begin(), sweeps.end(),
                          [](const auto& s) { return s.second->has_user_kernel(); })) {
            grpc::ClientContext ctx;
            prepare_query(&ctx);
            v1::GetServerInfoResponse info;
            status = stub->GetServerInfo(&ctx, {}, &info);
            if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
              status = grpc::Status::OK;
              user_kernels_refused = "the server predates user kernels (no GetServerInfo)";
            } else if (status.ok() && !info.limits().allow_user_kernels()) {
              user_kernels_refused =
                  "the server does not allow user kernels (it runs without --allow_user_kernels)";
            } else if (status.ok() && !info.limits().user_kernel_sweeps()) {
              user_kernels_refused = absl::StrCat("the server's version (", info.version(),
                                                  ") does not take user kernels in sweeps");
            }
          }
          for (const auto& [sweep_number, sweep] : sweeps) {
            if (!status.ok()) break;
            // "user:ENTRY@HASH": how this sweep's rows, errors and skips name its user kernel.
            const std::string user_kernel =
                sweep->has_user_kernel()
                    ? absl::StrCat("user:", UserKernelId(sweep->user_kernel().entry(),
                                                         CodeSha256(sweep->user_kernel())))
                    : "";
            if (!user_kernel.empty() && !user_kernels_refused.empty()) {
              v1::FleetSkip* skip = out.add_skipped();
              skip->set_sweep(sweep_number);
              skip->set_kernel(user_kernel);
              skip->set_reason(user_kernels_refused);
              say(absl::StrCat(out.target(), ": skipped sweep ", sweep_number, " (", user_kernel,
                               "): ", user_kernels_refused));
              continue;
            }
            grpc::ClientContext ctx;
            decorate(&ctx);
            ctx.set_deadline(ToSystem(deadline));
            auto reader = stub->RunSweep(&ctx, *sweep);
            v1::RunSweepResponse event;
            auto previous_item = std::chrono::steady_clock::now();
            while (reader->Read(&event)) {
              if (!event.has_result() && !event.has_error()) continue;
              bytes += static_cast<int64_t>(event.ByteSizeLong());
              const auto now = std::chrono::steady_clock::now();
              const double item_seconds =
                  std::chrono::duration<double>(now - previous_item).count();
              previous_item = now;
              if (event.has_result()) {
                v1::FleetRow* row = out.add_rows();
                FillRow(event.result(), out.target(), row);
                row->set_item_wall_seconds(item_seconds);
              } else {
                ++errors_seen;
                if (static_cast<int64_t>(item_errors.size()) < options.max_errors) {
                  // Capped too: one message may be as long as the server likes.
                  item_errors.push_back(
                      absl::StrCat(user_kernel.empty() ? event.error().kernel() : user_kernel, " ",
                                   event.error().elements(), ": ",
                                   absl::string_view(event.error().message()).substr(0, 1024)));
                }
              }
              if (out.rows_size() > options.max_rows || bytes > options.max_bytes ||
                  errors_seen > options.max_errors) {
                over_limit =
                    absl::StrCat("target exceeded the client's limit: ",
                                 out.rows_size() > options.max_rows
                                     ? absl::StrCat("more than ", options.max_rows,
                                                    " results (--max_target_rows)")
                                 : bytes > options.max_bytes
                                     ? absl::StrCat("more than ", options.max_bytes,
                                                    " bytes of results (--max_target_bytes)")
                                     : absl::StrCat("more than ", options.max_errors,
                                                    " item errors (--max_target_errors)"),
                                 "; its stream was cancelled");
                out.mutable_rows()->DeleteSubrange(
                    static_cast<int>(std::min<int64_t>(out.rows_size(), options.max_rows)),
                    static_cast<int>(std::max<int64_t>(0, out.rows_size() - options.max_rows)));
                ctx.TryCancel();
                break;
              }
            }
            status = reader->Finish();
            if (!over_limit.empty()) break;
            if (!status.ok()) break;
          }
        }
        if (!over_limit.empty()) {
          out.set_error(over_limit);
          break;
        }
        if (status.ok() && item_errors.empty()) {
          out.set_ok(true);
          break;
        }
        out.set_error(status.ok()
                          ? absl::StrCat(errors_seen,
                                         " plan item(s) failed: ", absl::StrJoin(item_errors, "; "))
                          : absl::StrCat("code ", static_cast<int>(status.error_code()), ": ",
                                         status.error_message()));
        const auto now = std::chrono::steady_clock::now();
        const bool time_left =
            now + std::chrono::milliseconds(static_cast<int64_t>(1000 * backoff)) < deadline;
        if (!status.ok() && Retryable(status.error_code()) && out.attempts() <= options.retries &&
            time_left) {
          say(absl::StrCat(out.target(), ": ", out.error(), "; retrying in ", backoff, " s"));
          std::this_thread::sleep_for(
              std::chrono::milliseconds(static_cast<int64_t>(1000 * backoff)));
          backoff *= 2;
          continue;
        }
        break;
      }
      out.set_seconds(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - target_started).count());
      ++finished;
      say(absl::StrCat(out.target(), out.ok() ? ": ok, " : ": FAILED: ",
                       out.ok() ? absl::StrCat(out.rows_size(), " results") : out.error()));
    }
  };
  std::vector<std::thread> threads;
  const int n = std::max(1, std::min<int>(options.parallelism, static_cast<int>(targets.size())));
  for (int t = 0; t < n; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  for (v1::FleetTarget& t : outcomes) *report.add_targets() = std::move(t);
  *report.mutable_finished_at() = Now();
  report.set_outlier_threshold(options.outlier_threshold);
  report.set_regression_threshold(options.regression_threshold);
  Summarize(options.outlier_threshold, &report);
  return report;
}

void Summarize(double threshold, v1::FleetReport* report) {
  report->clear_summaries();
  report->clear_outliers();
  report->clear_failures();
  report->set_targets_total(report->targets_size());
  int completed = 0;
  std::map<std::pair<std::string, MeasurementKey>, std::vector<const v1::FleetRow*>> groups;
  for (const v1::FleetTarget& t : report->targets()) {
    if (t.ok()) {
      ++completed;
    } else {
      v1::FleetTarget* failure = report->add_failures();
      *failure = t;
      failure->clear_rows();
    }
    for (const v1::FleetRow& r : t.rows()) groups[{r.gpu_model(), MeasurementOf(r)}].push_back(&r);
  }
  report->set_targets_completed(completed);
  FindSdcSuspects(report);
  for (const auto& [key, members] : groups) {
    std::vector<double> bandwidths, values;
    for (const v1::FleetRow* r : members) {
      bandwidths.push_back(r->bandwidth_bytes_per_second());
      values.push_back(ValueOf(*r));
    }
    // The statistics of any sample set (here bandwidths and metric values, not seconds).
    const SampleStatistics stats = ComputeStatistics(bandwidths);
    const SampleStatistics value_stats = ComputeStatistics(values);
    const double median = value_stats.median_seconds;
    const v1::FleetRow& first = *members.front();
    const std::string metric = MetricOf(first);
    v1::FleetModelSummary* s = report->add_summaries();
    s->set_gpu_model(first.gpu_model());
    s->set_kernel(KernelOf(first));
    s->set_elements(first.elements());
    s->set_cache_mode(first.cache_mode() == v1::HOT ? v1::HOT : v1::COLD);
    s->set_block_size(first.block_size());
    s->set_items_per_thread(first.items_per_thread());
    s->set_gpus(static_cast<int>(members.size()));
    s->set_median_bandwidth_bytes_per_second(stats.median_seconds);
    s->set_min_bandwidth_bytes_per_second(stats.min_seconds);
    s->set_max_bandwidth_bytes_per_second(stats.max_seconds);
    s->set_metric(metric);
    s->set_operation_unit(first.operation_unit());
    s->set_median_value(median);
    s->set_min_value(value_stats.min_seconds);
    s->set_max_value(value_stats.max_seconds);
    for (const v1::FleetRow* r : members) {
      // An outlier only when its whole interval is past the threshold: the end nearest the
      // median is still more than `threshold` worse.
      const Interval in = IntervalOf(*r);
      const double nearest = LowerIsBetter(metric) ? in.low : in.high;
      if (median <= 0 || FractionWorse(nearest, median, metric) <= threshold) continue;
      v1::FleetOutlier* o = report->add_outliers();
      o->set_node_name(r->node_name());
      o->set_gpu_uuid(r->gpu_uuid());
      o->set_gpu_model(r->gpu_model());
      o->set_target(r->target());
      o->set_kernel(KernelOf(*r));
      o->set_elements(r->elements());
      o->set_cache_mode(s->cache_mode());
      o->set_block_size(r->block_size());
      o->set_items_per_thread(r->items_per_thread());
      o->set_bandwidth_bytes_per_second(r->bandwidth_bytes_per_second());
      o->set_model_median_bandwidth_bytes_per_second(stats.median_seconds);
      o->set_fraction_under_median(FractionWorse(ValueOf(*r), median, metric));
      o->set_metric(metric);
      o->set_operation_unit(r->operation_unit());
      o->set_value(ValueOf(*r));
      o->set_model_median_value(median);
      o->set_value_low(r->value_low());
      o->set_value_high(r->value_high());
      s->set_outliers(s->outliers() + 1);
    }
  }
}

absl::StatusOr<v1::FleetReport> ParseFleetReport(const std::string& json) {
  v1::FleetReport report;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // reports of newer versions stay readable
  if (auto s = google::protobuf::util::JsonStringToMessage(json, &report, options); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a gpubench fleet report (--format=json / --report_file): ", s.ToString()));
  }
  if (report.targets().empty()) {
    return absl::InvalidArgumentError("the baseline report has no targets");
  }
  return report;
}

void CompareWithBaseline(const v1::FleetReport& baseline, double threshold,
                         v1::FleetReport* report) {
  report->clear_regressions();
  report->set_regression_threshold(threshold);
  std::map<RowKey, const v1::FleetRow*> now;
  std::set<std::string> failed_nodes, failed_unnamed_targets, completed_nodes;
  for (const v1::FleetTarget& t : report->targets()) {
    for (const v1::FleetRow& r : t.rows()) now.emplace(KeyOf(r), &r);
    if (t.ok()) {
      completed_nodes.insert(t.node_name());
    } else if (t.node_name().empty()) {
      failed_unnamed_targets.insert(t.target());
    } else {
      failed_nodes.insert(t.node_name());
    }
  }
  std::map<RowKey, const v1::FleetRow*> before;
  for (const v1::FleetTarget& t : baseline.targets()) {
    for (const v1::FleetRow& r : t.rows()) before.emplace(KeyOf(r), &r);
  }
  // Failures of nodes (or, when a node never answered, of addresses) that completed before.
  for (const v1::FleetTarget& t : baseline.targets()) {
    if (!t.ok()) continue;
    const bool by_node = !t.node_name().empty() && failed_nodes.count(t.node_name());
    // An address that answered for a node which completed now elsewhere is a stale entry (still
    // a failure of this run), not a regression of that node.
    const bool by_address = failed_unnamed_targets.count(t.target()) &&
                            (t.node_name().empty() || !completed_nodes.count(t.node_name()));
    if (!by_node && !by_address) continue;
    for (const v1::FleetTarget& f : report->targets()) {
      if (f.ok() || (by_node ? f.node_name() != t.node_name() : f.target() != t.target())) continue;
      v1::FleetRegression* g = report->add_regressions();
      g->set_kind(v1::FleetRegression::FAILED);
      g->set_node_name(t.node_name());
      g->set_target(f.target());
      g->set_description(absl::StrCat("FAILED ", t.node_name().empty() ? "" : t.node_name() + " ",
                                      "at ", f.target(), ": completed in the baseline (at ",
                                      t.target(), "), failed now: ", f.error()));
    }
  }
  for (const auto& [key, r] : now) {
    auto it = before.find(key);
    if (it == before.end() || ValueOf(*it->second) <= 0) continue;
    const std::string metric = MetricOf(*r);
    const double old = ValueOf(*it->second);
    const double worse = FractionWorse(ValueOf(*r), old, metric);
    // The change's interval from both figures' intervals (as a change: -0.3 = 30% worse);
    // SLOWER only when all of it lies past the threshold.
    const Interval a = IntervalOf(*r), b = IntervalOf(*it->second);
    const double change_low = LowerIsBetter(metric) ? 1 - a.high / b.low : a.low / b.high - 1;
    const double change_high = LowerIsBetter(metric) ? 1 - a.low / b.high : a.high / b.low - 1;
    if (worse <= threshold || !(change_high < -threshold)) continue;
    v1::FleetRegression* g = report->add_regressions();
    g->set_kind(v1::FleetRegression::SLOWER);
    FillRegressionFrom(*r, g);
    g->set_bandwidth_bytes_per_second(r->bandwidth_bytes_per_second());
    g->set_baseline_bandwidth_bytes_per_second(it->second->bandwidth_bytes_per_second());
    g->set_metric(metric);
    g->set_operation_unit(r->operation_unit());
    g->set_value(ValueOf(*r));
    g->set_baseline_value(old);
    g->set_change(-worse);
    g->set_value_low(r->value_low());
    g->set_value_high(r->value_high());
    g->set_baseline_value_low(it->second->value_low());
    g->set_baseline_value_high(it->second->value_high());
    g->set_change_low(change_low);
    g->set_change_high(change_high);
    g->set_description(absl::StrFormat(
        "SLOWER %s: %s: %s now vs %s in the baseline (%.1f%% worse; 95%% interval %.1f%% to "
        "%.1f%%)",
        GpuText(r->node_name(), r->gpu_uuid(), r->gpu_model(), r->target()),
        MeasurementText(KernelOf(*r), r->elements(), r->cache_mode(), r->block_size(),
                        r->items_per_thread()),
        FormatValue(metric, r->operation_unit(), ValueOf(*r)),
        FormatValue(metric, r->operation_unit(), old), 100 * worse, -100 * change_high,
        -100 * change_low));
  }
  for (const auto& [key, r] : before) {
    if (now.count(key)) continue;
    v1::FleetRegression* g = report->add_regressions();
    g->set_kind(v1::FleetRegression::MISSING);
    FillRegressionFrom(*r, g);
    g->set_baseline_bandwidth_bytes_per_second(r->bandwidth_bytes_per_second());
    g->set_metric(MetricOf(*r));
    g->set_operation_unit(r->operation_unit());
    g->set_baseline_value(ValueOf(*r));
    g->set_description(
        absl::StrCat("MISSING ", GpuText(r->node_name(), r->gpu_uuid(), r->gpu_model(), ""), ": ",
                     MeasurementText(KernelOf(*r), r->elements(), r->cache_mode(), r->block_size(),
                                     r->items_per_thread()),
                     " is in the baseline (at ", r->target(), ") but not in this run"));
  }
}

std::string RenderFleet(const v1::FleetReport& report, const std::string& format) {
  if (format == "json") return ToJson(report);
  std::string out;
  if (format == "csv") {
    out =
        "node_name,gpu_uuid,gpu_model,target,driver,device,kernel,dtype,elements,cache_mode,"
        "block_size,items_per_thread,median_seconds,bandwidth_bytes_per_second,verified,error,"
        "metric,value,item_wall_seconds\n";
    for (const v1::FleetTarget& t : report.targets()) {
      for (const v1::FleetRow& r : t.rows()) {
        absl::StrAppend(
            &out,
            absl::StrFormat(
                "%s,%s,\"%s\",%s,\"%s\",%d,%s,%s,%d,%s,%d,%d,%.9g,%.6g,%s,,%s,%.9g,%.6g\n",
                r.node_name(), r.gpu_uuid(), r.gpu_model(), r.target(), r.driver_version(),
                r.device_index(), KernelOf(r), r.dtype(), r.elements(), ModeName(r.cache_mode()),
                r.block_size(), r.items_per_thread(), r.median_seconds(),
                r.bandwidth_bytes_per_second(), r.verified() ? "pass" : "FAIL", MetricOf(r),
                ValueOf(r), r.item_wall_seconds()));
      }
    }
    for (const v1::FleetTarget& t : report.failures()) {
      std::string e = t.error();
      std::replace(e.begin(), e.end(), '"', '\'');
      absl::StrAppend(&out, t.node_name(), ",,,", t.target(), ",,,,,,,,,,,,\"", e, "\",,,\n");
    }
    // Skipped sweeps: the kernel and, in the error column, why (the target itself completed).
    for (const v1::FleetTarget& t : report.targets()) {
      for (const v1::FleetSkip& k : t.skipped()) {
        std::string why = absl::StrCat("skipped sweep ", k.sweep(), ": ", k.reason());
        std::replace(why.begin(), why.end(), '"', '\'');
        absl::StrAppend(&out, t.node_name(), ",,,", t.target(), ",,,", k.kernel(), ",,,,,,,,,\"",
                        why, "\",,,\n");
      }
    }
    return out;
  }
  // "took": the item's wall time as the client saw it (FleetRow.item_wall_seconds).
  absl::StrAppend(
      &out, absl::StrFormat("%-16s %-22s %-21s %-16s %-9s %-5s %-8s %12s %12s %-8s %s\n", "node",
                            "gpu", "target", "kernel", "elements", "mode", "launch", "median",
                            "result", "verified", "took"));
  for (const v1::FleetTarget& t : report.targets()) {
    for (const v1::FleetRow& r : t.rows()) {
      absl::StrAppend(
          &out, absl::StrFormat("%-16s %-22s %-21s %-16s %-9s %-5s %-8s %12s %12s %-8s %s\n",
                                r.node_name(), r.gpu_model().substr(0, 22), r.target(), KernelOf(r),
                                FormatElementCount(r.elements()), ModeName(r.cache_mode()),
                                absl::StrCat(r.block_size(), "x", r.items_per_thread()),
                                FormatSeconds(r.median_seconds()),
                                FormatValue(MetricOf(r), r.operation_unit(), ValueOf(r)),
                                r.verified() ? "pass" : "FAIL",
                                r.item_wall_seconds() > 0 ? FormatSeconds(r.item_wall_seconds())
                                                          : std::string("-")));
    }
  }
  absl::StrAppend(&out, "\nfleet summary per GPU model (outliers: more than ",
                  absl::StrFormat("%.0f", 100 * report.outlier_threshold()),
                  "% worse than the model's median: under it for rates, over it for latency)\n");
  for (const v1::FleetModelSummary& s : report.summaries()) {
    // Summaries of an older version's report have bandwidth only.
    const std::string metric = s.metric().empty() ? "bytes_per_second" : s.metric();
    const double median =
        s.metric().empty() ? s.median_bandwidth_bytes_per_second() : s.median_value();
    const double low = s.metric().empty() ? s.min_bandwidth_bytes_per_second() : s.min_value();
    const double high = s.metric().empty() ? s.max_bandwidth_bytes_per_second() : s.max_value();
    absl::StrAppend(
        &out, absl::StrFormat(
                  "  %-22s %-16s %-9s %-5s %-8s n=%d median %s %s %s spread %.1f%%%s\n",
                  s.gpu_model().substr(0, 22), s.kernel(), FormatElementCount(s.elements()),
                  ModeName(s.cache_mode()), absl::StrCat(s.block_size(), "x", s.items_per_thread()),
                  s.gpus(), FormatValue(metric, s.operation_unit(), median),
                  LowerIsBetter(metric) ? "max" : "min",
                  FormatValue(metric, s.operation_unit(), LowerIsBetter(metric) ? high : low),
                  median > 0 ? 100 * (high - low) / median : 0.0,
                  s.outliers() ? absl::StrCat("  ", s.outliers(), " outlier(s)") : ""));
  }
  for (const v1::FleetOutlier& o : report.outliers()) {
    const std::string metric = o.metric().empty() ? "bytes_per_second" : o.metric();
    const bool old = o.metric().empty();  // an older version's report: bandwidth only
    absl::StrAppend(
        &out,
        absl::StrFormat("OUTLIER %s: %s: %s, %.1f%% %s the model's median %s\n",
                        GpuText(o.node_name(), o.gpu_uuid(), o.gpu_model(), o.target()),
                        MeasurementText(o.kernel(), o.elements(), o.cache_mode(), o.block_size(),
                                        o.items_per_thread()),
                        FormatValue(metric, o.operation_unit(),
                                    old ? o.bandwidth_bytes_per_second() : o.value()),
                        100 * o.fraction_under_median(), LowerIsBetter(metric) ? "over" : "under",
                        FormatValue(metric, o.operation_unit(),
                                    old ? o.model_median_bandwidth_bytes_per_second()
                                        : o.model_median_value())));
  }
  for (const v1::FleetSdcSuspect& s : report.sdc_suspects()) {
    absl::StrAppend(&out, s.description(), "\n");
  }
  absl::StrAppend(&out, "\n", report.targets_completed(), " of ", report.targets_total(),
                  " targets completed\n");
  for (const v1::FleetTarget& t : report.targets()) {
    for (const v1::FleetSkip& k : t.skipped()) {
      absl::StrAppend(&out, "SKIPPED ", t.target(),
                      t.node_name().empty() ? "" : absl::StrCat(" (node ", t.node_name(), ")"),
                      ": sweep ", k.sweep(), " of the plan (", k.kernel(), "): ", k.reason(), "\n");
    }
  }
  for (const v1::FleetTarget& t : report.failures()) {
    absl::StrAppend(&out, "FAILED ", t.target(),
                    t.node_name().empty() ? "" : absl::StrCat(" (node ", t.node_name(), ")"),
                    " after ", t.attempts(), " attempt(s): ", t.error(), "\n");
  }
  if (!report.baseline().empty()) {
    absl::StrAppend(&out, "\n", report.regressions_size(), " regression(s) against ",
                    report.baseline(), " (more than ",
                    absl::StrFormat("%.0f", 100 * report.regression_threshold()),
                    "% slower, failed, or missing)\n");
    for (const v1::FleetRegression& g : report.regressions()) {
      absl::StrAppend(&out, "  ", g.description(), "\n");
    }
  }
  return out;
}
}  // namespace gpubench::client
