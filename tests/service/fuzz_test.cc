// Seeded random requests — valid, invalid and raw garbage bytes — fed to validation and to the
// real service over an in-process channel. Every call must end with a well-formed answer: OK with a
// verified result, or an error with a message from the expected set. Crashes, hangs (deadlines)
// and unexpected codes are bugs.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "kernels/cpu_backend.h"
#include "server/service/benchmark_service.h"

namespace gpubench {
namespace {

class FuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerLimits limits;
    limits.max_elements = 1 << 16;
    limits.defaults.min_time_seconds = 0.001;
    limits.defaults.timeout_seconds = 0.05;
    limits.max_timeout_seconds = 0.2;
    limits.max_min_time_seconds = 0.05;
    limits.max_samples_limit = 200;
    limits.queue_capacity = 4;
    engine_ = std::make_unique<Engine>(MakeCpuBackend({.devices = 2, .threads_per_device = 1}),
                                       limits);
    service_ = std::make_unique<BenchmarkService>(engine_.get(), ServiceOptions{.max_sweep_items = 8});
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::Benchmark::NewStub(server_->InProcessChannel({}));
  }
  void TearDown() override {
    server_->Shutdown();
    engine_->Shutdown(absl::Seconds(1));
  }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<BenchmarkService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Benchmark::Stub> stub_;
};

const std::set<grpc::StatusCode> kExpected = {
    grpc::StatusCode::OK, grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::NOT_FOUND,
    grpc::StatusCode::RESOURCE_EXHAUSTED};

double WildDouble(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return std::nan("");
    case 1: return INFINITY;
    case 2: return -1.0 * (rng() % 100);
    case 3: return 0;
    case 4: return std::ldexp(1.0, static_cast<int>(rng() % 200) - 100);
    default: return (rng() % 1000) / 10000.0;
  }
}

int64_t WildInt(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0: return -static_cast<int64_t>(rng() % 1000);
    case 1: return static_cast<int64_t>(rng());
    case 2: return 0;
    default: return static_cast<int64_t>(rng() % 70000);
  }
}

std::string WildKernel(std::mt19937_64& rng) {
  const auto kernels = AllKernels();
  switch (rng() % 4) {
    case 0: return "";
    case 1: {
      // Printable ASCII: proto3 strings must be UTF-8, or gRPC rejects the message before us.
      std::string s(rng() % 300, ' ');
      for (char& c : s) c = static_cast<char>(32 + rng() % 95);
      return s;
    }
    default: return std::string(kernels[rng() % kernels.size()].name);
  }
}

void FillMeasurement(std::mt19937_64& rng, v1::MeasurementOptions* m) {
  m->set_cache_mode(static_cast<v1::CacheMode>(rng() % 4));  // 3 is not a defined enum value
  m->set_warmup_launches(static_cast<int32_t>(WildInt(rng) % 2000));
  m->set_min_samples(static_cast<int32_t>(WildInt(rng) % 300));
  m->set_max_samples(static_cast<int32_t>(WildInt(rng) % 300));
  m->set_min_time_seconds(WildDouble(rng));
  m->set_max_noise(WildDouble(rng));
  m->set_timeout_seconds(WildDouble(rng));
}

TEST_F(FuzzTest, RandomRunRequests) {
  std::mt19937_64 rng(20261129);
  int ok = 0;
  for (int i = 0; i < 400; ++i) {
    v1::RunBenchmarkRequest req;
    const int shape = static_cast<int>(rng() % 10);
    if (shape < 3) {
      // Plausible requests, so runs really execute between the invalid ones.
      const auto kernels = AllKernels();
      const KernelVariant& k = kernels[rng() % kernels.size()];
      req.set_kernel(std::string(k.name));
      req.set_elements(1 + static_cast<int64_t>(rng() % 60000));
      req.set_device_index(static_cast<int32_t>(rng() % 2));
      if (k.default_policy.block_size_tunable && rng() % 2) {
        req.set_block_size(32 * static_cast<int32_t>(1 + rng() % 32));
      }
      req.mutable_measurement()->set_cache_mode(rng() % 2 ? v1::HOT : v1::COLD);
      req.mutable_measurement()->set_min_samples(1 + static_cast<int32_t>(rng() % 5));
      if (rng() % 2) req.set_seed(rng());
    } else if (shape == 3) {
      std::string bytes(rng() % 200, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      if (!req.ParseFromString(bytes)) continue;  // only garbage that is a valid message
    } else {
      req.set_kernel(WildKernel(rng));
      req.set_elements(WildInt(rng));
      req.set_device_index(static_cast<int32_t>(rng() % 4) - 1);
      req.set_block_size(static_cast<int32_t>(WildInt(rng) % 2100));
      if (rng() % 2) FillMeasurement(rng, req.mutable_measurement());
      if (rng() % 2) req.set_verify(rng() % 2);
      if (rng() % 2) req.set_seed(rng());
      req.set_profile(rng() % 2);
    }
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::RunBenchmarkResponse resp;
    const grpc::Status s = stub_->RunBenchmark(&c, req, &resp);
    ASSERT_TRUE(kExpected.count(s.error_code()))
        << "request " << i << " " << req.ShortDebugString() << " -> " << s.error_code() << " "
        << s.error_message();
    if (s.ok()) {
      ++ok;
      EXPECT_TRUE(resp.result().verification().passed() || !resp.result().verification().requested());
      EXPECT_GT(resp.result().timing().samples(), 0);
      EXPECT_GT(resp.result().timing().median_seconds(), 0);
    } else {
      EXPECT_FALSE(s.error_message().empty());
    }
  }
  EXPECT_GT(ok, 10) << "the generator should also produce valid requests";
}

TEST_F(FuzzTest, RandomSweeps) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) {
    v1::RunSweepRequest req;
    for (int k = rng() % 4; k > 0; --k) req.add_kernels(WildKernel(rng));
    for (int k = rng() % 4; k > 0; --k) req.add_sizes(WildInt(rng) % 5000);
    for (int k = rng() % 3; k > 0; --k) req.add_block_sizes(static_cast<int32_t>(WildInt(rng) % 2100));
    req.set_device_index(static_cast<int32_t>(rng() % 3));
    if (rng() % 2) FillMeasurement(rng, req.mutable_measurement());
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto reader = stub_->RunSweep(&c, req);
    v1::RunSweepResponse e;
    while (reader->Read(&e)) {
      if (e.has_error()) {
        EXPECT_FALSE(e.error().message().empty());
      }
    }
    const grpc::Status s = reader->Finish();
    ASSERT_TRUE(kExpected.count(s.error_code()))
        << req.ShortDebugString() << " -> " << s.error_code() << " " << s.error_message();
  }
}

}  // namespace
}  // namespace gpubench
