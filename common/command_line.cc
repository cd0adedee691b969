#include "common/command_line.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/build_info.h"
#include "common/echo.h"

namespace gpubench {
namespace {

constexpr int kExitUsage = 2;

// The program's own flags: everything registered except Abseil's built-in ones.
absl::CommandLineFlag* FindProgramFlag(absl::string_view name) {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr || flag->IsRetired() || absl::StrContains(flag->Filename(), "absl/")) {
    return nullptr;
  }
  return flag;
}

std::vector<std::string> ProgramFlagNames() {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (FindProgramFlag(name) != nullptr) names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string FlagLines(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    const absl::CommandLineFlag* flag = FindProgramFlag(name);
    if (flag == nullptr) continue;
    std::string default_value = flag->DefaultValue();
    if (flag->IsOfType<std::string>()) default_value = absl::StrCat("\"", default_value, "\"");
    absl::StrAppend(&out, "  --", name, "  ", flag->Help(), " (default: ", default_value, ")\n");
  }
  return out;
}

[[noreturn]] void UsageError(const ProgramSpec& spec, const std::string& message) {
  std::cerr << spec.program << ": " << message << "; see " << spec.program << " --help\n";
  std::exit(kExitUsage);
}

const CommandSpec* FindCommand(const ProgramSpec& spec, absl::string_view name) {
  for (const CommandSpec& c : spec.commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

std::string VersionLine(const std::string& program) {
  return absl::StrCat(program, " ", kGpubenchVersion, " (git ", kGpubenchGitRevision, ")");
}

std::string ProgramUsage(const ProgramSpec& spec) {
  std::string out = absl::StrCat(spec.description, "\n");
  if (spec.commands.empty()) {
    absl::StrAppend(&out, "\nFlags:\n", FlagLines(ProgramFlagNames()));
  } else {
    absl::StrAppend(&out, "\nCommands (", spec.program, " COMMAND --help shows its flags):\n");
    for (const CommandSpec& c : spec.commands) {
      absl::StrAppend(&out, "  ", c.name, std::string(c.name.size() < 10 ? 10 - c.name.size() : 1, ' '),
                      c.summary, "\n");
    }
    absl::StrAppend(&out, "\nFlags of every command:\n", FlagLines(spec.common_flags));
  }
  absl::StrAppend(&out, "  --help  this text; --version  the version\n");
  if (!spec.epilogue.empty()) absl::StrAppend(&out, "\n", spec.epilogue, "\n");
  return out;
}

std::string CommandUsage(const ProgramSpec& spec, const CommandSpec& command) {
  std::string out = absl::StrCat("usage: ", command.synopsis, "\n", command.summary, "\n");
  if (!command.flags.empty()) absl::StrAppend(&out, "\nFlags:\n", FlagLines(command.flags));
  absl::StrAppend(&out, "\nFlags of every command:\n", FlagLines(spec.common_flags));
  return out;
}

std::vector<std::string> ParseCommandLineOrExit(int argc, char** argv, const ProgramSpec& spec) {
  std::vector<std::string> positional = {argc > 0 ? argv[0] : spec.program};
  bool help = false, version = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional.emplace_back(argv[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    const size_t eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (name == "help" || name == "h" || name == "helpfull" || name == "helpshort" || name == "?") {
      help = true;
      continue;
    }
    if (name == "version") {
      version = true;
      continue;
    }
    absl::CommandLineFlag* flag = FindProgramFlag(name);
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no")) {
      // --noverify: a boolean flag set to false.
      absl::CommandLineFlag* negated = FindProgramFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        std::string error;
        negated->ParseFrom("false", &error);
        continue;
      }
    }
    if (flag == nullptr) {
      const std::vector<std::string> closest =
          ClosestNames(name, ProgramFlagNames(), 3);
      UsageError(spec, absl::StrCat(
                           "unknown flag --", EchoForMessage(name),
                           closest.empty() ? ""
                                           : absl::StrCat(" (did you mean --",
                                                          absl::StrJoin(closest, ", --"), "?)")));
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];  // "--size 256Mi"
      } else {
        UsageError(spec, absl::StrCat("flag --", name, " needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      UsageError(spec, absl::StrCat("--", name, "=", EchoForMessage(value), ": ", error));
    }
  }
  if (version) {
    std::cout << VersionLine(spec.program) << "\n";
    std::exit(0);
  }
  if (help) {
    // "gpubench run --help": that command's flags; otherwise the whole program.
    const CommandSpec* command =
        positional.size() > 1 ? FindCommand(spec, positional[1]) : nullptr;
    if (command == nullptr && positional.size() > 2 && positional[1] == "help") {
      command = FindCommand(spec, positional[2]);
    }
    std::cout << (command != nullptr ? CommandUsage(spec, *command) : ProgramUsage(spec));
    std::exit(0);
  }
  return positional;
}

}  // namespace gpubench
