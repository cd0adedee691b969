// `gpubench fleet` against real servers on loopback: a dead node mid-run, a planted regression
// against a baseline, and DNS-style resolution of one name to several servers.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <set>

#include "e2e/server_process.h"

namespace gpubench {
namespace {

using Json = nlohmann::json;

CliResult RunFleetCli(const std::string& args) {
  return RunCli("fleet " + args, /*with_stderr=*/true);
}

std::string WritePlan(const std::string& name, double min_time) {
  const std::string path = ::testing::TempDir() + "/" + name + std::to_string(getpid()) + ".json";
  std::ofstream(path) << R"({"kernels": ["add_f32", "copy_d2d"], "sizes": ["65536", "200000"],
      "measurement": {"minSamples": 3, "minTimeSeconds": )" << min_time
                      << R"(, "timeoutSeconds": 2}})";
  return path;
}

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

TEST(Fleet, DeadNodeIsReportedAndTheOthersComplete) {
  ServerProcess a({}), b({}), c({});
  const std::string plan = WritePlan("fleet_plan_slow", 0.3);
  const std::string report = ::testing::TempDir() + "/fleet_report_" + std::to_string(getpid());
  auto fleet = std::async(std::launch::async, [&] {
    return RunFleetCli(absl::StrCat("--plan=", plan, " --targets=", a.target(), ",", b.target(), ",",
                                    c.target(), " --retries=1 --target_timeout=60 --report_file=",
                                    report));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the plan is running everywhere
  EXPECT_EQ(c.SignalAndWait(SIGKILL, std::chrono::seconds(5)), 128 + SIGKILL);
  const CliResult result = fleet.get();
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_NE(result.out.find("FAILED " + c.target()), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("2 of 3 targets completed"), std::string::npos) << result.out;
  const Json j = ReadJson(report);
  ASSERT_EQ(j["targets"].size(), 3u);
  for (const Json& t : j["targets"]) {
    if (t["target"] == c.target()) {
      EXPECT_FALSE(t["ok"].get<bool>());
      EXPECT_FALSE(t["error"].get<std::string>().empty());
    } else {
      EXPECT_TRUE(t["ok"].get<bool>()) << t.dump();
      EXPECT_EQ(t["rows"].size(), 4u);
      for (const Json& r : t["rows"]) {
        EXPECT_GT(r["bandwidth_bytes_per_second"].get<double>(), 0);
        EXPECT_TRUE(r["verified"].get<bool>());
        EXPECT_FALSE(r["gpu_model"].get<std::string>().empty());
      }
    }
  }
  EXPECT_FALSE(j["summary"].empty());
}

TEST(Fleet, PlantedRegressionFailsLoudly) {
  ServerProcess a({}), b({});
  const std::string plan = WritePlan("fleet_plan_fast", 0.01);
  const std::string targets = absl::StrCat("--targets=", a.target(), ",", b.target());
  const std::string report = ::testing::TempDir() + "/fleet_base_" + std::to_string(getpid());
  const CliResult first = RunFleetCli(absl::StrCat("--plan=", plan, " ", targets, " --format=json --report_file=", report));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  // Timing on a shared CPU is noisy, so the baselines are made unambiguous: every row 100x slower
  // than measured (nothing can regress against it) except the planted one, 100x faster.
  Json base = ReadJson(report);
  for (Json& t : base["targets"]) {
    for (Json& r : t["rows"]) r["bandwidth_bytes_per_second"] = r["bandwidth_bytes_per_second"].get<double>() / 100;
  }
  const std::string slower = report + ".slower";
  std::ofstream(slower) << base.dump();
  const CliResult none = RunFleetCli(absl::StrCat("--plan=", plan, " ", targets, " --baseline=", slower));
  EXPECT_EQ(none.exit_code, 0) << none.out;
  // Plant: the baseline claims copy_d2d at 65536 on node a was 100x faster than measured.
  for (Json& t : base["targets"]) {
    for (Json& r : t["rows"]) {
      if (t["target"] == a.target() && r["kernel"] == "copy_d2d" && r["elements"] == 65536) {
        r["bandwidth_bytes_per_second"] = r["bandwidth_bytes_per_second"].get<double>() * 10000;
      }
    }
  }
  const std::string planted = report + ".planted";
  std::ofstream(planted) << base.dump();
  const CliResult second = RunFleetCli(absl::StrCat("--plan=", plan, " ", targets, " --baseline=", planted,
                                              " --regression_threshold=0.5"));
  EXPECT_EQ(second.exit_code, 5) << second.out;
  EXPECT_NE(second.out.find("REGRESSIONS"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find(a.target() + " device 0"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("copy_d2d 64Ki cold"), std::string::npos) << second.out;
  EXPECT_EQ(second.out.find(b.target() + " device 0"), std::string::npos) << second.out;
}

// Adds a test-only name to /etc/hosts for the test's lifetime (the resolver reads it on each
// lookup), restoring the file afterwards. No network traffic leaves loopback.
class HostsEntry {
 public:
  HostsEntry(const std::string& name, const std::vector<std::string>& addresses) {
    std::ifstream in("/etc/hosts");
    original_.assign(std::istreambuf_iterator<char>(in), {});
    std::ofstream out("/etc/hosts", std::ios::app);
    if (!out) return;
    out << "\n";
    for (const auto& a : addresses) out << a << " " << name << "\n";
    ok_ = static_cast<bool>(out);
  }
  ~HostsEntry() {
    if (ok_) std::ofstream("/etc/hosts", std::ios::trunc) << original_;
  }
  bool ok() const { return ok_; }

 private:
  std::string original_;
  bool ok_ = false;
};

TEST(Fleet, DnsNameResolvingToSeveralServers) {
  // One name, two loopback addresses, one port: a server on each (like a headless Service).
  ServerProcess first({});
  const std::string port = first.target().substr(first.target().rfind(':') + 1);
  ServerProcess second({"--listen=127.0.0.2:" + port});
  const std::string name = "gpubench-fleet-dns-test." + std::to_string(getpid());
  HostsEntry hosts(name, {"127.0.0.1", "127.0.0.2"});
  if (!hosts.ok()) GTEST_SKIP() << "/etc/hosts is not writable here; cannot create a test name";
  const std::string plan = WritePlan("fleet_plan_dns", 0.01);
  const std::string report = ::testing::TempDir() + "/fleet_dns_" + std::to_string(getpid());
  const CliResult r = RunFleetCli(absl::StrCat("--plan=", plan, " --dns=", name, ":", port,
                                         " --format=json --report_file=", report));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const Json j = ReadJson(report);
  std::set<std::string> names;
  for (const Json& t : j["targets"]) {
    names.insert(t["target"].get<std::string>());
    EXPECT_TRUE(t["ok"].get<bool>()) << t.dump();
  }
  EXPECT_EQ(names, (std::set<std::string>{"127.0.0.1:" + port, "127.0.0.2:" + port})) << r.out;
}

}  // namespace
}  // namespace gpubench
