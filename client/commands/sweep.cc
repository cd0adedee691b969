// `gpubench sweep`: kernels x sizes x block sizes, streamed (RunSweep); Ctrl-C prints what
// finished. With --source, --ptx or --cubin: one user kernel x sizes x block sizes.
#include <grpcpp/grpcpp.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/flags.h"
#include "client/commands/options.h"
#include "client/commands/user_kernel.h"
#include "client/compare.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

ABSL_FLAG(std::string, kernels, "", "sweep: comma-separated kernel names.");
ABSL_FLAG(bool, all_devices, false, "sweep: run every item on every device, concurrently.");

namespace gpubench::client {

namespace {

// --format=jsonl's output: stdout or --output_file, flushed after every line so a reader sees
// each item as it finishes. ok() is false once a write failed.
class LineSink {
 public:
  bool Open(const std::string& path) {
    path_ = path;
    if (path.empty()) return true;
    file_.open(path, std::ios::binary | std::ios::trunc);
    if (!file_) {
      std::cerr << "gpubench: cannot write --output_file " << path << "\n";
      return false;
    }
    return true;
  }
  void Write(const std::string& line) {
    std::ostream& out = path_.empty() ? std::cout : file_;
    out << line << std::flush;
    if (!out && ok_) {
      std::cerr << "gpubench: cannot write " << (path_.empty() ? "stdout" : path_) << "\n";
      ok_ = false;
    }
  }
  bool ok() const { return ok_; }

 private:
  std::string path_;
  std::ofstream file_;
  bool ok_ = true;
};

}  // namespace

int Sweep(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  v1::RunSweepRequest request;
  std::vector<std::string> kernels, sizes;
  const bool user = UserKernelRequested();
  if (user && !absl::GetFlag(FLAGS_kernels).empty()) {
    std::cerr << "gpubench: a user kernel (--source, --ptx or --cubin) is the sweep's one kernel: "
                 "leave out --kernels\n";
    return kExitUsage;
  }
  if (!user && !SplitList("kernels", absl::GetFlag(FLAGS_kernels), &kernels)) return kExitUsage;
  if (!SplitList("sizes", absl::GetFlag(FLAGS_sizes), &sizes)) return kExitUsage;
  for (const auto& k : kernels) request.add_kernels(k);
  if (!AddSizes(sizes, &request)) return kExitUsage;
  std::vector<int> block_sizes;
  if (!ParseBlockSizes(&block_sizes)) return kExitUsage;
  for (int b : block_sizes) request.add_block_sizes(b);
  std::vector<int> items;
  if (!ParseItemsPerThread(&items)) return kExitUsage;
  for (int i : items) request.add_items_per_thread(i);
  // The block sizes and items per thread stay lists (the server crosses them with the sizes and
  // puts each in the user kernel's launch); the launch itself gets the first, or 256 threads.
  if (user && !FillUserKernel(block_sizes.empty() ? 0 : block_sizes[0],
                              items.empty() ? 0 : items[0], request.mutable_user_kernel())) {
    return kExitUsage;
  }
  request.set_all_devices(absl::GetFlag(FLAGS_all_devices));
  if (!FillSweepCommon(&request, absl::GetFlag(FLAGS_mode))) return kExitUsage;
  // A user kernel is always verified with a fresh seed: the server refuses either flag's change,
  // so the defaults are not sent.
  if (user && absl::GetFlag(FLAGS_verify)) request.clear_verify();
  request.set_profile(absl::GetFlag(FLAGS_profile));
  request.set_force(absl::GetFlag(FLAGS_force));
  if (format == Format::kNvbenchJson) request.mutable_measurement()->set_keep_samples(true);
  // jsonl: each item's line is written (and flushed) as it arrives.
  LineSink lines;
  if (format == Format::kJsonl && !lines.Open(absl::GetFlag(FLAGS_output_file))) return kExitUsage;
  // Ctrl-C cancels the call; what finished is still printed (then exit 130).
  const SweepOutcome sweep = CollectSweep(
      stub, request,
      [](grpc::ClientContext* c) {
        SetDeadline(c);
        Interrupts::Get().SetCall(c);
      },
      absl::GetFlag(FLAGS_progress),
      format == Format::kJsonl
          ? std::function<void(const v1::RunSweepResponse&)>(
                [&lines](const v1::RunSweepResponse& e) { lines.Write(JsonLine(e)); })
          : nullptr);
  Interrupts::Get().SetCall(nullptr);
  bool written = true;
  if (format == Format::kJsonl) {
    if (!sweep.status.ok()) {
      lines.Write(
          JsonErrorLine(static_cast<int>(sweep.status.error_code()), sweep.status.error_message()));
    }
    written = lines.ok();
  } else if (format == Format::kNvbenchJson) {
    written = EmitNvbench(stub, sweep.results, sweep.errors, request.measurement().cache_mode());
  } else {
    written = Emit(RenderResults(sweep.results, sweep.errors, format));
  }
  if (Interrupts::Get().interrupted()) {
    std::cerr << "gpubench: interrupted; printed the " << sweep.results.size()
              << " finished result(s)\n";
    return kExitInterrupted;
  }
  if (format == Format::kNvbenchJson) {
    for (const auto& e : sweep.errors)
      std::cerr << "gpubench: error in item " << e.index() << ": " << e.message() << "\n";
  }
  if (!sweep.status.ok()) return ReportRpcError("RunSweep", sweep.status);
  if (!written) return kExitUsage;
  return sweep.errors.empty() ? kExitOk : kExitRunFailed;
}

}  // namespace gpubench::client
