// gpubench: command-line client of gpubench_server.
//
// Exit codes (stable, for scripts):
//   0  success (every run measured and verified)
//   1  a run failed on the server (bad kernel, verification failure, device error, ...)
//   2  usage error (bad command, flag or size)
//   3  server unreachable or deadline exceeded
//   4  not authenticated (missing, unusable or invalid bearer token, or the TLS handshake
//      refused: client certificate refused or server certificate not trusted)
//   5  fleet: a result regressed against --baseline, or an output hash disagreed (SDC_SUSPECT)
// 130  interrupted (Ctrl-C); a sweep prints the results that finished first
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/compare.h"
#include "client/fleet.h"
#include "client/health.h"
#include "client/nvbench_json.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "client/tls_probe.h"
#include "common/command_line.h"
#include "common/echo.h"
#include "common/files.h"
#include "common/sizes.h"
#include "common/tokens.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "proto/plan_json.h"

ABSL_FLAG(std::string, target, "localhost:50051", "Server address host:port.");
ABSL_FLAG(bool, tls, false, "Connect with TLS (implied by --ca_cert or --client_cert).");
ABSL_FLAG(std::string, ca_cert, "", "PEM CA bundle that signed the server (default: system roots).");
ABSL_FLAG(std::string, client_cert, "", "PEM client certificate for mutual TLS.");
ABSL_FLAG(std::string, client_key, "", "PEM private key of --client_cert.");
ABSL_FLAG(std::string, tls_server_name, "", "Override the name checked in the server certificate.");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token, read as the server reads --token_file (the first "
          "token; whitespace, CR, blank lines and # comments skipped). Or set GPUBENCH_TOKEN.");
ABSL_FLAG(std::string, format, "table",
          "Output format: table | json | csv | nvbench-json (run/sweep: nvbench's JSON schema, "
          "cold -> nv/cold/*, hot -> nv/batch/* summaries, for nvbench_compare.py-style tools).");
ABSL_FLAG(std::string, output_file, "",
          "run/sweep: write the formatted output to this file instead of stdout.");
ABSL_FLAG(double, rpc_timeout_seconds, 600, "Deadline of each RPC (a run waits in the queue too).");
ABSL_FLAG(std::string, size, "", "run: element count, e.g. 1048576, 16M (10^6), 256Mi (2^20).");
ABSL_FLAG(int64_t, m, 0, "run (gemm): rows of A and D (0 = --size).");
ABSL_FLAG(int64_t, n, 0, "run (gemm): columns of D, rows of B (0 = --size).");
ABSL_FLAG(int64_t, k, 0, "run (gemm): the inner dimension (0 = --size).");
ABSL_FLAG(std::string, sizes, "", "sweep: comma-separated element counts, e.g. 1Mi,16Mi,256Mi.");
ABSL_FLAG(std::string, kernels, "", "sweep: comma-separated kernel names.");
ABSL_FLAG(std::string, block_sizes, "", "sweep: comma-separated block sizes (default: each kernel's).");
ABSL_FLAG(int, device, 0, "Device index.");
ABSL_FLAG(std::string, device_uuid, "", "Select the device by UUID (overrides --device).");
ABSL_FLAG(int, peer_device, -1,
          "run: the second device of a peer copy (copy_peer_*); -1 = the next device.");
ABSL_FLAG(bool, all_devices, false, "sweep: run every item on every device, concurrently.");
ABSL_FLAG(int, block_size, 0, "run: threads per block (0 = the kernel's default).");
ABSL_FLAG(std::string, items_per_thread, "",
          "run: elements per thread (default: the kernel's); sweep/autotune: comma-separated "
          "values. Only kernels whose policy allows it (see `kernels`, column max_items).");
ABSL_FLAG(std::string, mode, "cold", "cold (L2 flushed, one launch per sample) | hot (batched).");
ABSL_FLAG(int, warmup, 0, "Warm-up launches (0 = server default).");
ABSL_FLAG(int, min_samples, 0, "Minimum samples (0 = server default).");
ABSL_FLAG(int, max_samples, 0, "Maximum samples (0 = server default).");
ABSL_FLAG(double, min_time, 0, "Minimum measured seconds (0 = server default).");
ABSL_FLAG(double, max_noise, 0,
          "Stop at this relative stddev, a FRACTION: 0.005 = 0.5% (nvbench's --max-noise is in "
          "percent); values over 1 are refused (0 = server default).");
ABSL_FLAG(double, timeout, 0, "Sampling wall-time budget in seconds (0 = server default).");
ABSL_FLAG(bool, verify, true, "Verify every element against the host reference.");
ABSL_FLAG(int, profile_runs, 0,
          "Profile mode: run the kernel N times, each launch timed alone, with no blocking kernel "
          "and no sampling logic, so ncu / nsys see clean launches (0 = normal sampling).");
ABSL_FLAG(std::string, timer, "auto",
          "What times the samples: auto (the default: CUDA events, around one launch cold and "
          "around the batch hot) | cupti (CUPTI activity records, the kernels' own device "
          "timestamps, cold and hot; an error where it cannot record; tracing can slow "
          "large-grid kernels) | events "
          "(CUDA events only) | gpu_time (each kernel's gpu__time_duration counter, Nsight "
          "Compute's Duration: every launch alone under CUPTI's range profiler, slower, no "
          "throttle check). The CPU backend times with its steady clock (auto, events).");
ABSL_FLAG(std::optional<double>, throttle_threshold, std::nullopt,
          "Discard a sample whose SM clock was below this FRACTION of the default clock: 0.75 "
          "(the server's default when unset) = nvbench's --throttle-threshold 75 (percent there); "
          "0 keeps every sample (clocks still reported). 0 <= x < 1.");
ABSL_FLAG(double, max_duty, 0,
          "Pace the sampling loop so the GPU is busy with timed work at most this FRACTION of "
          "its wall time (0.8 = 80%; the server sleeps after each sample). A power-capped GPU "
          "clocks higher when it idles between samples: match another tool's duty cycle "
          "(bench/torch_gemm.py prints its own). 0 = no pacing; 0 < x <= 1.");
ABSL_FLAG(std::string, placement_pad, "",
          "Unused BYTES the server leaves after each device buffer of 1 MiB or more, in --size's "
          "syntax (34Mi = 34 x 2^20 bytes; 35651584), so the run's buffers are not exactly one "
          "buffer size apart (their L2 sets can alias: see README, Measurement). Empty or 0 = "
          "the server's default (no pad unless its --default_placement_pad_bytes); at most 1Gi. "
          "The cpu backend ignores it.");
ABSL_FLAG(int32_t, placements, 0,
          "Cold samples rotate over this many separately allocated copies of the run's device "
          "buffers, so the median covers that many placements, not the one an allocation gave "
          "(a small cold launch moves with where its buffers sit: see README, Measurement). "
          "0 or 1 = one copy; at most 16. Hot samples use the first copy. The cpu backend "
          "ignores it.");
ABSL_FLAG(bool, samples, false, "Return the per-launch samples (at most 10,000) in the result.");
ABSL_FLAG(bool, histogram, false,
          "run: draw a text histogram of the samples (implies --samples); on stderr unless "
          "--format=table.");
ABSL_FLAG(int64_t, seed, -1, "Input data seed (-1 = server picks one, echoed in the result).");
ABSL_FLAG(bool, progress, true, "sweep: show progress on stderr.");
ABSL_FLAG(std::string, plan, "",
          "fleet: JSON plan file, as for --schedule_plan (a RunSweepRequest, or {\"sweeps\": [...]}).");
ABSL_FLAG(std::string, targets, "", "fleet: comma-separated host:port targets.");
ABSL_FLAG(std::string, targets_file, "", "fleet: file of host:port targets, one per line.");
ABSL_FLAG(std::string, dns, "",
          "fleet: comma-separated name:port; every address the name resolves to is a target "
          "(a Kubernetes headless Service returns every pod).");
ABSL_FLAG(int, parallelism, 8, "fleet: targets benchmarked at once.");
ABSL_FLAG(double, target_timeout, 900, "fleet: seconds for the whole plan on one target.");
ABSL_FLAG(int, retries, 2, "fleet: retries of a target after UNAVAILABLE (doubling backoff).");
ABSL_FLAG(std::string, baseline, "",
          "fleet: earlier --format=json report (or --report_file); exit 5 when a GPU is slower, a "
          "node that completed there failed, or a row of it is missing now.");
ABSL_FLAG(double, regression_threshold, 0.05, "fleet: bandwidth drop that counts as a regression.");
ABSL_FLAG(double, outlier_threshold, 0.10, "fleet: shortfall under the model's median flagged.");
ABSL_FLAG(std::string, report_file, "",
          "fleet: also write the whole JSON report (rows, summaries, outliers, failures, "
          "regressions) to this file.");
ABSL_FLAG(bool, apply, false, "autotune: make the fastest block size the server's default.");
ABSL_FLAG(std::string, dtype, "", "best: f32 | f16 | bf16.");
ABSL_FLAG(std::string, dtypes, "f32,f16", "compare: comma-separated dtypes (f32,f16,bf16).");
ABSL_FLAG(std::string, modes, "cold,hot", "compare: comma-separated cache modes.");
ABSL_FLAG(bool, force, false,
          "run/sweep: run even while another process uses the GPU (servers in shared-node mode "
          "refuse with FAILED_PRECONDITION otherwise).");
ABSL_FLAG(bool, profile, false,
          "Add a hardware-counter pass (achieved occupancy, DRAM throughput); GPU servers only.");

namespace gpubench::client {
namespace {

bool UsesTls() {
  return absl::GetFlag(FLAGS_tls) || !absl::GetFlag(FLAGS_ca_cert).empty() ||
         !absl::GetFlag(FLAGS_client_cert).empty();
}

// A TLS 1.3 server that refuses our client certificate closes the connection after the
// handshake, which gRPC reports as UNAVAILABLE "Socket closed": ask the server why
// (client/tls_probe.h), so the refusal reads, and exits, as one.
grpc::Status WithTlsRefusal(const grpc::Status& status) {
  if (!UsesTls() || status.error_code() != grpc::StatusCode::UNAVAILABLE ||
      IsTlsHandshakeFailure(status)) {
    return status;
  }
  std::string cert, key;
  if (const std::string f = absl::GetFlag(FLAGS_client_cert); !f.empty()) ReadFileToString(f, &cert);
  if (const std::string f = absl::GetFlag(FLAGS_client_key); !f.empty()) ReadFileToString(f, &key);
  const std::string refusal = ProbeTlsRefusal(absl::GetFlag(FLAGS_target), cert, key);
  if (refusal.empty()) return status;
  return grpc::Status(status.error_code(),
                      absl::StrCat(status.error_message(),
                                   "; the server refused this client in the TLS handshake: ",
                                   refusal));
}

int ReportRpcError(const std::string& what, const grpc::Status& status) {
  const grpc::Status reported = WithTlsRefusal(status);
  std::cerr << RpcErrorMessage(what, reported);
  return ExitCodeFor(reported);
}

// Ctrl-C: SIGINT and SIGTERM are blocked in every thread and taken by one watcher thread. While
// a sweep streams, the first signal cancels its call (the sweep then prints what finished and
// exits 130); otherwise, or on a second signal, the process exits 130 at once.
class Interrupts {
 public:
  static Interrupts& Get() {
    static Interrupts* interrupts = new Interrupts();
    return *interrupts;
  }
  // Call before any other thread exists (gRPC's included): they inherit the blocked mask.
  void Start() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    std::thread([this] { Watch(); }).detach();
  }
  void SetCall(grpc::ClientContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    call_ = context;
  }
  bool interrupted() const { return interrupted_.load(); }

 private:
  void Watch() {
    while (true) {
      int signal_number = 0;
      if (sigwait(&signals_, &signal_number) != 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (call_ == nullptr || interrupted_.exchange(true)) std::_Exit(kExitInterrupted);
      call_->TryCancel();
    }
  }
  sigset_t signals_;
  std::mutex mu_;
  grpc::ClientContext* call_ = nullptr;
  std::atomic<bool> interrupted_{false};
};

std::string& Token() {
  static std::string token;
  return token;
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(
                            1000 * absl::GetFlag(FLAGS_rpc_timeout_seconds))));
  if (!Token().empty()) context->AddMetadata("authorization", "Bearer " + Token());
}

// Reads the bearer token as the server reads its token file (common/tokens.h: the first token;
// whitespace, CR, blank lines and comments dropped). kExitOk, or the exit code after a message:
// kExitUsage for an unreadable file, kExitAuth for an unusable token.
int LoadToken() {
  std::string text, source;
  if (const std::string f = absl::GetFlag(FLAGS_token_file); !f.empty()) {
    if (!ReadFileToString(f, &text)) {
      std::cerr << "gpubench: cannot read --token_file " << f << "\n";
      return kExitUsage;
    }
    source = "--token_file " + f;
  } else if (const char* env = std::getenv("GPUBENCH_TOKEN"); env != nullptr) {
    text = env;
    source = "GPUBENCH_TOKEN";
  } else {
    return kExitOk;
  }
  const std::vector<std::string> tokens = ParseTokenLines(text);
  if (tokens.empty()) {
    std::cerr << "gpubench: " << source << " holds no token\n";
    return kExitAuth;
  }
  if (absl::Status usable = CheckTokenUsable(tokens[0]); !usable.ok()) {
    std::cerr << "gpubench: " << source << ": " << usable.message() << "\n";
    return kExitAuth;
  }
  Token() = tokens[0];
  return kExitOk;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target) {
  if (!UsesTls()) {
    return grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  }
  grpc::SslCredentialsOptions ssl;
  for (auto [flag, field] : {std::pair{absl::GetFlag(FLAGS_ca_cert), &ssl.pem_root_certs},
                             std::pair{absl::GetFlag(FLAGS_client_cert), &ssl.pem_cert_chain},
                             std::pair{absl::GetFlag(FLAGS_client_key), &ssl.pem_private_key}}) {
    if (!flag.empty() && !ReadFileToString(flag, field)) {
      std::cerr << "gpubench: cannot read " << flag << "\n";
      return nullptr;
    }
  }
  grpc::ChannelArguments args;
  if (const std::string name = absl::GetFlag(FLAGS_tls_server_name); !name.empty()) {
    args.SetSslTargetNameOverride(name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

bool ParseFormat(Format* format) {
  const std::string f = absl::GetFlag(FLAGS_format);
  if (f == "table") *format = Format::kTable;
  else if (f == "json") *format = Format::kJson;
  else if (f == "csv") *format = Format::kCsv;
  else if (f == "nvbench-json") *format = Format::kNvbenchJson;
  else {
    std::cerr << "gpubench: --format must be table, json, csv or nvbench-json (got '" << f
              << "')\n";
    return false;
  }
  return true;
}

std::vector<std::string>& Argv() {
  static std::vector<std::string> argv;
  return argv;
}

// Writes run/sweep output to --output_file, or stdout. False (after a message) when the file
// cannot be written.
bool Emit(const std::string& text) {
  const std::string path = absl::GetFlag(FLAGS_output_file);
  if (path.empty()) {
    std::cout << text;
    return true;
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

// A flag that takes a fraction, given a value that looks like a percent (over 1, up to
// `percent_max`): says so, with the fraction meant, and returns true. `of` says what the value is
// a fraction of, with an example.
bool RefusedAsPercent(absl::string_view flag, double value, double percent_max,
                      absl::string_view of) {
  if (!(value > 1 && value <= percent_max)) return false;
  std::cerr << "gpubench: --" << flag << " " << value << " looks like a percent; it is a fraction of "
            << of << ": for " << value << "% pass --" << flag << "=" << value / 100 << "\n";
  return true;
}

bool FillMeasurement(v1::MeasurementOptions* m, const std::string& mode) {
  if (mode == "cold") m->set_cache_mode(v1::COLD);
  else if (mode == "hot") m->set_cache_mode(v1::HOT);
  else {
    std::cerr << "gpubench: --mode must be cold or hot (got '" << mode << "')\n";
    return false;
  }
  m->set_warmup_launches(absl::GetFlag(FLAGS_warmup));
  m->set_min_samples(absl::GetFlag(FLAGS_min_samples));
  m->set_max_samples(absl::GetFlag(FLAGS_max_samples));
  m->set_min_time_seconds(absl::GetFlag(FLAGS_min_time));
  const double max_noise = absl::GetFlag(FLAGS_max_noise);
  if (RefusedAsPercent("max_noise", max_noise, std::numeric_limits<double>::infinity(),
                       "the mean (0.005 = 0.5%)")) {
    return false;
  }
  if (max_noise >= 0.1) {
    std::cerr << "gpubench: note: --max_noise " << max_noise << " means " << 100 * max_noise
              << "% relative standard deviation (a fraction, not a percent)\n";
  }
  m->set_max_noise(max_noise);
  m->set_profile_runs(absl::GetFlag(FLAGS_profile_runs));
  m->set_keep_samples(absl::GetFlag(FLAGS_samples) || absl::GetFlag(FLAGS_histogram));
  m->set_timeout_seconds(absl::GetFlag(FLAGS_timeout));
  const std::string timer = absl::GetFlag(FLAGS_timer);
  if (timer == "auto") m->set_timer(v1::TIMER_AUTO);
  else if (timer == "cupti") m->set_timer(v1::TIMER_CUPTI);
  else if (timer == "events") m->set_timer(v1::TIMER_EVENTS);
  else if (timer == "gpu_time") m->set_timer(v1::TIMER_GPU_TIME);
  else {
    std::cerr << "gpubench: --timer must be auto, cupti, events or gpu_time (got '" << timer
              << "')\n";
    return false;
  }
  if (const std::optional<double> threshold = absl::GetFlag(FLAGS_throttle_threshold);
      threshold.has_value()) {
    if (RefusedAsPercent("throttle_threshold", *threshold, 100,
                         "the default SM clock (0.75 = 75%)")) {
      return false;
    }
    m->set_throttle_threshold(*threshold);  // the server refuses values outside [0, 1)
  }
  const double max_duty = absl::GetFlag(FLAGS_max_duty);
  if (RefusedAsPercent("max_duty", max_duty, 100, "the sampling loop's wall time (0.8 = 80%)")) {
    return false;
  }
  m->set_max_duty(max_duty);  // the server refuses values outside [0, 1]
  // Bytes, in --size's syntax; 0 (or empty) leaves the server's default. The server checks the
  // range (at most 1 GiB).
  if (const std::string pad = absl::GetFlag(FLAGS_placement_pad); !pad.empty() && pad != "0") {
    absl::StatusOr<int64_t> bytes = ParseElementCount(pad);
    if (!bytes.ok()) {
      std::cerr << "gpubench: --placement_pad: " << bytes.status().message()
                << " (bytes, e.g. 34Mi or 35651584)\n";
      return false;
    }
    m->set_placement_pad_bytes(*bytes);
  }
  m->set_placements(absl::GetFlag(FLAGS_placements));  // the server checks [0, 16]
  return true;
}

grpc::Status ListCatalog(v1::Benchmark::Stub& stub, v1::ListKernelsResponse* response) {
  grpc::ClientContext context;
  SetDeadline(&context);
  return stub.ListKernels(&context, v1::ListKernelsRequest(), response);
}

int Kernels(v1::Benchmark::Stub& stub, Format format) {
  v1::ListKernelsResponse response;
  grpc::Status status = ListCatalog(stub, &response);
  if (!status.ok()) return ReportRpcError("ListKernels", status);
  std::cout << RenderKernels(response, format);
  return kExitOk;
}

int Devices(v1::Benchmark::Stub& stub, Format format) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListDevicesResponse response;
  grpc::Status status = stub.ListDevices(&context, v1::ListDevicesRequest(), &response);
  if (!status.ok()) return ReportRpcError("ListDevices", status);
  std::cout << RenderDevices(response, format);
  return kExitOk;
}

int Info(v1::Benchmark::Stub& stub, Format format) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetServerInfoResponse r;
  grpc::Status status = stub.GetServerInfo(&context, v1::GetServerInfoRequest(), &r);
  if (!status.ok()) return ReportRpcError("GetServerInfo", status);
  if (format != Format::kTable) {
    std::cout << ToJson(r);
    return kExitOk;
  }
  const v1::ServerLimitsInfo& l = r.limits();
  std::cout << "gpubench_server " << r.version() << " (git " << r.git_revision() << ")\n"
            << "backend         " << r.backend() << ", " << r.device_count() << " device(s)\n"
            << "started         "
            << absl::FormatTime(absl::FromUnixSeconds(r.start_time().seconds()), absl::UTCTimeZone())
            << "\n"
            << "security        " << (r.tls() ? "TLS" : "plaintext")
            << (r.authentication_required() ? ", bearer token required" : ", no token") << "\n"
            << "limits          max_elements " << l.max_elements() << " ("
            << FormatElementCount(l.max_elements()) << "), queue_capacity " << l.queue_capacity()
            << ", max_sweep_items " << l.max_sweep_items() << ",\n"
            << "                max_timeout_seconds " << l.max_timeout_seconds()
            << ", max_warmup_launches " << l.max_warmup_launches() << " / "
            << l.max_warmup_seconds() << " s, max_message_bytes " << l.max_message_bytes()
            << ", max_concurrent_streams " << l.max_concurrent_streams()
            << (l.allow_profiling() ? ", profiling allowed" : ", profiling off") << "\n";
  return kExitOk;
}

// "gpubench CMD KERNEL --size N": the kernel argument and the parsed size, or false (after a
// message) on a usage error.
bool ParseKernelAndSize(const std::vector<std::string>& args, const char* usage, std::string* kernel,
                        int64_t* elements) {
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

// A comma-separated integer flag (--block_sizes, --items_per_thread), or false (after a message).
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

int Run(v1::Benchmark::Stub& stub, Format format, const std::vector<std::string>& args) {
  v1::RunBenchmarkRequest request;
  std::string kernel;
  int64_t elements = 0;
  // gemm takes --m/--n/--k (each defaulting to --size, which may then be omitted).
  const int64_t m = absl::GetFlag(FLAGS_m), n = absl::GetFlag(FLAGS_n), k = absl::GetFlag(FLAGS_k);
  const bool shaped = m != 0 || n != 0 || k != 0;
  if (shaped && absl::GetFlag(FLAGS_size).empty() && args.size() == 3) {
    kernel = args[2];
  } else if (!ParseKernelAndSize(args, "gpubench run KERNEL --size N [--m M --n N --k K] [flags]",
                                 &kernel, &elements)) {
    return kExitUsage;
  }
  request.set_kernel(kernel);
  request.set_elements(elements);
  if (shaped) {
    request.mutable_shape()->set_m(m);
    request.mutable_shape()->set_n(n);
    request.mutable_shape()->set_k(k);
  }
  request.set_device_index(absl::GetFlag(FLAGS_device));
  request.set_device_uuid(absl::GetFlag(FLAGS_device_uuid));
  if (absl::GetFlag(FLAGS_peer_device) >= 0) {
    request.set_peer_device_index(absl::GetFlag(FLAGS_peer_device));
  }
  request.set_block_size(absl::GetFlag(FLAGS_block_size));
  std::vector<int> items;
  if (!ParseItemsPerThread(&items)) return kExitUsage;
  if (items.size() > 1) {
    std::cerr << "gpubench: run takes one --items_per_thread value (sweep takes a list)\n";
    return kExitUsage;
  }
  if (!items.empty()) request.set_items_per_thread(items[0]);
  if (!FillMeasurement(request.mutable_measurement(), absl::GetFlag(FLAGS_mode))) return kExitUsage;
  request.set_verify(absl::GetFlag(FLAGS_verify));
  if (absl::GetFlag(FLAGS_seed) >= 0) request.set_seed(absl::GetFlag(FLAGS_seed));
  request.set_profile(absl::GetFlag(FLAGS_profile));
  request.set_force(absl::GetFlag(FLAGS_force));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::RunBenchmarkResponse response;
  grpc::Status status = stub.RunBenchmark(&context, request, &response);
  if (!status.ok()) return ReportRpcError("RunBenchmark", status);
  std::string text;
  if (format == Format::kTable) {
    text = RenderResultDetail(response.result());
    if (absl::GetFlag(FLAGS_histogram)) text += "\n" + RenderHistogram(response.result());
  } else if (format == Format::kJson) {
    text = ToJson(response.result());
  } else if (format == Format::kNvbenchJson) {
    text = RenderNvbenchJson({response.result()}, Argv());
  } else {
    text = RenderResults({response.result()}, {}, format);
  }
  if (format != Format::kTable && absl::GetFlag(FLAGS_histogram)) {
    std::cerr << RenderHistogram(response.result());
  }
  return Emit(text) ? kExitOk : kExitUsage;
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

// Parses --sizes entries into `request`, or false (after a message).
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

// The sweep options `sweep`, `compare` and `best` share: device, measurement, verify, seed.
bool FillSweepCommon(v1::RunSweepRequest* request, const std::string& mode) {
  request->set_device_index(absl::GetFlag(FLAGS_device));
  request->set_device_uuid(absl::GetFlag(FLAGS_device_uuid));
  request->set_verify(absl::GetFlag(FLAGS_verify));
  if (absl::GetFlag(FLAGS_seed) >= 0) request->set_seed(absl::GetFlag(FLAGS_seed));
  return FillMeasurement(request->mutable_measurement(), mode);
}

int Sweep(v1::Benchmark::Stub& stub, Format format) {
  v1::RunSweepRequest request;
  std::vector<std::string> kernels, sizes;
  if (!SplitList("kernels", absl::GetFlag(FLAGS_kernels), &kernels)) return kExitUsage;
  if (!SplitList("sizes", absl::GetFlag(FLAGS_sizes), &sizes)) return kExitUsage;
  for (const auto& k : kernels) request.add_kernels(k);
  if (!AddSizes(sizes, &request)) return kExitUsage;
  std::vector<int> block_sizes;
  if (!ParseBlockSizes(&block_sizes)) return kExitUsage;
  for (int b : block_sizes) request.add_block_sizes(b);
  std::vector<int> items;
  if (!ParseItemsPerThread(&items)) return kExitUsage;
  for (int i : items) request.add_items_per_thread(i);
  request.set_all_devices(absl::GetFlag(FLAGS_all_devices));
  if (!FillSweepCommon(&request, absl::GetFlag(FLAGS_mode))) return kExitUsage;
  request.set_profile(absl::GetFlag(FLAGS_profile));
  request.set_force(absl::GetFlag(FLAGS_force));
  // Ctrl-C cancels the call; what finished is still printed (then exit 130).
  const SweepOutcome sweep = CollectSweep(
      stub, request,
      [](grpc::ClientContext* c) {
        SetDeadline(c);
        Interrupts::Get().SetCall(c);
      },
      absl::GetFlag(FLAGS_progress));
  Interrupts::Get().SetCall(nullptr);
  const bool written =
      Emit(format == Format::kNvbenchJson ? RenderNvbenchJson(sweep.results, Argv())
                                          : RenderResults(sweep.results, sweep.errors, format));
  if (Interrupts::Get().interrupted()) {
    std::cerr << "gpubench: interrupted; printed the " << sweep.results.size()
              << " finished result(s)\n";
    return kExitInterrupted;
  }
  if (format == Format::kNvbenchJson) {
    for (const auto& e : sweep.errors) std::cerr << "gpubench: error in item " << e.index() << ": " << e.message() << "\n";
  }
  if (!sweep.status.ok()) return ReportRpcError("RunSweep", sweep.status);
  if (!written) return kExitUsage;
  return sweep.errors.empty() ? kExitOk : kExitRunFailed;
}

// `gpubench compare`: the seed article's comparison (client/compare.h), one sweep per mode.
int Compare(v1::Benchmark::Stub& stub, Format format) {
  std::vector<std::string> dtypes, modes, sizes;
  SplitList("dtypes", absl::GetFlag(FLAGS_dtypes), &dtypes);
  for (const std::string& d : dtypes) {
    if (!IsAddDtype(d)) {
      std::cerr << "gpubench: --dtypes: '" << d << "' is not f32, f16 or bf16\n";
      return kExitUsage;
    }
  }
  SplitList("modes", absl::GetFlag(FLAGS_modes), &modes);
  const std::string size_text = absl::GetFlag(FLAGS_sizes).empty() ? "1Mi,16Mi,256Mi"
                                                                   : absl::GetFlag(FLAGS_sizes);
  SplitList("sizes", size_text, &sizes);
  v1::RunSweepRequest request;
  if (!AddSizes(sizes, &request)) return kExitUsage;
  v1::ListKernelsResponse catalog;
  if (grpc::Status st = ListCatalog(stub, &catalog); !st.ok()) return ReportRpcError("ListKernels", st);
  for (const std::string& k : CompareKernels(catalog, dtypes)) request.add_kernels(k);
  if (request.kernels_size() == 0) {
    std::cerr << "gpubench: compare: no available kernel for --dtypes=" << absl::GetFlag(FLAGS_dtypes) << "\n";
    return kExitUsage;
  }
  SweepOutcome all;
  for (const std::string& mode : modes) {
    if (!FillSweepCommon(&request, mode)) return kExitUsage;
    SweepOutcome one = CollectSweep(stub, request, SetDeadline, absl::GetFlag(FLAGS_progress));
    all.results.insert(all.results.end(), one.results.begin(), one.results.end());
    all.errors.insert(all.errors.end(), one.errors.begin(), one.errors.end());
    if (!one.status.ok()) {
      std::cout << RenderCompare(all.results, all.errors, format);
      return ReportRpcError("RunSweep", one.status);
    }
  }
  std::cout << RenderCompare(all.results, all.errors, format);
  return all.errors.empty() ? kExitOk : kExitRunFailed;
}

// `gpubench best add --dtype=f16 --size=16Mi [--mode=hot]`: measures every candidate
// (client/compare.h BestCandidates) at that size and mode, prints the fastest.
int Best(v1::Benchmark::Stub& stub, Format format, const std::vector<std::string>& args) {
  std::string op;
  int64_t elements = 0;
  if (!ParseKernelAndSize(args, "gpubench best add --dtype=f32|f16|bf16 --size N [--mode=hot]",
                          &op, &elements)) {
    return kExitUsage;
  }
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (op != "add" || !IsAddDtype(dtype)) {
    std::cerr << "gpubench: best takes the operation 'add' and --dtype f32, f16 or bf16 (got '"
              << op << "', '" << dtype << "')\n";
    return kExitUsage;
  }
  v1::ListKernelsResponse catalog;
  if (grpc::Status st = ListCatalog(stub, &catalog); !st.ok()) return ReportRpcError("ListKernels", st);
  v1::RunSweepRequest request;
  for (const std::string& k : BestCandidates(catalog, dtype)) request.add_kernels(k);
  request.add_sizes(elements);
  if (!FillSweepCommon(&request, absl::GetFlag(FLAGS_mode))) return kExitUsage;
  const SweepOutcome sweep = CollectSweep(stub, request, SetDeadline, absl::GetFlag(FLAGS_progress));
  if (!sweep.status.ok()) return ReportRpcError("RunSweep", sweep.status);
  std::cout << RenderBest(sweep.results, sweep.errors, format);
  return FastestResult(sweep.results) < 0 ? kExitRunFailed : kExitOk;
}

int Autotune(v1::Benchmark::Stub& stub, Format format, const std::vector<std::string>& args) {
  v1::AutotuneRequest request;
  std::string kernel;
  int64_t elements = 0;
  std::vector<int> blocks, items;
  if (!ParseKernelAndSize(args,
                          "gpubench autotune KERNEL --size N [--block_sizes ...] "
                          "[--items_per_thread ...] [--apply]",
                          &kernel, &elements) ||
      !ParseBlockSizes(&blocks) || !ParseItemsPerThread(&items)) {
    return kExitUsage;
  }
  request.set_kernel(kernel);
  request.set_elements(elements);
  request.set_device_index(absl::GetFlag(FLAGS_device));
  for (int b : blocks) request.add_block_sizes(b);
  for (int i : items) request.add_items_per_thread(i);
  if (!FillMeasurement(request.mutable_measurement(), absl::GetFlag(FLAGS_mode))) return kExitUsage;
  request.set_apply(absl::GetFlag(FLAGS_apply));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::AutotuneResponse response;
  grpc::Status status = stub.Autotune(&context, request, &response);
  if (!status.ok()) return ReportRpcError("Autotune", status);
  if (format == Format::kJson) {
    std::cout << ToJson(response);
    return kExitOk;
  }
  std::cout << (format == Format::kCsv
                    ? "block_size,items_per_thread,median_seconds,bandwidth_bytes_per_second,"
                      "relative_noise,theoretical_occupancy\n"
                    : "block   items  median        bandwidth     noise   occupancy\n");
  for (const auto& row : response.rows()) {
    const bool best = row.block_size() == response.best_block_size() &&
                      row.items_per_thread() == response.best_items_per_thread();
    if (format == Format::kCsv) {
      // No occupancy (CPU backend): an empty field, "n/a" in the table, as `run` shows it.
      std::cout << absl::StrFormat("%d,%d,%.9g,%.6g,%.6g,%s\n", row.block_size(),
                                   row.items_per_thread(), row.median_seconds(),
                                   row.bandwidth_bytes_per_second(), row.relative_noise(),
                                   row.has_theoretical_occupancy()
                                       ? absl::StrFormat("%.4g", row.theoretical_occupancy())
                                       : "");
    } else {
      std::cout << absl::StrFormat("%-7d %-6d %-13s %-13s %5.2f%%  %6s%s\n", row.block_size(),
                                   row.items_per_thread(), FormatSeconds(row.median_seconds()),
                                   FormatBytesPerSecond(row.bandwidth_bytes_per_second()),
                                   100 * row.relative_noise(),
                                   row.has_theoretical_occupancy()
                                       ? absl::StrFormat("%.1f%%", 100 * row.theoretical_occupancy())
                                       : "n/a",
                                   best ? "  <- best" : "");
    }
  }
  for (const std::string& why : response.skipped()) std::cerr << "skipped: " << why << "\n";
  if (format == Format::kTable) {
    std::cout << absl::StrFormat("\nbest for %s on device %d: block %d x %d items per thread "
                                 "(%.2fx the catalog default)%s\n",
                                 response.kernel(), response.device_index(),
                                 response.best_block_size(), response.best_items_per_thread(),
                                 response.speedup_over_catalog_default(),
                                 response.applied() ? "; now this server's default" : "");
  }
  return kExitOk;
}

// `gpubench health`: GetHealth, one summary line and the evidence (or JSON); exit 0 PASS, 1
// DEGRADED or FAIL, 2 UNKNOWN (client/health.h).
int Health(v1::Benchmark::Stub& stub, Format format) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetHealthRequest request;
  request.set_device_uuid(absl::GetFlag(FLAGS_device_uuid));
  // Every device unless --device is given (its default 0 would select one).
  for (const std::string& arg : Argv()) {
    if (arg == "--device" || arg.rfind("--device=", 0) == 0) {
      request.set_device_index(absl::GetFlag(FLAGS_device));
    }
  }
  v1::GetHealthResponse r;
  grpc::Status status = stub.GetHealth(&context, request, &r);
  if (!status.ok()) return ReportRpcError("GetHealth", status);
  std::cout << (format == Format::kTable ? RenderHealth(r) : ToJson(r));
  return HealthExitCode(r.verdict());
}

int Fleet() {
  std::string plan_text;
  if (absl::GetFlag(FLAGS_plan).empty() || !ReadFileToString(absl::GetFlag(FLAGS_plan), &plan_text)) {
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
  std::cout << RenderFleet(report, absl::GetFlag(FLAGS_format));
  if (const std::string f = absl::GetFlag(FLAGS_report_file); !f.empty()) {
    // Whole or not at all: written beside it, then renamed over it.
    const std::string tmp = f + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << RenderFleet(report, "json");
    out.close();
    if (!out || std::rename(tmp.c_str(), f.c_str()) != 0) {
      std::cerr << "gpubench: could not write --report_file " << f << "\n";
    }
  }
  for (const v1::FleetSdcSuspect& s : report.sdc_suspects()) std::cerr << s.description() << "\n";
  if (!report.regressions().empty()) {
    std::cerr << "REGRESSIONS against " << report.baseline() << " (more than "
              << 100 * options.regression_threshold << "% slower, failed, or missing):\n";
    for (const v1::FleetRegression& g : report.regressions()) {
      std::cerr << "  " << g.description() << "\n";
    }
    return kExitRegression;
  }
  if (!report.sdc_suspects().empty()) return kExitRegression;
  if (!report.failures().empty()) return kExitRunFailed;
  return kExitOk;
}

}  // namespace
}  // namespace gpubench::client

namespace gpubench::client {
namespace {

const std::vector<std::string> kMeasurementFlags = {
    "mode",    "warmup", "min_samples",        "max_samples", "min_time",     "max_noise",
    "timeout", "timer",  "throttle_threshold", "max_duty",    "placement_pad",
    "placements"};

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

ProgramSpec CliSpec() {
  ProgramSpec spec;
  spec.program = "gpubench";
  spec.description = "gpubench: client of gpubench_server.";
  spec.commands = {
      {"kernels",
       "gpubench kernels [--format table|json|csv]",
       "List the kernel catalog.",
       {"format"}},
      {"devices",
       "gpubench devices [--format table|json|csv]",
       "List the server's devices.",
       {"format"}},
      {"info",
       "gpubench info [--format table|json]",
       "The server's version, git revision, backend, start time and limits (GetServerInfo).",
       {"format"}},
      {"run", "gpubench run KERNEL --size N [flags]",
       "Benchmark one kernel at one size (gemm: --size N for N^3, or --m --n --k).",
       Concat({"size", "m", "n", "k", "device", "device_uuid", "block_size", "items_per_thread",
               "verify", "seed", "profile", "profile_runs", "samples", "histogram", "force",
               "format", "output_file"},
              kMeasurementFlags)},
      {"sweep", "gpubench sweep --kernels a,b --sizes 1Mi,16Mi [flags]",
       "Benchmark kernels x sizes x block sizes, streaming progress; Ctrl-C prints what finished.",
       Concat({"kernels", "sizes", "block_sizes", "items_per_thread", "device", "device_uuid",
               "all_devices", "verify", "seed", "profile", "profile_runs", "samples", "histogram",
               "force", "progress", "format", "output_file"},
              kMeasurementFlags)},
      {"autotune",
       "gpubench autotune KERNEL --size N [--block_sizes ...] [--items_per_thread ...] "
       "[--apply]",
       "Measure every block size x items per thread and report the fastest.",
       Concat({"size", "block_sizes", "items_per_thread", "device", "apply", "format"},
              kMeasurementFlags)},
      {"compare",
       "gpubench compare [--sizes 1Mi,16Mi,256Mi] [--dtypes f32,f16] [--modes cold,hot]",
       "Seed variants vs tuned, CUB and the copy ceiling, one sweep per mode.",
       {"sizes", "dtypes", "modes", "device", "device_uuid", "progress", "format"}},
      {"best", "gpubench best add --dtype f16 --size 16Mi [--mode hot]",
       "Measure every add variant of a dtype at one size and print the fastest.",
       Concat({"dtype", "size", "device", "device_uuid", "progress", "format"}, kMeasurementFlags)},
      {"fleet",
       "gpubench fleet --plan plan.json (--targets|--targets_file|--dns) ... [flags]",
       "Run one plan on many servers at once; outliers and regressions against a baseline.",
       {"plan", "targets", "targets_file", "dns", "parallelism", "target_timeout", "retries",
        "baseline", "regression_threshold", "outlier_threshold", "report_file", "progress",
        "format"}},
      {"health",
       "gpubench health [--device N | --device_uuid U] [--format table|json]",
       "Each GPU's health verdict with its evidence; exit 0 PASS, 1 DEGRADED or FAIL, 2 UNKNOWN.",
       {"device", "device_uuid", "format"}},
      {"help", "gpubench help [COMMAND]", "This list, or one command's flags.", {}},
  };
  spec.common_flags = {"target", "tls", "ca_cert", "client_cert", "client_key", "tls_server_name",
                       "token_file", "rpc_timeout_seconds"};
  spec.epilogue =
      "Sizes: 1000, 16K/16M/1G (powers of 1000), 16Ki/256Mi/1Gi (powers of 1024); case matters.\n"
      "Exit codes: 0 ok, 1 a run failed, 2 usage error, 3 server unreachable or deadline,\n"
      "4 not authenticated (token or TLS handshake), 5 fleet regression against --baseline,\n"
      "130 interrupted.";
  return spec;
}

}  // namespace
}  // namespace gpubench::client

int main(int argc, char** argv) {
  using namespace gpubench::client;
  const gpubench::ProgramSpec spec = CliSpec();
  for (int i = 0; i < argc; ++i) Argv().push_back(argv[i]);
  const std::vector<std::string> args = gpubench::ParseCommandLineOrExit(argc, argv, spec);
  if (args.size() < 2) {
    std::cerr << gpubench::ProgramUsage(spec);
    return kExitUsage;
  }
  const std::string command = args[1];
  if (command == "help") {
    const std::string* which = args.size() > 2 ? &args[2] : nullptr;
    for (const gpubench::CommandSpec& c : spec.commands) {
      if (which != nullptr && c.name == *which) {
        std::cout << gpubench::CommandUsage(spec, c);
        return kExitOk;
      }
    }
    std::cout << gpubench::ProgramUsage(spec);
    return which == nullptr ? kExitOk : kExitUsage;
  }
  Format format;
  if (!ParseFormat(&format)) return kExitUsage;
  if (format == Format::kNvbenchJson && command != "run" && command != "sweep") {
    std::cerr << "gpubench: --format=nvbench-json is for run and sweep results\n";
    return kExitUsage;
  }
  Interrupts::Get().Start();
  if (const int token = LoadToken(); token != kExitOk) return token;
  if (command == "fleet") return Fleet();
  auto channel = MakeChannel(absl::GetFlag(FLAGS_target));
  if (!channel) return kExitUsage;
  auto stub = gpubench::v1::Benchmark::NewStub(channel);
  if (command == "kernels") return Kernels(*stub, format);
  if (command == "devices") return Devices(*stub, format);
  if (command == "info") return Info(*stub, format);
  if (command == "run") return Run(*stub, format, args);
  if (command == "sweep") return Sweep(*stub, format);
  if (command == "autotune") return Autotune(*stub, format, args);
  if (command == "compare") return Compare(*stub, format);
  if (command == "best") return Best(*stub, format, args);
  if (command == "health") return Health(*stub, format);
  std::cerr << "gpubench: unknown command '" << gpubench::EchoForMessage(command)
            << "'; commands: kernels, devices, info, run, sweep, autotune, compare, best, fleet, "
               "health, help\n";
  return kExitUsage;
}
