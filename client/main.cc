// gpubench: command-line client of gpubench_server. The commands, their flags and --help come
// from the table in client/commands/commands.cc; each command lives in client/commands/<name>.cc.
//
// Exit codes (stable, for scripts):
//   0  success (every run measured and verified)
//   1  a run failed on the server (bad kernel, verification failure, device error, ...)
//   2  usage error (bad command, flag or size; a flag of another command)
//   3  server unreachable or deadline exceeded
//   4  not authenticated (missing, unusable or invalid bearer token, or the TLS handshake
//      refused: client certificate refused or server certificate not trusted)
//   5  fleet: a result regressed against --baseline, or an output hash disagreed (SDC_SUSPECT)
// 130  interrupted (Ctrl-C); a sweep prints the results that finished first
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/commands/options.h"
#include "client/rpc_status.h"
#include "common/command_line.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

int main(int argc, char** argv) {
  using namespace gpubench::client;
  const gpubench::ProgramSpec spec = CliSpec();
  for (int i = 0; i < argc; ++i) Argv().push_back(argv[i]);
  Invocation invocation;
  invocation.args = gpubench::ParseCommandLineOrExit(argc, argv, spec);
  if (invocation.args.size() < 2) {
    std::cerr << gpubench::ProgramUsage(spec);
    return kExitUsage;
  }
  const Command* command = FindCommand(invocation.args[1]);
  if (command == nullptr) {
    std::cerr << UnknownCommandError(invocation.args[1]) << "\n";
    return kExitUsage;
  }
  // The parser accepts every program flag; a flag of another command is a usage error here.
  if (const std::string error = ForeignFlagError(*command, FlagsNamed(Argv())); !error.empty()) {
    std::cerr << error << "\n";
    return kExitUsage;
  }
  if (command->setup == Setup::kNone) return command->main(invocation);

  if (!ParseFormat(&invocation.format)) return kExitUsage;
  if ((invocation.format == Format::kNvbenchJson || invocation.format == Format::kJsonl) &&
      !command->result_formats) {
    std::cerr << "gpubench: --format=" << absl::GetFlag(FLAGS_format)
              << " is for run and sweep results\n";
    return kExitUsage;
  }
  Interrupts::Get().Start();
  if (const int token = LoadToken(); token != kExitOk) return token;
  std::unique_ptr<gpubench::v1::Benchmark::Stub> stub;
  if (command->setup == Setup::kChannel) {
    auto channel = MakeChannel(absl::GetFlag(FLAGS_target));
    if (!channel) return kExitUsage;
    stub = gpubench::v1::Benchmark::NewStub(channel);
    invocation.stub = stub.get();
  }
  return command->main(invocation);
}
