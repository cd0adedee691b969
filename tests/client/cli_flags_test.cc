// The command table (client/commands/commands.h): every listed flag exists, every CLI flag
// belongs to a command, and a flag of another command is refused with the commands that take it.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "client/commands/commands.h"
#include "common/measurement_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpubench::client {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

bool Takes(const Command& command, const std::string& flag) {
  return std::find(command.flags.begin(), command.flags.end(), flag) != command.flags.end();
}

TEST(CliTable, EveryListedFlagIsRegisteredOnce) {
  for (const Command& c : Commands()) {
    EXPECT_NE(c.main, nullptr) << c.name;
    for (const std::string& flag : c.flags) {
      EXPECT_NE(absl::FindCommandLineFlag(flag), nullptr) << c.name << " lists --" << flag;
      EXPECT_EQ(std::count(c.flags.begin(), c.flags.end(), flag), 1) << c.name << " --" << flag;
      EXPECT_EQ(std::count(ConnectionFlags().begin(), ConnectionFlags().end(), flag), 0)
          << c.name << " lists the connection flag --" << flag;
    }
  }
  for (const std::string& flag : ConnectionFlags()) {
    EXPECT_NE(absl::FindCommandLineFlag(flag), nullptr) << flag;
  }
}

// A flag defined for the CLI that no command takes would be refused everywhere.
TEST(CliTable, EveryCliFlagBelongsToACommand) {
  int seen = 0;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), "client/commands/")) continue;
    ++seen;
    const bool connection =
        std::count(ConnectionFlags().begin(), ConnectionFlags().end(), std::string(name)) > 0;
    const bool taken = std::any_of(Commands().begin(), Commands().end(),
                                   [&](const Command& c) { return Takes(c, std::string(name)); });
    EXPECT_TRUE(connection || taken) << "--" << name << " is taken by no command";
  }
  EXPECT_GT(seen, 50);
}

// The option table's CLI flags exist, carry the table's help, and every measuring command takes
// them (FillMeasurement reads them all).
TEST(CliTable, OptionTableFlagsAreDefinedWithTheTablesHelp) {
  for (const OptionSpec& o : kMeasurementOptions) {
    if (o.cli_flag.empty()) continue;
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(o.cli_flag);
    ASSERT_NE(flag, nullptr) << "--" << o.cli_flag;
    EXPECT_EQ(flag->Help(), o.help) << "--" << o.cli_flag;
    if (o.id == OptionId::kCacheMode) continue;  // compare takes --modes
    for (const char* command : {"run", "sweep", "autotune", "compare", "best"}) {
      EXPECT_TRUE(Takes(*FindCommand(command), std::string(o.cli_flag)))
          << command << " --" << o.cli_flag;
    }
  }
}

TEST(CliTable, FindCommand) {
  ASSERT_NE(FindCommand("autotune"), nullptr);
  EXPECT_TRUE(Takes(*FindCommand("autotune"), "apply"));
  EXPECT_EQ(FindCommand("autotun"), nullptr);
  std::vector<std::string> names;  // the table's, in its order
  for (const Command& c : Commands()) names.push_back(c.name);
  EXPECT_EQ(UnknownCommandError("kernals"),
            "gpubench: unknown command 'kernals'; commands: " + absl::StrJoin(names, ", "));
}

TEST(FlagsNamed, TokenisesAsTheParserDoes) {
  EXPECT_THAT(FlagsNamed({"gpubench", "run", "add_f32", "--size", "256Mi", "--noverify",
                          "-mode=hot", "--samples", "add", "--help", "--", "--apply"}),
              ElementsAre("size", "verify", "mode", "samples"));
  EXPECT_THAT(FlagsNamed({"gpubench", "kernels"}), IsEmpty());
  // A value that looks like a flag is the value, as the parser reads it.
  EXPECT_THAT(FlagsNamed({"gpubench", "run", "--size", "--apply"}), ElementsAre("size"));
}

TEST(ForeignFlagError, NamesTheCommandsThatTakeIt) {
  const Command& kernels = *FindCommand("kernels");
  EXPECT_EQ(ForeignFlagError(kernels, {"format", "apply"}),
            "gpubench: --apply is a flag of autotune; 'kernels' does not take it");
  EXPECT_EQ(ForeignFlagError(*FindCommand("sweep"), {"size"}),
            "gpubench: --size is a flag of run, autotune, best; 'sweep' does not take it");
  EXPECT_EQ(ForeignFlagError(*FindCommand("compare"), {"mode"}),
            "gpubench: --mode is a flag of run, sweep, autotune, best; 'compare' does not take it");
  EXPECT_EQ(ForeignFlagError(*FindCommand("autotune"), {"device_uuid"}),
            "gpubench: --device_uuid is a flag of run, sweep, compare, best, health; 'autotune' "
            "does not take it");
  EXPECT_THAT(ForeignFlagError(*FindCommand("run"), {"size", "mode", "warmup", "output_file"}),
              IsEmpty());
}

TEST(ForeignFlagError, ConnectionFlagsGoWithEveryCommandButHelp) {
  for (const Command& c : Commands()) {
    const std::string error = ForeignFlagError(c, ConnectionFlags());
    if (c.name == "help") {
      EXPECT_THAT(error, ::testing::HasSubstr("'help' does not take it"));
    } else {
      EXPECT_THAT(error, IsEmpty()) << c.name;
    }
  }
}

}  // namespace
}  // namespace gpubench::client
