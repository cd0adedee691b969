// `gpubench compare`: the seed article's comparison (client/compare.h), one sweep per mode.
#include "client/compare.h"

#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/commands/options.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

ABSL_FLAG(std::string, dtypes, "f32,f16", "compare: comma-separated dtypes (f32,f16,bf16).");
ABSL_FLAG(std::string, modes, "cold,hot", "compare: comma-separated cache modes.");

namespace gpubench::client {

int Compare(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  std::vector<std::string> dtypes, modes, sizes;
  SplitList("dtypes", absl::GetFlag(FLAGS_dtypes), &dtypes);
  for (const std::string& d : dtypes) {
    if (!IsAddDtype(d)) {
      std::cerr << "gpubench: --dtypes: '" << d << "' is not f32, f16 or bf16\n";
      return kExitUsage;
    }
  }
  SplitList("modes", absl::GetFlag(FLAGS_modes), &modes);
  const std::string size_text =
      absl::GetFlag(FLAGS_sizes).empty() ? "1Mi,16Mi,256Mi" : absl::GetFlag(FLAGS_sizes);
  SplitList("sizes", size_text, &sizes);
  v1::RunSweepRequest request;
  if (!AddSizes(sizes, &request)) return kExitUsage;
  v1::ListKernelsResponse catalog;
  if (grpc::Status st = ListCatalog(stub, &catalog); !st.ok())
    return ReportRpcError("ListKernels", st);
  for (const std::string& k : CompareKernels(catalog, dtypes)) request.add_kernels(k);
  if (request.kernels_size() == 0) {
    std::cerr << "gpubench: compare: no available kernel for --dtypes="
              << absl::GetFlag(FLAGS_dtypes) << "\n";
    return kExitUsage;
  }
  SweepOutcome all;
  for (const std::string& mode : modes) {
    if (!FillSweepCommon(&request, mode)) return kExitUsage;
    SweepOutcome one = CollectSweep(stub, request, SetDeadline, absl::GetFlag(FLAGS_progress));
    all.results.insert(all.results.end(), one.results.begin(), one.results.end());
    all.errors.insert(all.errors.end(), one.errors.begin(), one.errors.end());
    if (!one.status.ok()) {
      std::cout << RenderCompare(all.results, all.errors, format);
      return ReportRpcError("RunSweep", one.status);
    }
  }
  std::cout << RenderCompare(all.results, all.errors, format);
  return all.errors.empty() ? kExitOk : kExitRunFailed;
}

}  // namespace gpubench::client
