// The gpubench commands: one file per command (client/commands/<name>.cc) and one table
// (commands.cc) that drives --help, dispatch and which flags each command takes.
//
// Why Abseil flags and not CLI11: the flags, their value parsing, their error messages and the
// --help layout are shared with gpubench_server and gpubench_worker (common/command_line.h), and
// every documented example and test depends on them; CLI11 would add a dependency (and an image
// package) and change messages and exit codes that scripts rely on. Scoping needs only one
// check after parsing: the flags named on the command line (FlagsNamed, by the same tokenising
// rules and the flags' types from absl::flags reflection) against the command's list.
//
// Adding a command: write client/commands/<name>.cc (its function and its own ABSL_FLAGs), and
// add its declaration and its table line in commands.cc. CMake picks the file up by a glob.
#ifndef GPUBENCH_CLIENT_COMMANDS_COMMANDS_H_
#define GPUBENCH_CLIENT_COMMANDS_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/output.h"
#include "common/command_line.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

// What main sets up before a command runs.
enum class Setup {
  kChannel,      // --format, the token and a stub to --target (most commands)
  kCredentials,  // --format and the token; the command makes its own channels (fleet)
  kNone,         // nothing (help)
};

// What a command's function gets.
struct Invocation {
  std::vector<std::string> args;        // positional: argv[0], the command, its operands
  Format format = Format::kTable;       // parsed --format (not for Setup::kNone)
  v1::Benchmark::Stub* stub = nullptr;  // the --target server (Setup::kChannel only)
};

struct Command {
  std::string name;
  std::string synopsis;  // "gpubench run KERNEL --size N [flags]"
  std::string summary;   // one line, in `gpubench --help`
  // The command's own flags; the connection flags come with every Setup but kNone.
  std::vector<std::string> flags;
  int (*main)(const Invocation&) = nullptr;  // the exit code
  Setup setup = Setup::kChannel;
  bool result_formats = false;  // takes --format=jsonl and nvbench-json (run and sweep results)
};

// The commands, in --help's order.
const std::vector<Command>& Commands();
const Command* FindCommand(absl::string_view name);
// --target, TLS, --token_file, --rpc_timeout_seconds: every command but help takes them.
const std::vector<std::string>& ConnectionFlags();
// The table as common/command_line.h's spec, for parsing and --help.
ProgramSpec CliSpec();

// The program flags named in `argv` (argv[0] first; --noverify names verify), tokenised as
// ParseCommandLineOrExit does. Call it after that succeeded: then every flag named exists.
std::vector<std::string> FlagsNamed(const std::vector<std::string>& argv);
// Empty, or the message (one line) for the first flag of `named` that `command` does not take:
// "gpubench: --apply is a flag of autotune; 'kernels' does not take it".
std::string ForeignFlagError(const Command& command, const std::vector<std::string>& named);
// The message (one line) for a command that is not in the table.
std::string UnknownCommandError(absl::string_view name);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_COMMANDS_COMMANDS_H_
