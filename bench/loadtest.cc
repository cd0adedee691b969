// A bounded load test of a gpubench server on loopback: N concurrent clients (one channel each)
// for a fixed time, mixing cheap RPCs (ListKernels, ListDevices, health) with small benchmark
// runs. Prints requests served, errors by status code and latency percentiles per RPC kind, and
// exits non-zero if any response was malformed or a server stopped answering.
//
//   loadtest --target=127.0.0.1:50051 --clients=32 --seconds=20 [--run_fraction=0.3]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "Server address (loopback only).");
ABSL_FLAG(int, clients, 32, "Concurrent clients, each with its own channel.");
ABSL_FLAG(double, seconds, 20, "Duration of the test.");
ABSL_FLAG(double, run_fraction, 0.3, "Share of requests that are RunBenchmark calls.");
ABSL_FLAG(int64_t, elements, 4096, "Elements per benchmark run.");

namespace {

struct Stats {
  std::mutex mu;
  std::map<std::string, std::vector<double>> latency;  // kind -> seconds
  std::map<std::string, int> codes;                    // "kind code" -> count
  std::atomic<int> malformed{0};
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string target = absl::GetFlag(FLAGS_target);
  if (target.rfind("127.", 0) != 0 && target.rfind("localhost", 0) != 0 &&
      target.rfind("[::1]", 0) != 0) {
    std::fprintf(stderr, "loadtest: refusing non-loopback target %s\n", target.c_str());
    return 2;
  }
  Stats stats;
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(1000 * absl::GetFlag(FLAGS_seconds)));
  std::vector<std::thread> threads;
  for (int c = 0; c < absl::GetFlag(FLAGS_clients); ++c) {
    threads.emplace_back([&, c] {
      grpc::ChannelArguments args;
      args.SetInt("gpubench.loadtest.client", c);  // a distinct channel (no subchannel sharing)
      auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
      auto stub = gpubench::v1::Benchmark::NewStub(channel);
      std::mt19937 rng(c);
      std::uniform_real_distribution<double> u(0, 1);
      while (std::chrono::steady_clock::now() < end) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        const auto t0 = std::chrono::steady_clock::now();
        std::string kind;
        grpc::Status s;
        bool ok_shape = true;
        if (u(rng) < absl::GetFlag(FLAGS_run_fraction)) {
          kind = "RunBenchmark";
          gpubench::v1::RunBenchmarkRequest req;
          req.set_kernel(rng() % 2 ? "add_f32x4" : "saxpy_minimal");
          req.set_elements(absl::GetFlag(FLAGS_elements));
          req.mutable_measurement()->set_min_samples(3);
          req.mutable_measurement()->set_min_time_seconds(0.001);
          req.mutable_measurement()->set_max_noise(0.5);
          gpubench::v1::RunBenchmarkResponse resp;
          s = stub->RunBenchmark(&ctx, req, &resp);
          if (s.ok()) {
            // At least min_samples (3), unless the sampling timeout ended the run first, which
            // the result must then say.
            const auto& r = resp.result();
            ok_shape = r.verification().passed() && r.timing().samples() >= 1 &&
                       r.timing().median_seconds() > 0 && !r.run_id().empty() &&
                       (r.timing().samples() >= 3 ||
                        r.measurement().stop_reason().find("timeout") != std::string::npos);
          }
        } else if (rng() % 2) {
          kind = "ListKernels";
          gpubench::v1::ListKernelsResponse resp;
          s = stub->ListKernels(&ctx, {}, &resp);
          if (s.ok()) ok_shape = resp.kernels_size() > 0;
        } else {
          kind = "ListDevices";
          gpubench::v1::ListDevicesResponse resp;
          s = stub->ListDevices(&ctx, {}, &resp);
          if (s.ok()) ok_shape = resp.devices_size() > 0;
        }
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!ok_shape || (!s.ok() && s.error_message().empty())) ++stats.malformed;
        std::lock_guard<std::mutex> lock(stats.mu);
        stats.latency[kind].push_back(dt);
        ++stats.codes[absl::StrCat(kind, " ", static_cast<int>(s.error_code()))];
      }
    });
  }
  for (auto& t : threads) t.join();
  int total = 0;
  std::printf("| rpc | requests | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n");
  for (auto& [kind, v] : stats.latency) {
    total += static_cast<int>(v.size());
    std::printf("| %s | %zu | %.2f | %.2f | %.2f | %.2f |\n", kind.c_str(), v.size(),
                1e3 * Percentile(v, 0.5), 1e3 * Percentile(v, 0.9), 1e3 * Percentile(v, 0.99),
                1e3 * Percentile(v, 1.0));
  }
  std::printf("\nstatus codes (rpc code: count):\n");
  for (auto& [k, n] : stats.codes) std::printf("  %s: %d\n", k.c_str(), n);
  std::printf("\n%d requests from %d clients in %.0f s; malformed responses: %d\n", total,
              absl::GetFlag(FLAGS_clients), absl::GetFlag(FLAGS_seconds), stats.malformed.load());
  return stats.malformed.load() == 0 ? 0 : 1;
}
