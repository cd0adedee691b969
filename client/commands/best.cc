// `gpubench best add --dtype=f16 --size=16Mi [--mode=hot]`: measures every candidate
// (client/compare.h BestCandidates) at that size and mode, prints the fastest.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/commands/options.h"
#include "client/compare.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

ABSL_FLAG(std::string, dtype, "", "best: f32 | f16 | bf16.");

namespace gpubench::client {

int Best(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  const std::vector<std::string>& args = invocation.args;
  std::string op;
  int64_t elements = 0;
  if (!ParseKernelAndSize(args, "gpubench best add --dtype=f32|f16|bf16 --size N [--mode=hot]", &op,
                          &elements)) {
    return kExitUsage;
  }
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (op != "add" || !IsAddDtype(dtype)) {
    std::cerr << "gpubench: best takes the operation 'add' and --dtype f32, f16 or bf16 (got '"
              << op << "', '" << dtype << "')\n";
    return kExitUsage;
  }
  v1::ListKernelsResponse catalog;
  if (grpc::Status st = ListCatalog(stub, &catalog); !st.ok())
    return ReportRpcError("ListKernels", st);
  v1::RunSweepRequest request;
  for (const std::string& k : BestCandidates(catalog, dtype)) request.add_kernels(k);
  request.add_sizes(elements);
  if (!FillSweepCommon(&request, absl::GetFlag(FLAGS_mode))) return kExitUsage;
  const SweepOutcome sweep =
      CollectSweep(stub, request, SetDeadline, absl::GetFlag(FLAGS_progress));
  if (!sweep.status.ok()) return ReportRpcError("RunSweep", sweep.status);
  std::cout << RenderBest(sweep.results, sweep.errors, format);
  return FastestResult(sweep.results) < 0 ? kExitRunFailed : kExitOk;
}

}  // namespace gpubench::client
