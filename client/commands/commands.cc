// The command table (commands.h) and the checks it drives.
#include "client/commands/commands.h"

#include <algorithm>
#include <iostream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/rpc_status.h"
#include "common/echo.h"
#include "common/measurement_options.h"

namespace gpubench::client {

// Each is defined in client/commands/<name>.cc.
int Kernels(const Invocation& invocation);
int Devices(const Invocation& invocation);
int Info(const Invocation& invocation);
int Run(const Invocation& invocation);
int Sweep(const Invocation& invocation);
int Autotune(const Invocation& invocation);
int Compare(const Invocation& invocation);
int Best(const Invocation& invocation);
int Fleet(const Invocation& invocation);
int Health(const Invocation& invocation);
int Contract(const Invocation& invocation);

namespace {

int Help(const Invocation& invocation);

// The own flags of a command that measures, and the flags of the option table
// (common/measurement_options.h) FillMeasurement reads, but --mode (compare has --modes instead).
std::vector<std::string> Measuring(std::vector<std::string> own) {
  for (const OptionSpec& o : kMeasurementOptions) {
    if (!o.cli_flag.empty() && o.id != OptionId::kCacheMode) own.emplace_back(o.cli_flag);
  }
  return own;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command>* const commands = new std::vector<Command>{
      {.name = "kernels",
       .synopsis = "gpubench kernels [--format table|json|csv]",
       .summary = "List the kernel catalog.",
       .flags = {"format"},
       .main = Kernels},
      {.name = "devices",
       .synopsis = "gpubench devices [--format table|json|csv]",
       .summary = "List the server's devices.",
       .flags = {"format"},
       .main = Devices},
      {.name = "info",
       .synopsis = "gpubench info [--format table|json]",
       .summary = "The server's version, git revision, backend, start time and limits "
                  "(GetServerInfo).",
       .flags = {"format"},
       .main = Info},
      {.name = "run",
       .synopsis = "gpubench run KERNEL --size N [flags] | gpubench run --source=F.cu --entry=E "
                   "--family=F --dtype=D --size N",
       .summary = "Benchmark one kernel at one size (gemm: --size N for N^3, or --m --n --k), or "
                  "a user kernel (--source, --ptx, --cubin).",
       .flags =
           Measuring({"size", "m", "n", "k", "device", "device_uuid", "peer_device", "block_size",
                      "items_per_thread", "verify", "seed", "profile", "histogram", "force",
                      "format", "output_file", "mode", "source", "ptx", "cubin", "entry", "family",
                      "dtype", "define", "maxrregcount", "fast_math", "line_info",
                      "dynamic_shared_bytes", "grid", "compare"}),
       .main = Run,
       .result_formats = true},
      {.name = "sweep",
       .synopsis = "gpubench sweep --kernels a,b --sizes 1Mi,16Mi [flags] | gpubench sweep "
                   "--source=F.cu --entry=E --family=F --dtype=D --sizes 1Mi,16Mi",
       .summary = "Benchmark kernels (or a user kernel: --source, --ptx, --cubin) x sizes x block "
                  "sizes, streaming progress; Ctrl-C prints what finished.",
       .flags = Measuring({"kernels", "sizes", "block_sizes", "items_per_thread", "device",
                           "device_uuid", "all_devices", "verify", "seed", "profile", "histogram",
                           "force", "progress", "format", "output_file", "mode", "source", "ptx",
                           "cubin", "entry", "family", "dtype", "define", "maxrregcount",
                           "fast_math", "line_info", "dynamic_shared_bytes", "grid"}),
       .main = Sweep,
       .result_formats = true},
      {.name = "autotune",
       .synopsis = "gpubench autotune KERNEL --size N [--block_sizes ...] "
                   "[--items_per_thread ...] [--apply]",
       .summary = "Measure every block size x items per thread and report the fastest.",
       .flags = Measuring({"size", "block_sizes", "items_per_thread", "device", "apply", "format",
                           "mode", "source", "ptx", "cubin"}),
       .main = Autotune},
      {.name = "compare",
       .synopsis = "gpubench compare [--sizes 1Mi,16Mi,256Mi] [--dtypes f32,f16] "
                   "[--modes cold,hot]",
       .summary = "Seed variants vs tuned, CUB and the copy ceiling, one sweep per mode.",
       .flags = Measuring({"sizes", "dtypes", "modes", "device", "device_uuid", "verify", "seed",
                           "progress", "format"}),
       .main = Compare},
      {.name = "best",
       .synopsis = "gpubench best add --dtype f16 --size 16Mi [--mode hot]",
       .summary = "Measure every add variant of a dtype at one size and print the fastest.",
       .flags = Measuring({"dtype", "size", "device", "device_uuid", "verify", "seed", "progress",
                           "format", "mode"}),
       .main = Best},
      {.name = "fleet",
       .synopsis = "gpubench fleet --plan plan.json (--targets|--targets_file|--dns) ... [flags]",
       .summary = "Run one plan on many servers at once; outliers and regressions against a "
                  "baseline.",
       .flags = {"plan", "targets", "targets_file", "dns", "parallelism", "target_timeout",
                 "retries", "max_target_rows", "max_target_bytes", "max_target_errors", "baseline",
                 "regression_threshold", "outlier_threshold", "report_file", "progress", "format"},
       .main = Fleet,
       .setup = Setup::kCredentials},
      {.name = "health",
       .synopsis = "gpubench health [--device N | --device_uuid U] [--format table|json]",
       .summary = "Each GPU's health verdict with its evidence; exit 0 PASS, 1 DEGRADED or FAIL, "
                  "2 UNKNOWN.",
       .flags = {"device", "device_uuid", "format"},
       .main = Health},
      {.name = "contract",
       .synopsis = "gpubench contract FAMILY --dtype=D [--entry NAME] [--format table|json] "
                   "[--output_file F]",
       .summary = "The C++ signature and an example of a user kernel of FAMILY at dtype D.",
       .flags = {"dtype", "entry", "format", "output_file"},
       .main = Contract},
      {.name = "help",
       .synopsis = "gpubench help [COMMAND]",
       .summary = "This list, or one command's flags.",
       .flags = {},
       .main = Help,
       .setup = Setup::kNone},
  };
  return *commands;
}

const Command* FindCommand(absl::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const std::vector<std::string>& ConnectionFlags() {
  static const std::vector<std::string>* const flags =
      new std::vector<std::string>{"target",     "tls",
                                   "ca_cert",    "client_cert",
                                   "client_key", "tls_server_name",
                                   "token_file", "rpc_timeout_seconds"};
  return *flags;
}

ProgramSpec CliSpec() {
  ProgramSpec spec;
  spec.program = "gpubench";
  spec.description = "gpubench: client of gpubench_server.";
  for (const Command& c : Commands()) {
    spec.commands.push_back({c.name, c.synopsis, c.summary, c.flags});
  }
  spec.common_flags = ConnectionFlags();
  spec.epilogue =
      "Sizes: 1000, 16K/16M/1G (powers of 1000), 16Ki/256Mi/1Gi (powers of 1024); case matters.\n"
      "Exit codes: 0 ok, 1 a run failed, 2 usage error, 3 server unreachable or deadline,\n"
      "4 not authenticated (token or TLS handshake), 5 fleet regression against --baseline,\n"
      "130 interrupted.";
  return spec;
}

std::vector<std::string> FlagsNamed(const std::vector<std::string>& argv) {
  std::vector<std::string> named;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) name.resize(eq);
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no")) {
      const absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        named.push_back(name.substr(2));
        continue;
      }
    }
    if (flag == nullptr) continue;                   // --help, --version (the parser handled them)
    if (!has_value && !flag->IsOfType<bool>()) ++i;  // "--size 256Mi": the value is next
    named.push_back(name);
  }
  return named;
}

std::string ForeignFlagError(const Command& command, const std::vector<std::string>& named) {
  const auto takes = [](const Command& c, const std::string& flag) {
    const auto has = [&flag](const std::vector<std::string>& list) {
      return std::find(list.begin(), list.end(), flag) != list.end();
    };
    return has(c.flags) || (c.setup != Setup::kNone && has(ConnectionFlags()));
  };
  for (const std::string& flag : named) {
    if (takes(command, flag)) continue;
    std::vector<std::string> takers;
    for (const Command& c : Commands()) {
      if (takes(c, flag)) takers.push_back(c.name);
    }
    if (takers.empty())
      return absl::StrCat("gpubench: '", command.name, "' does not take --", flag);
    return absl::StrCat("gpubench: --", flag, " is a flag of ", absl::StrJoin(takers, ", "), "; '",
                        command.name, "' does not take it");
  }
  return "";
}

std::string UnknownCommandError(absl::string_view name) {
  std::vector<std::string> names;
  for (const Command& c : Commands()) names.push_back(c.name);
  return absl::StrCat("gpubench: unknown command '", EchoForMessage(std::string(name)),
                      "'; commands: ", absl::StrJoin(names, ", "));
}

namespace {

// `gpubench help [COMMAND]`: a command that is not in the table prints the list and exits 2.
int Help(const Invocation& invocation) {
  const ProgramSpec spec = CliSpec();
  if (invocation.args.size() > 2) {
    for (const CommandSpec& c : spec.commands) {
      if (c.name == invocation.args[2]) {
        std::cout << CommandUsage(spec, c);
        return kExitOk;
      }
    }
    std::cout << ProgramUsage(spec);
    return kExitUsage;
  }
  std::cout << ProgramUsage(spec);
  return kExitOk;
}

}  // namespace
}  // namespace gpubench::client
