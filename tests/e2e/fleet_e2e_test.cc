// `gpubench fleet` against real servers on loopback: a dead node mid-run, a planted regression
// against a baseline, and DNS-style resolution of one name to several servers.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <set>

#include "absl/strings/escaping.h"
#include "e2e/server_process.h"
#include "gpubench/v1/fleet.pb.h"

namespace gpubench {
namespace {

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

// The report (protobuf's JSON mapping of v1::FleetReport) written by --report_file.
v1::FleetReport ReadReport(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  v1::FleetReport report;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text, &report).ok()) << text;
  return report;
}

void WriteReport(const v1::FleetReport& report, const std::string& path) {
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(report, &json).ok());
  std::ofstream(path) << json;
}

TEST(Fleet, DeadNodeIsReportedAndTheOthersComplete) {
  ServerProcess a({"--node_name=node-a"}), b({"--node_name=node-b"}), c({"--node_name=node-c"});
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
  EXPECT_NE(result.out.find("FAILED " + c.target() + " (node node-c)"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("2 of 3 targets completed"), std::string::npos) << result.out;
  const v1::FleetReport j = ReadReport(report);
  ASSERT_EQ(j.targets_size(), 3);
  for (const v1::FleetTarget& t : j.targets()) {
    if (t.target() == c.target()) {
      EXPECT_FALSE(t.ok());
      EXPECT_FALSE(t.error().empty());
    } else {
      EXPECT_TRUE(t.ok()) << t.DebugString();
      EXPECT_EQ(t.rows_size(), 4);
      for (const v1::FleetRow& r : t.rows()) {
        EXPECT_GT(r.bandwidth_bytes_per_second(), 0);
        EXPECT_TRUE(r.verified());
        EXPECT_FALSE(r.gpu_model().empty());
        EXPECT_EQ(r.node_name(), t.node_name());
        EXPECT_EQ(r.gpu_uuid().rfind("CPU-", 0), 0u) << r.gpu_uuid();
        EXPECT_GT(r.block_size(), 0);
        // Where the time went: the item's whole wall time holds its sampling loop.
        EXPECT_GT(r.sampling_wall_seconds(), 0);
        EXPECT_GE(r.item_wall_seconds(), r.sampling_wall_seconds());
        EXPECT_GT(r.samples_taken(), 0);
        EXPECT_FALSE(r.stop_rule().empty());
      }
    }
  }
  ASSERT_EQ(j.failures_size(), 1);
  EXPECT_EQ(j.failures(0).target(), c.target());
  EXPECT_EQ(j.targets_completed(), 2);
  EXPECT_FALSE(j.summaries().empty());
}

// Three GPUs of one model run add_f32 with one seed; the node whose output hash is flipped
// (--test_flip_output_hash, as silently corrupted output looks) is named SDC_SUSPECT with the
// seed for a replay, the other two are not, and the run exits 5. A random seed per node instead
// makes no group, so no suspect.
TEST(Fleet, OutputHashDisagreementIsAnSdcSuspect) {
  ServerProcess a({"--node_name=node-a"}), b({"--node_name=node-b"}),
      c({"--node_name=node-c", "--test_flip_output_hash"});
  const std::string plan = ::testing::TempDir() + "/fleet_sdc_" + std::to_string(getpid());
  std::ofstream(plan) << R"({"kernels": ["add_f32"], "sizes": ["65536"], "seed": "4242",
      "measurement": {"minSamples": 3, "minTimeSeconds": 0.001, "timeoutSeconds": 2}})";
  const std::string targets =
      absl::StrCat("--targets=", a.target(), ",", b.target(), ",", c.target());
  const std::string report = ::testing::TempDir() + "/fleet_sdc_report_" + std::to_string(getpid());
  const CliResult result =
      RunFleetCli(absl::StrCat("--plan=", plan, " ", targets, " --report_file=", report));
  EXPECT_EQ(result.exit_code, 5) << result.out;
  EXPECT_NE(result.out.find("SDC_SUSPECT node-c"), std::string::npos) << result.out;
  const v1::FleetReport j = ReadReport(report);
  ASSERT_EQ(j.sdc_suspects_size(), 1) << j.DebugString();
  const v1::FleetSdcSuspect& s = j.sdc_suspects(0);
  EXPECT_EQ(s.node_name(), "node-c");
  EXPECT_EQ(s.seed(), 4242u);
  EXPECT_EQ(s.group_gpus(), 3);
  EXPECT_EQ(s.agreeing_gpus(), 2);
  ASSERT_TRUE(s.has_majority_hash());
  EXPECT_EQ(s.output_hash() ^ s.majority_hash(), 1u);
  EXPECT_NE(s.description().find("--seed=4242"), std::string::npos) << s.description();
  for (const v1::FleetTarget& t : j.targets()) {
    ASSERT_EQ(t.rows_size(), 1);
    EXPECT_TRUE(t.rows(0).has_output_hash());
    EXPECT_TRUE(t.rows(0).verified());  // within tolerance: only the hash tells
  }

  std::ofstream(plan) << R"({"kernels": ["add_f32"], "sizes": ["65536"],
      "measurement": {"minSamples": 3, "minTimeSeconds": 0.001, "timeoutSeconds": 2}})";
  const CliResult random = RunFleetCli(absl::StrCat("--plan=", plan, " ", targets));
  EXPECT_EQ(random.exit_code, 0) << random.out;
  EXPECT_EQ(random.out.find("SDC_SUSPECT"), std::string::npos) << random.out;
}

TEST(Fleet, PlantedRegressionFailsLoudly) {
  ServerProcess a({"--node_name=node-a"}), b({"--node_name=node-b"});
  const std::string plan = WritePlan("fleet_plan_fast", 0.01);
  const std::string targets = absl::StrCat("--targets=", a.target(), ",", b.target());
  const std::string report = ::testing::TempDir() + "/fleet_base_" + std::to_string(getpid());
  const CliResult first = RunFleetCli(absl::StrCat("--plan=", plan, " ", targets, " --format=json --report_file=", report));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  // Timing on a shared CPU is noisy, so the baselines are made unambiguous: every row 100x slower
  // than measured (nothing can regress against it) except the planted one, 100x faster.
  v1::FleetReport base = ReadReport(report);
  for (v1::FleetTarget& t : *base.mutable_targets()) {
    for (v1::FleetRow& r : *t.mutable_rows()) {
      r.set_bandwidth_bytes_per_second(r.bandwidth_bytes_per_second() / 100);
      r.set_value(r.value() / 100);  // the row's primary metric, which the report judges
    }
  }
  const std::string slower = report + ".slower";
  WriteReport(base, slower);
  const CliResult none = RunFleetCli(absl::StrCat("--plan=", plan, " ", targets, " --baseline=", slower));
  EXPECT_EQ(none.exit_code, 0) << none.out;
  // Plant: the baseline claims copy_d2d at 65536 on node a was 100x faster than measured.
  for (v1::FleetTarget& t : *base.mutable_targets()) {
    for (v1::FleetRow& r : *t.mutable_rows()) {
      if (r.node_name() == "node-a" && r.kernel() == "copy_d2d" && r.elements() == 65536) {
        r.set_bandwidth_bytes_per_second(r.bandwidth_bytes_per_second() * 10000);
        r.set_value(r.value() * 10000);
      }
    }
  }
  const std::string planted = report + ".planted";
  WriteReport(base, planted);
  const std::string second_report = report + ".second";
  const CliResult second = RunFleetCli(absl::StrCat("--plan=", plan, " ", targets, " --baseline=", planted,
                                              " --regression_threshold=0.5 --report_file=",
                                              second_report));
  EXPECT_EQ(second.exit_code, 5) << second.out;
  EXPECT_NE(second.out.find("REGRESSIONS"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("SLOWER node-a CPU-"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("copy_d2d 64Ki cold"), std::string::npos) << second.out;
  EXPECT_EQ(second.out.find("SLOWER node-b"), std::string::npos) << second.out;
  // The regression is in the report file too, named by node and GPU.
  const v1::FleetReport written = ReadReport(second_report);
  ASSERT_EQ(written.regressions_size(), 1) << second.out;
  EXPECT_EQ(written.regressions(0).kind(), v1::FleetRegression::SLOWER);
  EXPECT_EQ(written.regressions(0).node_name(), "node-a");
  EXPECT_EQ(written.regressions(0).kernel(), "copy_d2d");
  EXPECT_EQ(written.baseline(), planted);
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
  ServerProcess first({"--node_name=dns-1"});
  const std::string port = first.target().substr(first.target().rfind(':') + 1);
  ServerProcess second({"--listen=127.0.0.2:" + port, "--node_name=dns-2"});
  const std::string name = "gpubench-fleet-dns-test." + std::to_string(getpid());
  HostsEntry hosts(name, {"127.0.0.1", "127.0.0.2"});
  if (!hosts.ok()) GTEST_SKIP() << "/etc/hosts is not writable here; cannot create a test name";
  const std::string plan = WritePlan("fleet_plan_dns", 0.01);
  const std::string report = ::testing::TempDir() + "/fleet_dns_" + std::to_string(getpid());
  const CliResult r = RunFleetCli(absl::StrCat("--plan=", plan, " --dns=", name, ":", port,
                                         " --format=json --report_file=", report));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const v1::FleetReport j = ReadReport(report);
  std::set<std::string> names;
  for (const v1::FleetTarget& t : j.targets()) {
    names.insert(t.target());
    EXPECT_TRUE(t.ok()) << t.DebugString();
  }
  EXPECT_EQ(names, (std::set<std::string>{"127.0.0.1:" + port, "127.0.0.2:" + port})) << r.out;
}

// Careless flags are usage errors (exit 2) before any target is called; a report nobody can read
// (stdout on a full device, a --report_file that cannot be written) is never exit 0; the report
// is written without following a link planted at "<file>.tmp".
TEST(Fleet, CarelessFlagsAndFailedWrites) {
  ServerProcess server({"--node_name=careless"});
  const std::string plan = WritePlan("fleet_plan_careless", 0.01);
  const std::string base = absl::StrCat("--plan=", plan, " --targets=", server.target());
  for (const char* timeout : {"nan", "-1", "0", "1e308", "inf"}) {
    const CliResult r = RunFleetCli(absl::StrCat(base, " --target_timeout=", timeout));
    EXPECT_EQ(r.exit_code, 2) << timeout << ": " << r.out;
    EXPECT_NE(r.out.find("--target_timeout must be in"), std::string::npos) << r.out;
  }
  const CliResult zero = RunFleetCli(absl::StrCat(base, " --targets_file=/dev/zero"));
  EXPECT_EQ(zero.exit_code, 2) << zero.out;
  EXPECT_NE(zero.out.find("/dev/zero is larger than"), std::string::npos) << zero.out;

  EXPECT_EQ(RunCli(absl::StrCat("fleet ", base, " >/dev/full")).exit_code, 1);
  const CliResult unwritable = RunFleetCli(
      absl::StrCat(base, " --report_file=", ::testing::TempDir(), "/no/such/dir/report.json"));
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.out;
  EXPECT_NE(unwritable.out.find("could not write --report_file"), std::string::npos)
      << unwritable.out;

  const std::string dir = ::testing::TempDir() + "/fleet_link_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/victim") << "precious\n";
  std::filesystem::create_symlink(dir + "/victim", dir + "/report.json.tmp");
  EXPECT_EQ(RunFleetCli(absl::StrCat(base, " --report_file=", dir, "/report.json")).exit_code, 0);
  std::ifstream victim(dir + "/victim");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(victim)), {}), "precious\n");
  EXPECT_EQ(ReadReport(dir + "/report.json").targets_size(), 1);
  std::filesystem::remove_all(dir);
}

// A plan with a catalog sweep and a user-kernel sweep (PTX: no compiler needed on the CPU
// backend) against a server without --allow_user_kernels and one with it: the first runs the
// catalog sweep and skips the user one, saying why, and completes (a skip is not a failure);
// the second runs both, and its user items answer as the CPU backend answers user kernels, named
// by the user kernel's entry and code hash. Then the same plan against the first alone: exit 0.
TEST(Fleet, AUserKernelSweepIsSkippedWhereUserKernelsAreOff) {
  ServerProcess off({"--node_name=node-off"});
  ServerProcess on({"--node_name=node-on", "--allow_user_kernels"});
  const std::string ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry my_add(.param .u64 a, "
      ".param .u64 b, .param .u64 c, .param .u64 n) { ret; }\n";
  const std::string plan = ::testing::TempDir() + "/fleet_user_plan" + std::to_string(getpid());
  std::ofstream(plan) << R"({"sweeps": [
      {"kernels": ["add_f32"], "sizes": ["4096"],
       "measurement": {"minSamples": 3, "minTimeSeconds": 0.01, "timeoutSeconds": 1}},
      {"userKernel": {"ptx": ")"
                      << absl::CEscape(ptx) << R"(", "entry": "my_add",
         "family": "elementwise_add", "dtype": "f32", "launch": {"blockSize": 256}},
       "sizes": ["4096", "8192"],
       "measurement": {"minSamples": 3, "minTimeSeconds": 0.01, "timeoutSeconds": 1}}]})";
  const std::string report = ::testing::TempDir() + "/fleet_user_report" + std::to_string(getpid());
  const CliResult both = RunFleetCli(absl::StrCat("--plan=", plan, " --targets=", off.target(), ",",
                                                  on.target(), " --report_file=", report));
  EXPECT_EQ(both.exit_code, 1) << both.out;  // node-on's user items failed (CPU backend)
  EXPECT_NE(both.out.find(absl::StrCat("SKIPPED ", off.target(),
                                       " (node node-off): sweep 2 of "
                                       "the plan (user:my_add@")),
            std::string::npos)
      << both.out;
  EXPECT_NE(both.out.find("the server does not allow user kernels (it runs without "
                          "--allow_user_kernels)"),
            std::string::npos)
      << both.out;
  EXPECT_NE(both.out.find("1 of 2 targets completed"), std::string::npos) << both.out;
  const v1::FleetReport j = ReadReport(report);
  ASSERT_EQ(j.targets_size(), 2);
  const v1::FleetTarget& t_off = j.targets(0);
  const v1::FleetTarget& t_on = j.targets(1);
  EXPECT_TRUE(t_off.ok()) << t_off.DebugString();
  EXPECT_EQ(t_off.rows_size(), 1);  // the catalog sweep's row
  ASSERT_EQ(t_off.skipped_size(), 1);
  EXPECT_EQ(t_off.skipped(0).sweep(), 2);
  EXPECT_EQ(t_off.skipped(0).kernel().rfind("user:my_add@", 0), 0u) << t_off.skipped(0).kernel();
  EXPECT_EQ(t_off.skipped(0).kernel().size(), std::string("user:my_add@").size() + 12);
  EXPECT_FALSE(t_on.ok());
  EXPECT_EQ(t_on.skipped_size(), 0);
  EXPECT_EQ(t_on.rows_size(), 1);  // the catalog row; the user items are errors
  EXPECT_NE(t_on.error().find("2 plan item(s) failed: " + t_off.skipped(0).kernel() + " 4096: "),
            std::string::npos)
      << t_on.error();
  EXPECT_NE(t_on.error().find("cannot run a user kernel"), std::string::npos) << t_on.error();
  // The catalog rows of both nodes are summarised together, as always.
  ASSERT_EQ(j.summaries_size(), 1);
  EXPECT_EQ(j.summaries(0).kernel(), "add_f32");
  EXPECT_EQ(j.summaries(0).gpus(), 2);

  const CliResult alone = RunFleetCli(absl::StrCat("--plan=", plan, " --targets=", off.target()));
  EXPECT_EQ(alone.exit_code, 0) << alone.out;
  EXPECT_NE(alone.out.find("1 of 1 targets completed"), std::string::npos) << alone.out;

  // A user kernel beside catalog kernels in one sweep: refused with the plan, before any target.
  std::ofstream(plan) << R"({"kernels": ["add_f32"], "sizes": ["4096"], "userKernel": {"ptx": "x",
      "entry": "my_add", "family": "elementwise_add", "dtype": "f32"}})";
  const CliResult bad = RunFleetCli(absl::StrCat("--plan=", plan, " --targets=", off.target()));
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("plan: sweep 1: kernels and userKernel are exclusive"), std::string::npos)
      << bad.out;
}

}  // namespace
}  // namespace gpubench
