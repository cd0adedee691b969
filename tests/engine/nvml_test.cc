// The NVML loader, the shared-node busy check and the clock-event watch, against a fake
// libnvidia-ml (tests/kernels/fake_nvml.cc) loaded with dlopen exactly as the real one is.
#include <gtest/gtest.h>
#include <set>
#include <signal.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "kernels/cpu_backend.h"
#include "kernels/nvml.h"
#include "kernels/nvml_backend.h"
#include "server/engine/engine.h"
#include "server/engine/nvml_monitor.h"

namespace gpubench {
namespace {

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"FAKE_NVML_INIT_ERROR", "FAKE_NVML_UNKNOWN_UUID", "FAKE_NVML_PIDS",
                          "FAKE_NVML_REASONS", "FAKE_NVML_NVLINKS"}) {
      unsetenv(v);
    }
  }
  std::shared_ptr<Nvml> Load() {
    absl::StatusOr<std::shared_ptr<Nvml>> nvml = Nvml::Load(FAKE_NVML_LIBRARY);
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    return nvml.ok() ? *nvml : nullptr;
  }
};

TEST_F(NvmlTest, AbsentLibrarySaysWhy) {
  absl::StatusOr<std::shared_ptr<Nvml>> nvml = Nvml::Load("libnvidia-ml-does-not-exist.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(nvml.status().message().find("libnvidia-ml-does-not-exist.so.1"), std::string::npos);
}

TEST_F(NvmlTest, FailedInitSaysWhy) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  absl::StatusOr<std::shared_ptr<Nvml>> nvml = Nvml::Load(FAKE_NVML_LIBRARY);
  ASSERT_FALSE(nvml.ok());
  EXPECT_NE(nvml.status().message().find("Driver Not Loaded"), std::string::npos)
      << nvml.status();
}

TEST_F(NvmlTest, ReadsDriverIndexAndPciBusId) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->driver_version(), "580.159.04");
  absl::StatusOr<NvmlDeviceFacts> facts = nvml->Describe("GPU-0000");
  ASSERT_TRUE(facts.ok()) << facts.status();
  EXPECT_EQ(facts->index, 3);
  EXPECT_EQ(facts->pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(facts->name, "NVIDIA H200");
  setenv("FAKE_NVML_UNKNOWN_UUID", "GPU-gone", 1);
  EXPECT_EQ(nvml->Describe("GPU-gone").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NvmlTest, ProcessListGrowsItsBuffer) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  std::string pids;
  for (int p = 100; p < 140; ++p) absl::StrAppend(&pids, pids.empty() ? "" : ",", p);
  setenv("FAKE_NVML_PIDS", pids.c_str(), 1);  // 40 > the first buffer's 16
  absl::StatusOr<std::vector<NvmlProcess>> processes = nvml->RunningProcesses("GPU-0000");
  ASSERT_TRUE(processes.ok()) << processes.status();
  ASSERT_EQ(processes->size(), 40u);
  EXPECT_EQ((*processes)[39].pid, 139u);
  EXPECT_EQ((*processes)[0].used_memory_bytes, int64_t{512} << 20);
  EXPECT_EQ((*processes)[0].kind, "compute");
}

TEST_F(NvmlTest, ClockEventReasonNames) {
  EXPECT_TRUE(ClockEventReasonNames(0).empty());
  EXPECT_EQ(ClockEventReasonNames(0x4 | 0x40),
            (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(ClockEventReasonNames(0x8000),
            (std::vector<std::string>{"0x8000"}));
}

TEST_F(NvmlTest, BackendDescribeCarriesNvmlFacts) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  std::unique_ptr<Backend> backend = WithNvmlFacts(MakeCpuBackend({.devices = 2}), nvml);
  setenv("FAKE_NVML_UNKNOWN_UUID", "cpu-1", 1);
  absl::StatusOr<DeviceInfo> known = backend->Describe(0);
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(known->nvml_index, 3);
  EXPECT_EQ(known->pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(known->kernel_driver_version, "580.159.04");
  absl::StatusOr<DeviceInfo> unknown = backend->Describe(1);
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->nvml_index, -1);
  EXPECT_EQ(unknown->kernel_driver_version, "");
}

// Stop ends the watch at once, after one last poll: a poll thread that slept its 50 ms interval
// out added up to 50 ms to every run. Ten short watches took ~0.5 s that way.
TEST_F(NvmlTest, ClockEventWatchStopsWithoutWaitingOutItsInterval) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  setenv("FAKE_NVML_REASONS", "0x4", 1);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    ClockEventWatch watch(nvml, "GPU-aaaa");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    absl::StatusOr<std::vector<std::string>> reasons = watch.Stop();
    ASSERT_TRUE(reasons.ok()) << reasons.status();
    EXPECT_EQ(*reasons, ClockEventReasonNames(0x4));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
  unsetenv("FAKE_NVML_REASONS");
}

TEST_F(NvmlTest, BusyCheckIgnoresThisProcessAndNamesOthers) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  NvmlMonitor shared(nvml, {"GPU-aaaa"}, GpuSharing::kShared);
  NvmlMonitor exclusive(nvml, {"GPU-aaaa"}, GpuSharing::kExclusive);
  setenv("FAKE_NVML_PIDS", absl::StrCat(getpid()).c_str(), 1);
  EXPECT_TRUE(shared.CheckIdle(0).ok());
  setenv("FAKE_NVML_PIDS", absl::StrCat(getpid(), ",4242").c_str(), 1);
  absl::Status busy = shared.CheckIdle(0);
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(IsGpuBusy(busy));
  EXPECT_NE(busy.message().find("GPU GPU-aaaa (device 0)"), std::string::npos) << busy;
  EXPECT_NE(busy.message().find("pid 4242"), std::string::npos) << busy;
  EXPECT_TRUE(exclusive.CheckIdle(0).ok());
  // A device NVML does not know (CPU backend) is never busy.
  setenv("FAKE_NVML_UNKNOWN_UUID", "GPU-aaaa", 1);
  EXPECT_TRUE(shared.CheckIdle(0).ok());
}

// The server's worker processes hold the GPUs' contexts: the busy check counts them as the server
// (a live child here stands in for a worker), never as a tenant.
TEST_F(NvmlTest, BusyCheckCountsTheWorkersAsThisServer) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  NvmlMonitor shared(nvml, {"GPU-aaaa"}, GpuSharing::kShared);
  setenv("FAKE_NVML_PIDS", absl::StrCat(getpid(), ",", child).c_str(), 1);
  EXPECT_FALSE(shared.CheckIdle(0).ok());  // before the monitor knows the worker
  shared.SetWorkerPids([child] { return std::set<pid_t>{child}; });
  EXPECT_TRUE(shared.CheckIdle(0).ok());
  setenv("FAKE_NVML_PIDS", absl::StrCat(child, ",4243").c_str(), 1);
  const absl::Status busy = shared.CheckIdle(0);
  EXPECT_NE(busy.message().find("pid 4243"), std::string::npos) << busy;
  EXPECT_EQ(busy.message().find(absl::StrCat("pid ", child)), std::string::npos) << busy;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  unsetenv("FAKE_NVML_PIDS");
}

TEST_F(NvmlTest, PeerPathNamesNvlinkOrPcie) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  NvmlMonitor monitor(nvml, {"GPU-aaaa", "GPU-bbbb"}, GpuSharing::kExclusive);
  setenv("FAKE_NVML_NVLINKS", "18", 1);
  EXPECT_EQ(monitor.PeerPath(0, 1).value_or(""),
            "peer path: nvlink (NVML P2P status over NVLink ok; 18 active NVLinks on device 0)");
  unsetenv("FAKE_NVML_NVLINKS");
  EXPECT_EQ(monitor.PeerPath(0, 1).value_or(""),
            "peer path: pcie (NVML P2P status over NVLink: not supported)");
  EXPECT_FALSE(monitor.PeerPath(0, 7).has_value());
  setenv("FAKE_NVML_UNKNOWN_UUID", "GPU-bbbb", 1);  // the CPU backend's devices: no NVML view
  EXPECT_FALSE(monitor.PeerPath(0, 1).has_value());
  NvmlMonitor without(nullptr, {"GPU-aaaa", "GPU-bbbb"}, GpuSharing::kExclusive);
  EXPECT_EQ(without.PeerPath(0, 1).value_or(""), "peer path: unknown (NVML not loaded)");
}

class NvmlEngineTest : public NvmlTest {
 protected:
  absl::StatusOr<RunResult> RunOnce(Engine& engine, bool force) {
    RunRequest r;
    r.kernel = "add_f32";
    r.elements = 1024;
    r.measurement.min_samples = 3;
    r.measurement.min_time_seconds = 0.001;
    r.measurement.max_noise = 0.5;  // stop at min_samples: the sampling is not under test
    r.measurement.timeout_seconds = 1;
    r.force = force;
    absl::StatusOr<RunSpec> spec = engine.Resolve(r);
    EXPECT_TRUE(spec.ok()) << spec.status();
    std::promise<absl::StatusOr<RunResult>> done;
    JobCallbacks cb;
    cb.on_done = [&done](absl::StatusOr<RunResult> result) { done.set_value(std::move(result)); };
    EXPECT_TRUE(engine.Submit(*spec, absl::InfiniteFuture(), cb, nullptr).ok());
    return done.get_future().get();
  }
};

TEST_F(NvmlEngineTest, BusyGpuRefusesUnlessForcedAndRunsCarryClockEvents) {
  std::shared_ptr<Nvml> nvml = Load();
  ASSERT_NE(nvml, nullptr);
  std::unique_ptr<Backend> backend = WithNvmlFacts(MakeCpuBackend({.devices = 1}), nvml);
  NvmlMonitor monitor(nvml, {backend->Describe(0)->uuid}, GpuSharing::kShared);
  Engine engine(std::move(backend), ServerLimits{});
  engine.SetMonitor(&monitor);

  setenv("FAKE_NVML_PIDS", "4242", 1);
  setenv("FAKE_NVML_REASONS", "0x4", 1);
  absl::StatusOr<RunResult> refused = RunOnce(engine, /*force=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("pid 4242"), std::string::npos);

  absl::StatusOr<RunResult> forced = RunOnce(engine, /*force=*/true);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(forced->clock_event_reasons, std::vector<std::string>{"sw_power_cap"});
  EXPECT_EQ(forced->device.nvml_index, 3);

  unsetenv("FAKE_NVML_PIDS");
  unsetenv("FAKE_NVML_REASONS");
  absl::StatusOr<RunResult> idle = RunOnce(engine, /*force=*/false);
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_TRUE(idle->clock_event_reasons.empty());
  EXPECT_EQ(idle->clock_events_unavailable_reason, "");
}

TEST_F(NvmlEngineTest, WithoutNvmlRunsSayWhyThereAreNoClockEvents) {
  Engine engine(MakeCpuBackend({.devices = 1}), ServerLimits{});
  NvmlMonitor monitor(nullptr, {"cpu-0"}, GpuSharing::kShared);
  engine.SetMonitor(&monitor);
  absl::StatusOr<RunResult> result = RunOnce(engine, /*force=*/false);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->clock_events_unavailable_reason, "NVML not loaded");
}

}  // namespace
}  // namespace gpubench
