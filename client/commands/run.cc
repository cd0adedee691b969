// `gpubench run KERNEL --size N`: one kernel at one size (RunBenchmark).
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/commands/options.h"
#include "client/commands/user_kernel.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "common/sizes.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

ABSL_FLAG(int64_t, m, 0, "run (gemm): rows of A and D (0 = --size).");
ABSL_FLAG(int64_t, n, 0, "run (gemm): columns of D, rows of B (0 = --size).");
ABSL_FLAG(int64_t, k, 0, "run (gemm): the inner dimension (0 = --size).");
ABSL_FLAG(int, peer_device, -1,
          "run: the second device of a peer copy (copy_peer_*); -1 = the next device.");
ABSL_FLAG(int, block_size, 0, "run: threads per block (0 = the kernel's default).");

namespace gpubench::client {

int Run(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  const std::vector<std::string>& args = invocation.args;
  v1::RunBenchmarkRequest request;
  std::string kernel;
  int64_t elements = 0;
  // gemm takes --m/--n/--k (each defaulting to --size, which may then be omitted).
  const int64_t m = absl::GetFlag(FLAGS_m), n = absl::GetFlag(FLAGS_n), k = absl::GetFlag(FLAGS_k);
  const bool shaped = m != 0 || n != 0 || k != 0;
  const bool user = UserKernelRequested();
  if (!user && CompareRequested()) {
    std::cerr << "gpubench: --compare compares a user kernel (--source, --ptx or --cubin) with "
                 "the built-ins; for catalog kernels use gpubench sweep or gpubench best\n";
    return kExitUsage;
  }
  if (user) {
    absl::StatusOr<int64_t> size = ParseElementCount(absl::GetFlag(FLAGS_size));
    if (args.size() != 2 || !size.ok()) {
      std::cerr << "gpubench: usage: gpubench run --source=F.cu --entry=E --family=F --dtype=D "
                   "--size N (no KERNEL)"
                << (size.ok() ? "" : absl::StrCat("; --size: ", size.status().message())) << "\n";
      return kExitUsage;
    }
    elements = *size;
  } else if (shaped && absl::GetFlag(FLAGS_size).empty() && args.size() == 3) {
    kernel = args[2];
  } else if (!ParseKernelAndSize(args, "gpubench run KERNEL --size N [--m M --n N --k K] [flags]",
                                 &kernel, &elements)) {
    return kExitUsage;
  }
  request.set_kernel(kernel);
  request.set_elements(elements);
  if (shaped) {
    request.mutable_shape()->set_m(m);
    request.mutable_shape()->set_n(n);
    request.mutable_shape()->set_k(k);
  }
  request.set_device_index(absl::GetFlag(FLAGS_device));
  request.set_device_uuid(absl::GetFlag(FLAGS_device_uuid));
  if (absl::GetFlag(FLAGS_peer_device) >= 0) {
    request.set_peer_device_index(absl::GetFlag(FLAGS_peer_device));
  }
  std::vector<int> items;
  if (!ParseItemsPerThread(&items)) return kExitUsage;
  if (items.size() > 1) {
    std::cerr << "gpubench: run takes one --items_per_thread value (sweep takes a list)\n";
    return kExitUsage;
  }
  if (user) {
    if (!FillUserKernel(absl::GetFlag(FLAGS_block_size), items.empty() ? 0 : items[0],
                        request.mutable_user_kernel())) {
      return kExitUsage;
    }
  } else {
    request.set_block_size(absl::GetFlag(FLAGS_block_size));
    if (!items.empty()) request.set_items_per_thread(items[0]);
  }
  if (!FillMeasurement(request.mutable_measurement(), absl::GetFlag(FLAGS_mode))) return kExitUsage;
  // A user kernel is always verified with a fresh seed: the server refuses either flag's change.
  if (!user || !absl::GetFlag(FLAGS_verify)) request.set_verify(absl::GetFlag(FLAGS_verify));
  if (absl::GetFlag(FLAGS_seed) >= 0) request.set_seed(absl::GetFlag(FLAGS_seed));
  request.set_profile(absl::GetFlag(FLAGS_profile));
  request.set_force(absl::GetFlag(FLAGS_force));
  // nvbench's quartiles and sample-times file need the samples.
  if (format == Format::kNvbenchJson) request.mutable_measurement()->set_keep_samples(true);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::RunBenchmarkResponse response;
  grpc::Status status = stub.RunBenchmark(&context, request, &response);
  if (!status.ok()) {
    if (format == Format::kJsonl) {
      Emit(JsonErrorLine(static_cast<int>(status.error_code()), status.error_message()));
    }
    return ReportRpcError("RunBenchmark", status);
  }
  std::string text;
  if (format == Format::kTable) {
    text = RenderResultDetail(response.result());
    if (absl::GetFlag(FLAGS_histogram)) text += "\n" + RenderHistogram(response.result());
  } else if (format == Format::kJson) {
    text = ToJson(response.result());
  } else if (format == Format::kNvbenchJson) {
    return EmitNvbench(stub, {response.result()}, {}, v1::COLD) ? kExitOk : kExitUsage;
  } else if (format == Format::kJsonl) {
    v1::RunSweepResponse event;
    *event.mutable_result() = response.result();
    text = JsonLine(event);
  } else {
    text = RenderResults({response.result()}, {}, format);
  }
  if (format != Format::kTable && absl::GetFlag(FLAGS_histogram)) {
    std::cerr << RenderHistogram(response.result());
  }
  return Emit(text) ? kExitOk : kExitUsage;
}

}  // namespace gpubench::client
