// Command lines of gpubench and gpubench_server on Abseil flags, with the behaviour the README
// promises (Abseil 20220623's own parser exits 1 on --help and on unknown flags, and its --help
// lists no flags of a program named otherwise than its source file):
//   --help, -h, --helpfull   usage with each flag of the command and its one-line help; exit 0
//   --version                the version and git revision; exit 0
//   an unknown flag or a bad value: a message (with the closest flag names); exit 2
#ifndef GPUBENCH_COMMON_COMMAND_LINE_H_
#define GPUBENCH_COMMON_COMMAND_LINE_H_

#include <string>
#include <vector>

namespace gpubench {

struct CommandSpec {
  std::string name;                  // "run"; empty for a program without commands
  std::string synopsis;              // "gpubench run KERNEL --size N [flags]"
  std::string summary;               // one line
  std::vector<std::string> flags;    // this command's own flags (names without dashes)
};

struct ProgramSpec {
  std::string program;               // "gpubench"
  std::string description;           // a paragraph printed first in --help
  std::vector<CommandSpec> commands;  // empty: no commands; every flag is the program's
  std::vector<std::string> common_flags;  // shown under every command (connection flags, ...)
  std::string epilogue;              // printed last in the general --help (exit codes, sizes)
};

// The version line: "<program> <version> (git <revision>)".
std::string VersionLine(const std::string& program);

// The general usage text: description, every command with its summary, the common flags.
std::string ProgramUsage(const ProgramSpec& spec);
// One command's usage: synopsis, summary, its flags, then the common flags.
std::string CommandUsage(const ProgramSpec& spec, const CommandSpec& command);

// Parses argv into the program's flags (through Abseil's flag registry) and returns the
// positional arguments (argv[0] first, as absl::ParseCommandLine). Handles --help / --version /
// errors as described above, exiting the process.
std::vector<std::string> ParseCommandLineOrExit(int argc, char** argv, const ProgramSpec& spec);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_COMMAND_LINE_H_
