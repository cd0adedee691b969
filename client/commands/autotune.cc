// `gpubench autotune KERNEL --size N`: every block size x items per thread (Autotune).
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/commands/options.h"
#include "client/commands/user_kernel.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "common/sizes.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

ABSL_FLAG(bool, apply, false, "autotune: make the fastest block size the server's default.");

namespace gpubench::client {

int Autotune(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  const std::vector<std::string>& args = invocation.args;
  v1::AutotuneRequest request;
  std::string kernel;
  int64_t elements = 0;
  std::vector<int> blocks, items;
  if (UserKernelRequested()) {
    // Autotune picks a catalog kernel's default launch (--apply makes it the server's); a user
    // kernel has no default to set, and its block sizes are a sweep's items.
    std::cerr << "gpubench: autotune tunes catalog kernels (its --apply sets a kernel's default "
                 "launch on the server); for a user kernel, sweep its block sizes: gpubench sweep "
                 "--source=F.cu --entry=E --family=F --dtype=D --sizes N --block_sizes "
                 "64,128,256,512\n";
    return kExitUsage;
  }
  if (!ParseKernelAndSize(args,
                          "gpubench autotune KERNEL --size N [--block_sizes ...] "
                          "[--items_per_thread ...] [--apply]",
                          &kernel, &elements) ||
      !ParseBlockSizes(&blocks) || !ParseItemsPerThread(&items)) {
    return kExitUsage;
  }
  request.set_kernel(kernel);
  request.set_elements(elements);
  request.set_device_index(absl::GetFlag(FLAGS_device));
  for (int b : blocks) request.add_block_sizes(b);
  for (int i : items) request.add_items_per_thread(i);
  if (!FillMeasurement(request.mutable_measurement(), absl::GetFlag(FLAGS_mode))) return kExitUsage;
  request.set_apply(absl::GetFlag(FLAGS_apply));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::AutotuneResponse response;
  grpc::Status status = stub.Autotune(&context, request, &response);
  if (!status.ok()) return ReportRpcError("Autotune", status);
  if (format == Format::kJson) {
    std::cout << ToJson(response);
    return kExitOk;
  }
  std::cout << (format == Format::kCsv
                    ? "block_size,items_per_thread,median_seconds,bandwidth_bytes_per_second,"
                      "relative_noise,theoretical_occupancy\n"
                    : "block   items  median        bandwidth     noise   occupancy\n");
  for (const auto& row : response.rows()) {
    const bool best = row.block_size() == response.best_block_size() &&
                      row.items_per_thread() == response.best_items_per_thread();
    if (format == Format::kCsv) {
      // No occupancy (CPU backend): an empty field, "n/a" in the table, as `run` shows it.
      std::cout << absl::StrFormat(
          "%d,%d,%.9g,%.6g,%.6g,%s\n", row.block_size(), row.items_per_thread(),
          row.median_seconds(), row.bandwidth_bytes_per_second(), row.relative_noise(),
          row.has_theoretical_occupancy() ? absl::StrFormat("%.4g", row.theoretical_occupancy())
                                          : "");
    } else {
      std::cout << absl::StrFormat(
          "%-7d %-6d %-13s %-13s %5.2f%%  %6s%s\n", row.block_size(), row.items_per_thread(),
          FormatSeconds(row.median_seconds()),
          FormatBytesPerSecond(row.bandwidth_bytes_per_second()), 100 * row.relative_noise(),
          row.has_theoretical_occupancy()
              ? absl::StrFormat("%.1f%%", 100 * row.theoretical_occupancy())
              : "n/a",
          best ? "  <- best" : "");
    }
  }
  for (const std::string& why : response.skipped()) std::cerr << "skipped: " << why << "\n";
  if (format == Format::kTable) {
    std::cout << absl::StrFormat(
        "\nbest for %s on device %d: block %d x %d items per thread "
        "(%.2fx the catalog default)%s\n",
        response.kernel(), response.device_index(), response.best_block_size(),
        response.best_items_per_thread(), response.speedup_over_catalog_default(),
        response.applied() ? "; now this server's default" : "");
  }
  return kExitOk;
}

}  // namespace gpubench::client
