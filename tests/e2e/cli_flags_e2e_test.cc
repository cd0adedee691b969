// End to end: the real `gpubench` binary scopes flags to their commands (client/commands/
// commands.h). A flag of another command exits 2 before any RPC, naming the commands that take
// it; `<command> --help` lists that command's flags only; unknown commands and misspelt flags
// are refused as before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "e2e/server_process.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// No server listens on port 1: a usage error must come before any connection attempt.
constexpr char kNowhere[] = " --target=127.0.0.1:1 --rpc_timeout_seconds=5";

TEST(CliFlags, AFlagOfAnotherCommandExits2NamingIt) {
  const CliResult apply = RunCli(absl::StrCat("kernels --apply", kNowhere), true);
  EXPECT_EQ(apply.exit_code, 2) << apply.out;
  EXPECT_EQ(apply.out, "gpubench: --apply is a flag of autotune; 'kernels' does not take it\n");

  const CliResult size =
      RunCli(absl::StrCat("sweep --kernels=add_f32 --sizes=1Ki --size 1Ki", kNowhere), true);
  EXPECT_EQ(size.exit_code, 2) << size.out;
  EXPECT_THAT(size.out, HasSubstr("--size is a flag of run, autotune, best; 'sweep' does not"));

  // --noverify is --verify; a bool's value is no operand.
  const CliResult noverify = RunCli(absl::StrCat("devices --noverify", kNowhere), true);
  EXPECT_EQ(noverify.exit_code, 2) << noverify.out;
  EXPECT_THAT(noverify.out, HasSubstr("--verify is a flag of run, sweep, compare, best;"));

  const CliResult fleet = RunCli("fleet --plan=p.json --targets=a:1 --size=1Mi", true);
  EXPECT_EQ(fleet.exit_code, 2) << fleet.out;
  EXPECT_THAT(fleet.out, HasSubstr("'fleet' does not take it"));

  // Flags that were silently ignored: autotune has no --device_uuid, compare has --modes.
  EXPECT_EQ(
      RunCli(absl::StrCat("autotune add_f32 --size=1Ki --device_uuid=GPU-x", kNowhere)).exit_code,
      2);
  EXPECT_EQ(RunCli(absl::StrCat("compare --mode=hot", kNowhere)).exit_code, 2);
  EXPECT_EQ(RunCli("help --apply").exit_code, 2);
}

TEST(CliFlags, ConnectionFlagsGoWithEveryCommand) {
  // Unreachable (3), not a usage error (2): the flags were taken.
  for (const char* command : {"kernels", "devices", "info", "run add_f32 --size=1Ki",
                              "autotune add_f32 --size=1Ki --block_sizes=64",
                              "best add --dtype=f32 --size=1Ki --progress=false"}) {
    const CliResult r = RunCli(absl::StrCat(command, kNowhere, " --tls_server_name=x"), true);
    EXPECT_EQ(r.exit_code, 3) << command << ": " << r.out;
  }
}

TEST(CliFlags, CommandHelpListsOnlyItsFlags) {
  const CliResult kernels = RunCli("kernels --help");
  EXPECT_EQ(kernels.exit_code, 0);
  EXPECT_THAT(kernels.out, HasSubstr("--format"));
  EXPECT_THAT(kernels.out, HasSubstr("--target"));
  for (const char* foreign : {"--apply", "--size", "--plan", "--warmup", "--output_file"}) {
    EXPECT_THAT(kernels.out, Not(HasSubstr(foreign))) << foreign;
  }
  const CliResult autotune = RunCli("autotune --help");
  EXPECT_THAT(autotune.out, HasSubstr("--apply"));
  EXPECT_THAT(autotune.out, HasSubstr("--block_sizes"));
  EXPECT_THAT(autotune.out, Not(HasSubstr("--kernels")));
  EXPECT_THAT(autotune.out, Not(HasSubstr("--output_file")));
  const CliResult fleet = RunCli("help fleet");
  EXPECT_THAT(fleet.out, HasSubstr("--baseline"));
  EXPECT_THAT(fleet.out, Not(HasSubstr("--size")));

  // The general help lists the table's commands, in its order.
  const CliResult all = RunCli("--help");
  EXPECT_EQ(all.exit_code, 0);
  size_t at = 0;
  for (const char* command :
       {"kernels", "devices", "info", "run", "sweep", "autotune", "compare", "best", "fleet"}) {
    const size_t found = all.out.find(absl::StrCat("\n  ", command, " "), at);
    ASSERT_NE(found, std::string::npos) << command << " in\n" << all.out;
    at = found;
  }
}

TEST(CliFlags, UnknownCommandsAndMisspeltFlagsAsBefore) {
  const CliResult unknown = RunCli("kernals", true);
  EXPECT_EQ(unknown.exit_code, 2);
  // The list comes from the command table: its first entries and its last, not a copy of it.
  EXPECT_TRUE(absl::StartsWith(
      unknown.out, "gpubench: unknown command 'kernals'; commands: kernels, devices, info, run, "))
      << unknown.out;
  EXPECT_TRUE(absl::EndsWith(unknown.out, ", help\n")) << unknown.out;
  const CliResult typo = RunCli("kernels --formt=csv", true);
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.out, HasSubstr("unknown flag --formt (did you mean --format"));
  EXPECT_EQ(RunCli("help kernals").exit_code, 2);
}

// Against a server: the command's own flags still work.
TEST(CliFlags, ScopedFlagsStillReachTheServer) {
  ServerProcess server({"--cpu_devices=1"});
  const std::string t = " --target=" + server.target();
  const CliResult csv = RunCli("kernels --format=csv" + t, true);
  EXPECT_EQ(csv.exit_code, 0) << csv.out;
  EXPECT_THAT(csv.out, HasSubstr("add_f32"));
  const CliResult run =
      RunCli("run add_f32 --size 4Ki --min_samples=3 --noverify --format=json" + t, true);
  EXPECT_EQ(run.exit_code, 0) << run.out;
}

}  // namespace
}  // namespace gpubench
