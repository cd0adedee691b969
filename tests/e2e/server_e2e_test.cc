// End to end: the real gpubench_server binary on an ephemeral loopback port, called through real
// channels with the generated client, the gpubench CLI, and the standard health and reflection
// protocols.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fcntl.h>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "e2e/reflection_client.h"
#include "gpubench/v1/benchmark.grpc.pb.h"
#include "e2e/server_process.h"
#include "kernels/catalog.h"


namespace gpubench {
namespace {

using v1::Benchmark;

class E2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--cpu_devices=2"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  std::unique_ptr<Benchmark::Stub> Stub() { return Benchmark::NewStub(server_->Channel()); }
  static void Deadline(grpc::ClientContext* c, int seconds = 60) {
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  }
  static ServerProcess* server_;
};
ServerProcess* E2ETest::server_ = nullptr;

TEST_F(E2ETest, ListKernels) {
  grpc::ClientContext c;
  Deadline(&c);
  v1::ListKernelsResponse r;
  ASSERT_TRUE(Stub()->ListKernels(&c, {}, &r).ok());
  EXPECT_EQ(r.backend(), "cpu");
  std::set<std::string> names;
  for (const auto& k : r.kernels()) {
    names.insert(k.name());
    EXPECT_TRUE(k.available()) << k.name();
    // Families that move bytes say how many per element; GEMM and latency report operations.
    if (k.metric() == "bytes_per_second") {
      EXPECT_GT(k.bytes_per_element(), 0) << k.name();
    }
  }
  // The whole catalog, every variant once (the count is the catalog's, not a number to edit).
  EXPECT_EQ(names.size(), AllKernels().size());
  EXPECT_EQ(static_cast<size_t>(r.kernels_size()), AllKernels().size());
  EXPECT_TRUE(names.count("gemm_f8e4m3"));
  EXPECT_TRUE(names.count("copy_h2d_pinned") && names.count("copy_peer_sm_pull"));
  EXPECT_TRUE(names.count("add_f16x8_pack"));
  EXPECT_TRUE(names.count("add_bf16_l2keep"));
  EXPECT_TRUE(names.count("add_bf16_l2keep_pdl"));
  for (const auto& k : r.kernels()) {
    if (k.name() == "add_bf16_bulk") {
      EXPECT_EQ(k.min_compute_capability(), 90);
      EXPECT_EQ(k.default_policy().max_items_per_thread(), 128);
      EXPECT_EQ(k.default_policy().dynamic_shared_bytes_per_item(), 4);
    }
  }
  EXPECT_TRUE(names.count("saxpy_sophisticated"));
}

TEST_F(E2ETest, ListDevicesShowsTheHost) {
  grpc::ClientContext c;
  Deadline(&c);
  v1::ListDevicesResponse r;
  ASSERT_TRUE(Stub()->ListDevices(&c, {}, &r).ok());
  ASSERT_EQ(r.devices_size(), 2);
  for (const auto& d : r.devices()) {
    EXPECT_EQ(d.backend(), "cpu");
    EXPECT_GT(d.multiprocessor_count(), 0);
    EXPECT_GT(d.total_memory_bytes(), 0);
    EXPECT_GT(d.free_memory_bytes(), 0);
    EXPECT_FALSE(d.name().empty());
  }
}

TEST_F(E2ETest, RunBenchmarkMeasuresAndVerifies) {
  for (const char* kernel : {"add_f16x8_pack", "saxpy_sophisticated", "copy_d2d"}) {
    grpc::ClientContext c;
    Deadline(&c);
    v1::RunBenchmarkRequest req;
    req.set_kernel(kernel);
    req.set_elements((1 << 20) + 3);
    req.set_device_index(1);
    req.set_seed(99);
    req.mutable_measurement()->set_cache_mode(v1::HOT);
    req.mutable_measurement()->set_min_samples(4);
    v1::RunBenchmarkResponse resp;
    grpc::Status s = Stub()->RunBenchmark(&c, req, &resp);
    ASSERT_TRUE(s.ok()) << kernel << ": " << s.error_message();
    const v1::RunResult& r = resp.result();
    EXPECT_EQ(r.backend(), "cpu");
    EXPECT_FALSE(r.run_id().empty());
    EXPECT_EQ(r.request().kernel(), kernel);
    EXPECT_EQ(r.request().elements(), (1 << 20) + 3);
    EXPECT_EQ(r.request().device_index(), 1);
    EXPECT_EQ(r.request().seed(), 99u);
    EXPECT_EQ(r.request().cache_mode(), v1::HOT);
    EXPECT_GE(r.timing().samples(), 4);
    EXPECT_GT(r.timing().median_seconds(), 0);
    EXPECT_LE(r.timing().min_seconds(), r.timing().median_seconds());
    EXPECT_GT(r.throughput().bandwidth_bytes_per_second(), 0);
    EXPECT_FALSE(r.throughput().has_percent_of_peak_bandwidth());
    EXPECT_TRUE(r.verification().requested());
    EXPECT_TRUE(r.verification().passed());
    EXPECT_EQ(r.verification().checked_elements(), (1 << 20) + 3);
    EXPECT_FALSE(r.occupancy().available());
    EXPECT_FALSE(r.occupancy().unavailable_reason().empty());
    EXPECT_GE(r.finished_at().seconds(), r.started_at().seconds());
    EXPECT_EQ(r.device().index(), 1);
  }
}

TEST_F(E2ETest, BadRequestsGetPreciseStatuses) {
  struct Case {
    std::string kernel;
    int64_t elements;
    int block;
    int device;
    grpc::StatusCode code;
  };
  for (const Case& k : {Case{"nope", 10, 0, 0, grpc::StatusCode::NOT_FOUND},
                        Case{"add_f32", 0, 0, 0, grpc::StatusCode::INVALID_ARGUMENT},
                        Case{"add_f32", 10, 33, 0, grpc::StatusCode::INVALID_ARGUMENT},
                        Case{"add_f32", 10, 0, 7, grpc::StatusCode::INVALID_ARGUMENT},
                        Case{"add_f32", int64_t{1} << 40, 0, 0, grpc::StatusCode::INVALID_ARGUMENT}}) {
    grpc::ClientContext c;
    Deadline(&c);
    v1::RunBenchmarkRequest req;
    req.set_kernel(k.kernel);
    req.set_elements(k.elements);
    req.set_block_size(k.block);
    req.set_device_index(k.device);
    v1::RunBenchmarkResponse resp;
    grpc::Status s = Stub()->RunBenchmark(&c, req, &resp);
    EXPECT_EQ(s.error_code(), k.code) << k.kernel << " " << k.elements << ": " << s.error_message();
    EXPECT_FALSE(s.error_message().empty());
  }
}

TEST_F(E2ETest, SweepStreamsProgressAndResults) {
  grpc::ClientContext c;
  Deadline(&c);
  v1::RunSweepRequest req;
  req.add_kernels("add_f32");
  req.add_kernels("saxpy_minimal");
  req.add_sizes(1000);
  req.add_sizes(4099);
  req.add_block_sizes(64);
  req.add_block_sizes(128);
  req.mutable_measurement()->set_min_samples(3);
  auto reader = Stub()->RunSweep(&c, req);
  v1::RunSweepResponse event;
  int queued = 0, running = 0, results = 0;
  std::set<std::pair<std::string, int64_t>> seen;
  while (reader->Read(&event)) {
    if (event.has_progress()) {
      EXPECT_EQ(event.progress().total(), 8);
      if (event.progress().state() == v1::SweepProgress::QUEUED) ++queued;
      if (event.progress().state() == v1::SweepProgress::RUNNING) ++running;
    }
    if (event.has_result()) {
      ++results;
      EXPECT_TRUE(event.result().verification().passed());
      seen.insert({event.result().request().kernel(), event.result().request().elements()});
    }
    EXPECT_FALSE(event.has_error()) << event.error().message();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(queued, 8);
  EXPECT_EQ(running, 8);
  EXPECT_EQ(results, 8);
  EXPECT_EQ(seen.size(), 4u);
}

TEST_F(E2ETest, AllDevicesRunConcurrentlyAndUuidSelects) {
  grpc::ClientContext c;
  Deadline(&c);
  v1::RunSweepRequest req;
  req.add_kernels("add_f32");
  req.add_sizes(100000);
  req.add_sizes(100001);
  req.set_all_devices(true);
  req.mutable_measurement()->set_min_time_seconds(0.3);
  req.mutable_measurement()->set_max_noise(1.0);
  auto reader = Stub()->RunSweep(&c, req);
  v1::RunSweepResponse event;
  std::map<int, std::vector<v1::RunResult>> by_device;
  while (reader->Read(&event)) {
    if (event.has_result()) by_device[event.result().request().device_index()].push_back(event.result());
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(by_device.size(), 2u);
  ASSERT_EQ(by_device[0].size(), 2u);
  ASSERT_EQ(by_device[1].size(), 2u);
  // Device 1's first run started before device 0's first run finished: they overlapped.
  auto nanos = [](const google::protobuf::Timestamp& t) { return t.seconds() * 1000000000LL + t.nanos(); };
  EXPECT_LT(nanos(by_device[1][0].started_at()), nanos(by_device[0][0].finished_at()));
  EXPECT_LT(nanos(by_device[0][0].started_at()), nanos(by_device[1][0].finished_at()));

  grpc::ClientContext c2;
  Deadline(&c2);
  v1::RunBenchmarkRequest one;
  one.set_kernel("copy_d2d");
  one.set_elements(1000);
  // Simulated devices have name-based UUIDs derived from the node name: distinct and stable.
  const std::string uuid1 = by_device[1][0].device().uuid();
  EXPECT_EQ(uuid1.rfind("CPU-", 0), 0u) << uuid1;
  EXPECT_NE(uuid1, by_device[0][0].device().uuid());
  one.set_device_uuid(uuid1);
  v1::RunBenchmarkResponse resp;
  ASSERT_TRUE(Stub()->RunBenchmark(&c2, one, &resp).ok());
  EXPECT_EQ(resp.result().request().device_index(), 1);
  EXPECT_EQ(resp.result().device().uuid(), uuid1);
  EXPECT_FALSE(resp.result().device().node_name().empty());
  grpc::ClientContext c3;
  Deadline(&c3);
  one.set_device_uuid("GPU-nope");
  EXPECT_EQ(Stub()->RunBenchmark(&c3, one, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(E2ETest, AutotuneReportsTheBestAndAppliesIt) {
  grpc::ClientContext c;
  Deadline(&c);
  v1::AutotuneRequest req;
  req.set_kernel("add_f16x8_pack");
  req.set_elements(200000);
  req.set_device_index(1);
  req.add_block_sizes(64);
  req.add_block_sizes(256);
  req.set_apply(true);
  req.mutable_measurement()->set_min_samples(3);
  v1::AutotuneResponse resp;
  ASSERT_TRUE(Stub()->Autotune(&c, req, &resp).ok());
  ASSERT_EQ(resp.rows_size(), 3);  // 64, 256 and the catalog default 32
  double best = 1e9;
  int best_block = 0;
  for (const auto& row : resp.rows()) {
    EXPECT_GT(row.median_seconds(), 0);
    if (row.median_seconds() < best) best = row.median_seconds(), best_block = row.block_size();
  }
  EXPECT_EQ(resp.best_block_size(), best_block);
  EXPECT_GE(resp.speedup_over_catalog_default(), 1.0);
  EXPECT_TRUE(resp.applied());
  // A request without block_size on that device now uses the tuned one; device 0 does not.
  for (int device : {1, 0}) {
    grpc::ClientContext c2;
    Deadline(&c2);
    v1::RunBenchmarkRequest one;
    one.set_kernel("add_f16x8_pack");
    one.set_elements(1000);
    one.set_device_index(device);
    v1::RunBenchmarkResponse r;
    ASSERT_TRUE(Stub()->RunBenchmark(&c2, one, &r).ok());
    EXPECT_EQ(r.result().request().block_size(), device == 1 ? best_block : 32);
    EXPECT_EQ(r.result().request().block_size_source(), device == 1 ? "tuned" : "catalog");
  }
  grpc::ClientContext c3;
  Deadline(&c3);
  req.set_kernel("cub_add_f32");
  EXPECT_EQ(Stub()->Autotune(&c3, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(E2ETest, AutotuneCrossesBlockSizesAndItemsPerThreadThroughTheCli) {
  const std::string t = "--target=" + server_->target();
  CliResult tune = RunCli(
      "autotune add_f32_bulk --size=100003 --block_sizes=64,256 --items_per_thread=4,16 "
      "--min_samples=3 --apply --format=json " + t);
  ASSERT_EQ(tune.exit_code, 0) << tune.out;
  v1::AutotuneResponse resp;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(tune.out, &resp).ok()) << tune.out;
  // 2 x 2 configurations plus the catalog default (256 x 3), each run once.
  ASSERT_EQ(resp.rows_size(), 5);
  std::set<std::pair<int, int>> seen;
  const v1::AutotuneRow* best = nullptr;
  for (const auto& row : resp.rows()) {
    seen.emplace(row.block_size(), row.items_per_thread());
    if (best == nullptr || row.median_seconds() < best->median_seconds()) best = &row;
  }
  EXPECT_EQ(seen, (std::set<std::pair<int, int>>{{64, 4}, {64, 16}, {256, 4}, {256, 16}, {256, 3}}));
  EXPECT_EQ(resp.best_block_size(), best->block_size());
  EXPECT_EQ(resp.best_items_per_thread(), best->items_per_thread());
  EXPECT_TRUE(resp.applied());

  // Both tuned values now apply on device 0 when a request leaves them out.
  CliResult run = RunCli("run add_f32_bulk --size=5000 --format=json " + t);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  v1::RunResult parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &parsed).ok()) << run.out;
  EXPECT_EQ(parsed.request().block_size(), best->block_size());
  EXPECT_EQ(parsed.request().items_per_thread(), best->items_per_thread());
  EXPECT_EQ(parsed.request().dynamic_shared_bytes(),
            best->block_size() * best->items_per_thread() * 8);
  EXPECT_EQ(parsed.request().block_size_source(), "tuned");
  EXPECT_TRUE(parsed.verification().passed());

  // A sweep crosses items too; a value the kernel does not allow is refused before anything runs.
  CliResult sweep = RunCli(
      "sweep --kernels=add_f16_tuned --sizes=3001 --items_per_thread=8,16,32 --format=csv " + t);
  EXPECT_EQ(sweep.exit_code, 0) << sweep.out;
  EXPECT_NE(sweep.out.find("add_f16_tuned,f16,3001,768,32,"), std::string::npos) << sweep.out;
  CliResult bad = RunCli("run add_f32_tuned --size=1000 --items_per_thread=12 " + t, true);
  EXPECT_EQ(bad.exit_code, 1);  // INVALID_ARGUMENT from the server
  EXPECT_NE(bad.out.find("times a power of two, at most 32"), std::string::npos) << bad.out;
  CliResult fixed = RunCli("run add_f32x4 --size=1000 --items_per_thread=8 " + t, true);
  EXPECT_EQ(fixed.exit_code, 1);
  EXPECT_NE(fixed.out.find("omit items_per_thread"), std::string::npos) << fixed.out;
  EXPECT_EQ(RunCli("run add_f32_tuned --size=1000 --items_per_thread=8,16 " + t).exit_code, 2);
}

TEST_F(E2ETest, InvalidSweepFailsBeforeStreaming) {
  grpc::ClientContext c;
  Deadline(&c);
  v1::RunSweepRequest req;
  req.add_kernels("add_f32");
  req.add_kernels("not_a_kernel");
  req.add_sizes(1000);
  auto reader = Stub()->RunSweep(&c, req);
  v1::RunSweepResponse event;
  EXPECT_FALSE(reader->Read(&event));
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("not_a_kernel"), std::string::npos);
}

TEST_F(E2ETest, HealthIsServing) {
  auto health = grpc::health::v1::Health::NewStub(server_->Channel());
  for (const char* service : {"", "gpubench.v1.Benchmark"}) {
    grpc::ClientContext c;
    Deadline(&c);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    ASSERT_TRUE(health->Check(&c, req, &resp).ok()) << service;
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(E2ETest, ReflectionListsServices) {
  ReflectionClient reflection(server_->Channel());
  const std::set<std::string> services = reflection.ListServices();
  EXPECT_TRUE(services.count("gpubench.v1.Benchmark"));
  EXPECT_TRUE(services.count("grpc.health.v1.Health"));
  // grpcurl describe needs the file descriptor: ask for the service's file.
  std::vector<google::protobuf::FileDescriptorProto> files;
  ASSERT_TRUE(reflection.FilesContainingSymbol("gpubench.v1.Benchmark", &files));
  ASSERT_EQ(files.size(), 2u);  // + timestamp
  EXPECT_TRUE(reflection.Finish().ok());
}

TEST_F(E2ETest, CliCommandsAndExitCodes) {
  const std::string t = "--target=" + server_->target();
  CliResult kernels = RunCli("kernels " + t);
  EXPECT_EQ(kernels.exit_code, 0);
  EXPECT_NE(kernels.out.find("add_f16x8_pack"), std::string::npos);

  CliResult devices = RunCli("devices --format=json " + t);
  EXPECT_EQ(devices.exit_code, 0);
  v1::ListDevicesResponse parsed_devices;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(devices.out, &parsed_devices).ok());
  EXPECT_EQ(parsed_devices.devices_size(), 2);

  CliResult run = RunCli("run add_f32x4 --size=4Ki --format=json --seed=5 " + t);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  v1::RunResult parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &parsed).ok()) << run.out;
  EXPECT_EQ(parsed.request().elements(), 4096);
  EXPECT_EQ(parsed.request().seed(), 5u);
  EXPECT_TRUE(parsed.verification().passed());

  CliResult table = RunCli("run saxpy_balanced --size 1000 " + t);
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("verification  pass"), std::string::npos) << table.out;

  CliResult csv = RunCli("sweep --kernels=add_f16,add_f16x2 --sizes=1Ki,3000 --format=csv " + t);
  EXPECT_EQ(csv.exit_code, 0);
  std::vector<std::string> lines = absl::StrSplit(csv.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << csv.out;  // header + 4 results
  EXPECT_EQ(lines[0].rfind("kernel,dtype,elements", 0), 0u);

  EXPECT_EQ(RunCli("run nope --size=1 " + t).exit_code, 1);
  EXPECT_EQ(RunCli("run add_f32 --size=12X " + t).exit_code, 2);
  EXPECT_EQ(RunCli("frobnicate " + t).exit_code, 2);
  EXPECT_EQ(RunCli("kernels --target=127.0.0.1:1 --rpc_timeout_seconds=2").exit_code, 3);
}

TEST_F(E2ETest, MeasurementV2ThroughTheCli) {
  const std::string t = "--target=" + server_->target();
  // Profile mode: exactly N plain launches, said so in the result.
  CliResult profile = RunCli("run add_f32 --size=4Ki --profile_runs=5 --format=json " + t);
  ASSERT_EQ(profile.exit_code, 0) << profile.out;
  v1::RunResult parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(profile.out, &parsed).ok());
  EXPECT_TRUE(parsed.measurement().profile_mode());
  EXPECT_EQ(parsed.measurement().stop_rule(), "profile_runs");
  EXPECT_EQ(parsed.timing().samples(), 5);
  EXPECT_EQ(parsed.request().profile_runs(), 5);
  EXPECT_TRUE(parsed.verification().passed());

  // Samples and a histogram; percentiles in the detail view.
  CliResult hist = RunCli("run add_f32 --size=4Ki --histogram --max_samples=200 " + t);
  ASSERT_EQ(hist.exit_code, 0) << hist.out;
  EXPECT_NE(hist.out.find("histogram of "), std::string::npos) << hist.out;
  EXPECT_NE(hist.out.find("percentiles   p5 "), std::string::npos) << hist.out;
  CliResult samples = RunCli("run add_f32 --size=4Ki --samples --max_samples=30 --format=json " + t);
  ASSERT_EQ(samples.exit_code, 0);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(samples.out, &parsed).ok());
  EXPECT_EQ(parsed.samples().seconds_size(), parsed.timing().samples());
  EXPECT_EQ(parsed.samples().count(), parsed.timing().samples());
  EXPECT_GT(parsed.timing().p95_seconds(), 0);
  EXPECT_FALSE(parsed.measurement().stop_rule().empty());

  // nvbench JSON to a file, cold and hot of one state.
  const std::string file = ::testing::TempDir() + "/gpubench_nvbench.json";
  for (const char* mode : {"cold", "hot"}) {
    CliResult sweep = RunCli(absl::StrCat("sweep --kernels=add_f32 --sizes=4Ki --mode=", mode,
                                          " --format=nvbench-json --output_file=", file,
                                          mode == std::string("hot") ? ".hot " : " ", t));
    ASSERT_EQ(sweep.exit_code, 0) << sweep.out;
  }
  for (const std::string& path : {file, file + ".hot"}) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("\"1.0.0\""), std::string::npos) << text.str();
    EXPECT_NE(text.str().find(path == file ? "nv/cold/time/gpu/mean" : "nv/batch/time/gpu/mean"),
              std::string::npos)
        << text.str();
  }

  // max_noise is a fraction: a percent-looking value is refused before any RPC.
  CliResult percent = RunCli("run add_f32 --size=1000 --max_noise=5 " + t, true);
  EXPECT_EQ(percent.exit_code, 2);
  EXPECT_NE(percent.out.find("looks like a percent"), std::string::npos) << percent.out;
  // So are throttle_threshold and max_duty (a percent up to 100 is named; larger values are the
  // server's INVALID_ARGUMENT).
  for (const std::string flag : {"--throttle_threshold=75", "--max_duty=80"}) {
    CliResult fraction = RunCli("run add_f32 --size=1000 " + flag + " " + t, true);
    EXPECT_EQ(fraction.exit_code, 2) << flag;
    EXPECT_NE(fraction.out.find("looks like a percent"), std::string::npos) << fraction.out;
  }
}

TEST_F(E2ETest, PlacementsThroughTheCli) {
  const std::string t = "--target=" + server_->target();
  CliResult run =
      RunCli("run add_f32 --size=4Ki --placements=4 --min_samples=3 --format=json " + t);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  v1::RunResult parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &parsed).ok());
  EXPECT_EQ(parsed.request().placements(), 4);
  ASSERT_EQ(parsed.measurement().notes_size(), 1) << run.out;
  EXPECT_NE(parsed.measurement().notes(0).find("placements = 4 has no effect on the cpu backend"),
            std::string::npos);
  // Out of range: the server's INVALID_ARGUMENT; a family that cannot rotate: FAILED_PRECONDITION.
  CliResult many = RunCli("run add_f32 --size=1000 --placements=17 " + t, true);
  EXPECT_EQ(many.exit_code, 1) << many.out;
  EXPECT_NE(many.out.find("measurement.placements = 17 is outside [1, 16]"), std::string::npos)
      << many.out;
  CliResult host = RunCli("run copy_h2d_pinned --size=1000 --placements=2 " + t, true);
  EXPECT_EQ(host.exit_code, 1) << host.out;
  EXPECT_NE(host.out.find("FAILED_PRECONDITION"), std::string::npos) << host.out;
  CliResult typo = RunCli("run add_f32 --size=1000 --placements=four " + t, true);
  EXPECT_EQ(typo.exit_code, 2) << typo.out;
  CliResult help = RunCli("run --help");
  EXPECT_NE(help.out.find("--placements"), std::string::npos) << help.out;
}

TEST_F(E2ETest, PlacementPadThroughTheCli) {
  const std::string t = "--target=" + server_->target();
  // In --size's syntax; echoed in the result; the cpu backend says it ignored it.
  CliResult padded =
      RunCli("run add_f32 --size=4Ki --placement_pad=34Mi --min_samples=3 --format=json " + t);
  ASSERT_EQ(padded.exit_code, 0) << padded.out;
  v1::RunResult parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(padded.out, &parsed).ok());
  EXPECT_EQ(parsed.request().placement_pad_bytes(), int64_t{34} << 20);
  ASSERT_EQ(parsed.measurement().notes_size(), 1) << padded.out;
  EXPECT_NE(parsed.measurement().notes(0).find("has no effect on the cpu backend"),
            std::string::npos);
  CliResult detail = RunCli("run add_f32 --size=4Ki --placement_pad=35651584 --min_samples=3 " + t);
  ASSERT_EQ(detail.exit_code, 0) << detail.out;
  EXPECT_NE(detail.out.find("  placement     a pad of 34Mi bytes"), std::string::npos)
      << detail.out;
  // Sweeps carry it to every item.
  CliResult sweep = RunCli(
      "sweep --kernels=add_f32 --sizes=1Ki,2Ki --placement_pad=1Mi "
      "--min_samples=3 --format=json --progress=false " +
      t);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out;
  int echoed = 0;
  for (size_t at = 0;
       (at = sweep.out.find("\"placementPadBytes\": \"1048576\"", at)) != std::string::npos; ++at) {
    ++echoed;
  }
  EXPECT_EQ(echoed, 2) << sweep.out;

  // A value that is not a size, a negative one and a misspelt flag: usage errors before any RPC.
  for (const std::string bad : {"--placement_pad=34MB", "--placement_pad=-1",
                                "--placement_pad=1.5Mi", "--placement_pda=34Mi"}) {
    CliResult refused = RunCli("run add_f32 --size=1000 " + bad + " " + t, true);
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.out;
    EXPECT_NE(refused.out.find("placement_pad"), std::string::npos) << refused.out;
  }
  // Over 1 GiB: the server's INVALID_ARGUMENT, a failed run.
  CliResult big = RunCli("run add_f32 --size=1000 --placement_pad=2Gi " + t, true);
  EXPECT_EQ(big.exit_code, 1) << big.out;
  EXPECT_NE(big.out.find("placement_pad_bytes = 2147483648 is outside [0, 1073741824]"),
            std::string::npos)
      << big.out;
  CliResult help = RunCli("run --help");
  EXPECT_NE(help.out.find("--placement_pad"), std::string::npos) << help.out;
}

// --timer: every choice reaches the server; the CPU backend refuses the CUPTI ones with the reason,
// and a value that is no timer is a usage error before any RPC.
TEST_F(E2ETest, TimerChoicesThroughTheCli) {
  const std::string t = "--target=" + server_->target();
  for (const std::string timer : {"auto", "events"}) {
    CliResult ok = RunCli("run add_f32 --size=4Ki --min_samples=3 --timer=" + timer + " " + t);
    EXPECT_EQ(ok.exit_code, 0) << timer << ": " << ok.out;
    EXPECT_NE(ok.out.find("cpu_clock"), std::string::npos) << ok.out;
  }
  for (const std::string timer : {"cupti", "gpu_time"}) {
    CliResult refused = RunCli("run add_f32 --size=4Ki --timer=" + timer + " " + t, true);
    EXPECT_EQ(refused.exit_code, 1) << timer << ": " << refused.out;
    EXPECT_NE(refused.out.find("FAILED_PRECONDITION"), std::string::npos) << refused.out;
    EXPECT_NE(refused.out.find("measurement.timer = " + timer + ": the CPU backend has no CUPTI"),
              std::string::npos)
        << refused.out;
  }
  CliResult bad = RunCli("run add_f32 --size=4Ki --timer=gputime " + t, true);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--timer must be auto, cupti, events or gpu_time (got 'gputime')"),
            std::string::npos)
      << bad.out;
  CliResult help = RunCli("run --help");
  EXPECT_NE(help.out.find("gpu_time (each kernel's gpu__time_duration counter"), std::string::npos)
      << help.out;
}

// --default_placement_pad_bytes: the pad of requests that leave theirs at 0.
TEST(E2EPlacementPad, ServerDefaultAppliesWhereTheRequestHasNone) {
  ServerProcess server({"--default_placement_pad_bytes=2097152"});
  const std::string t = "--target=" + server.target();
  for (const auto& [flag, expected] :
       std::vector<std::pair<std::string, int64_t>>{{"", 2097152}, {"--placement_pad=4Ki", 4096}}) {
    CliResult run =
        RunCli("run add_f32 --size=1Ki --min_samples=3 --format=json " + flag + " " + t);
    ASSERT_EQ(run.exit_code, 0) << run.out << server.Log();
    v1::RunResult parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &parsed).ok()) << run.out;
    EXPECT_EQ(parsed.request().placement_pad_bytes(), expected) << flag;
  }
}

TEST(E2ETunedDefaultsFile, AutotuneApplySurvivesARestartAndABadFileStopsStartup) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("gpubench_tuned_e2e_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/tuned.json";
  const std::string flag = "--tuned_defaults_file=" + file;
  int best_block = 0, best_items = 0;
  {
    ServerProcess server({"--cpu_devices=2", flag});
    CliResult tune = RunCli("autotune add_f16_tuned --size=50000 --device=1 --block_sizes=64,128 "
                            "--items_per_thread=8,16 --min_samples=3 --apply --format=json "
                            "--target=" + server.target());
    ASSERT_EQ(tune.exit_code, 0) << tune.out << server.Log();
    v1::AutotuneResponse resp;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(tune.out, &resp).ok()) << tune.out;
    EXPECT_TRUE(resp.applied());
    EXPECT_TRUE(resp.persisted());
    best_block = resp.best_block_size();
    best_items = resp.best_items_per_thread();
    EXPECT_EQ(server.SignalAndWait(SIGTERM, std::chrono::seconds(20)), 0) << server.Log();
  }
  {
    ServerProcess server({"--cpu_devices=2", flag});  // a restart reads the file back
    EXPECT_NE(server.Log().find("tuned defaults: 1 applied"), std::string::npos) << server.Log();
    CliResult run = RunCli("run add_f16_tuned --size=3000 --device=1 --format=json --target=" +
                           server.target());
    ASSERT_EQ(run.exit_code, 0) << run.out;
    v1::RunResult r;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &r).ok()) << run.out;
    EXPECT_EQ(r.request().block_size(), best_block);
    EXPECT_EQ(r.request().items_per_thread(), best_items);
    EXPECT_EQ(r.request().block_size_source(), "tuned");
  }
  std::ofstream(file) << R"({"defaults": [{"gpu_uuid": "cpu-0", "kernel": "add_f64"}]})";
  ServerProcess bad({"--cpu_devices=2", flag}, /*wait_for_port=*/false);
  EXPECT_EQ(bad.SignalAndWait(0, std::chrono::seconds(20)), 2) << bad.Log();
  EXPECT_NE(bad.Log().find("unknown kernel 'add_f64'"), std::string::npos) << bad.Log();
  std::filesystem::remove_all(dir);
}

TEST(E2EShutdown, SigtermDuringSweepEndsStreamAndExitsCleanly) {
  ServerProcess server({"--shutdown_grace_seconds=1"});
  auto stub = Benchmark::NewStub(server.Channel());
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::RunSweepRequest req;
  req.add_kernels("add_f32");
  for (int i = 0; i < 50; ++i) req.add_sizes(100000 + i);
  req.mutable_measurement()->set_min_time_seconds(0.2);
  auto reader = stub->RunSweep(&c, req);
  v1::RunSweepResponse event;
  ASSERT_TRUE(reader->Read(&event));  // the sweep has started
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(server.SignalAndWait(SIGTERM, std::chrono::seconds(20)), 0) << server.Log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  while (reader->Read(&event)) {
  }
  EXPECT_FALSE(reader->Finish().ok());  // the sweep did not complete: it says so
  EXPECT_NE(server.Log().find("stopped cleanly"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
