// End to end: `gpubench compare` and `gpubench best` through the real CLI against the real server
// binary on the CPU backend (the CI path of both commands).
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "e2e/server_process.h"
#include "gpubench/v1/benchmark.pb.h"

namespace gpubench {
namespace {

class CompareE2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--cpu_devices=1"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static std::string Quick() {
    return " --min_samples=3 --min_time=0.0001 --max_noise=1 --progress=false --target=" +
           server_->target();
  }
  static ServerProcess* server_;
};
ServerProcess* CompareE2ETest::server_ = nullptr;

TEST_F(CompareE2ETest, CompareRunsSeedsTunedCubAndCopyAtEverySizeAndMode) {
  CliResult csv = RunCli("compare --sizes=4Ki,5000 --dtypes=f16 --format=csv" + Quick());
  ASSERT_EQ(csv.exit_code, 0) << csv.out;
  std::vector<std::string> lines = absl::StrSplit(csv.out, '\n', absl::SkipEmpty());
  ASSERT_GT(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("mode,elements,kernel,seed_label", 0), 0u) << lines[0];
  std::set<std::string> kernels, groups;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 11u) << lines[i];
    kernels.insert(f[2]);
    groups.insert(f[0] + "/" + f[1]);
    EXPECT_EQ(f[10], "pass") << lines[i];
    if (f[2] == "add_f16") {
      EXPECT_EQ(f[8], "1.0000") << lines[i];  // the seed over itself
    }
    if (f[2] == "copy_d2d") {
      EXPECT_EQ(f[9], "100.00") << lines[i];
    }
  }
  // The seed's four fp16 kernels (V3-V6), tuned ones, CUB and the copy ceiling; no f32 or bf16.
  for (const char* k : {"add_f16", "add_f16x2", "add_f16x8", "add_f16x8_pack", "add_f16_tuned",
                        "add_f16_stream", "add_f16_l2keep", "add_f16_gridstride", "add_f16_bulk",
                        "cub_add_f16", "copy_d2d"}) {
    EXPECT_TRUE(kernels.count(k)) << k << " missing from\n" << csv.out;
  }
  EXPECT_FALSE(kernels.count("add_f32")) << csv.out;
  EXPECT_FALSE(kernels.count("add_bf16_tuned")) << csv.out;
  EXPECT_EQ(groups, (std::set<std::string>{"cold/4096", "cold/5000", "hot/4096", "hot/5000"}));

  CliResult table = RunCli("compare --sizes=4Ki --dtypes=f32 --modes=hot" + Quick());
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("== 4Ki elements (4096), hot =="), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("add_f32 (V1)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("add_f32x4 (V2)"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("cold =="), std::string::npos) << table.out;

  EXPECT_EQ(RunCli("compare --sizes=4Ki --dtypes=f64" + Quick()).exit_code, 2);
  EXPECT_EQ(RunCli("compare --sizes=4Ki --modes=warm" + Quick()).exit_code, 2);
}

TEST_F(CompareE2ETest, BestMeasuresEveryCandidateAndPrintsTheFastest) {
  CliResult csv = RunCli("best add --dtype=bf16 --size=5000 --mode=hot --format=csv" + Quick());
  ASSERT_EQ(csv.exit_code, 0) << csv.out;
  std::vector<std::string> lines = absl::StrSplit(csv.out, '\n', absl::SkipEmpty());
  ASSERT_GT(lines.size(), 3u) << csv.out;
  double previous = 0;
  std::set<std::string> kernels;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 10u) << lines[i];
    EXPECT_EQ(f[0], std::to_string(i));  // ranked fastest first
    EXPECT_EQ(f[2], "bf16");
    EXPECT_EQ(f[4], "hot");
    const double seconds = std::stod(f[6]);
    EXPECT_GE(seconds, previous) << csv.out;
    previous = seconds;
    kernels.insert(f[1]);
    if (i == 1) {
      EXPECT_EQ(f[8], "1.0000") << lines[i];  // the winner over itself
    }
    EXPECT_EQ(f[9], "pass") << lines[i];
  }
  EXPECT_TRUE(kernels.count("add_bf16")) << "the seed pattern is a candidate";
  EXPECT_TRUE(kernels.count("add_bf16_l2keep"));
  EXPECT_FALSE(kernels.count("cub_add_bf16")) << "library baselines are not gpubench's kernels";

  CliResult json = RunCli("best add --dtype=f32 --size=4Ki --format=json" + Quick());
  ASSERT_EQ(json.exit_code, 0) << json.out;
  v1::RunResult winner;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &winner).ok()) << json.out;
  EXPECT_EQ(winner.request().dtype(), "f32");
  EXPECT_TRUE(winner.verification().passed());

  CliResult table = RunCli("best add --dtype=f16 --size=4Ki" + Quick());
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_EQ(table.out.rfind("best: add_f16", 0), 0u) << table.out;
  EXPECT_NE(table.out.find("chosen by measurement"), std::string::npos) << table.out;

  EXPECT_EQ(RunCli("best add --dtype=f64 --size=4Ki" + Quick()).exit_code, 2);
  EXPECT_EQ(RunCli("best mul --dtype=f16 --size=4Ki" + Quick()).exit_code, 2);
  EXPECT_EQ(RunCli("best add --dtype=f16" + Quick()).exit_code, 2);  // no --size
}

}  // namespace
}  // namespace gpubench
