// `gpubench contract FAMILY --dtype=D`: the C++ signature a user kernel of that family must have
// and an example kernel (GetKernelContract); and the user-kernel flags `run` takes.
#include <grpcpp/grpcpp.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/commands/options.h"
#include "client/commands/user_kernel.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

ABSL_DECLARE_FLAG(std::string, dtype);  // best.cc: one flag for both commands

ABSL_FLAG(std::string, source, "",
          "run, sweep: a CUDA C++ file to compile with NVRTC in the device's user-kernel worker "
          "and run as a user kernel (docs/user-kernels.md), in place of KERNEL (run) or the "
          "kernel list (sweep); autotune refuses it (sweep its block sizes instead).");
ABSL_FLAG(std::string, ptx, "",
          "run, sweep: a PTX file to run as a user kernel (signature not checked).");
ABSL_FLAG(std::string, cubin, "",
          "run, sweep: a cubin file to run as a user kernel (signature not checked).");
ABSL_FLAG(std::string, entry, "",
          "run, sweep: the user kernel's __global__ function (contract: its name in the "
          "example).");
ABSL_FLAG(std::string, family, "", "run, sweep: the family the user kernel implements.");
ABSL_FLAG(std::string, define, "",
          "run, sweep: macros for the user kernel's compile, comma-separated NAME or "
          "NAME=VALUE.");
ABSL_FLAG(int, maxrregcount, 0,
          "run, sweep: the user kernel's register limit (0 = none; 16..255).");
ABSL_FLAG(bool, fast_math, false, "run, sweep: compile the user kernel with --use_fast_math.");
ABSL_FLAG(bool, line_info, false,
          "run, sweep: compile the user kernel with line info (profilers).");
ABSL_FLAG(int, dynamic_shared_bytes, 0,
          "run, sweep: the user kernel's dynamic shared memory per block.");
ABSL_FLAG(int64_t, grid, 0, "run, sweep: the user kernel's grid (0 = ceil(n / (block x items))).");
ABSL_FLAG(bool, compare, false,
          "run: also measure the family's built-in variants of the dtype (the fastest reported) "
          "and its vendor baseline in the same request, at the same size and mode, with ratios.");

namespace gpubench::client {

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "gpubench: cannot read " << path << "\n";
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

}  // namespace

bool CompareRequested() { return absl::GetFlag(FLAGS_compare); }

bool UserKernelRequested() {
  return !absl::GetFlag(FLAGS_source).empty() || !absl::GetFlag(FLAGS_ptx).empty() ||
         !absl::GetFlag(FLAGS_cubin).empty();
}

bool FillUserKernel(int block_size, int items_per_thread, v1::UserKernel* k) {
  const std::string source = absl::GetFlag(FLAGS_source), ptx = absl::GetFlag(FLAGS_ptx),
                    cubin = absl::GetFlag(FLAGS_cubin);
  if ((!source.empty()) + (!ptx.empty()) + (!cubin.empty()) != 1) {
    std::cerr << "gpubench: give one of --source, --ptx and --cubin\n";
    return false;
  }
  std::string code;
  if (!ReadFile(!source.empty() ? source : !ptx.empty() ? ptx : cubin, &code)) return false;
  if (!source.empty()) k->set_source(code);
  if (!ptx.empty()) k->set_ptx(code);
  if (!cubin.empty()) k->set_cubin(code);
  k->set_entry(absl::GetFlag(FLAGS_entry));
  k->set_family(absl::GetFlag(FLAGS_family));
  k->set_dtype(absl::GetFlag(FLAGS_dtype));
  for (const char* missing : {"entry", "family", "dtype"}) {
    const std::string& value = std::string(missing) == "entry"    ? k->entry()
                               : std::string(missing) == "family" ? k->family()
                                                                  : k->dtype();
    if (value.empty()) {
      std::cerr << "gpubench: a user kernel needs --" << missing
                << " (see gpubench contract FAMILY --dtype=D)\n";
      return false;
    }
  }
  for (absl::string_view d :
       absl::StrSplit(absl::GetFlag(FLAGS_define), ',', absl::SkipWhitespace())) {
    k->mutable_compile()->add_defines(std::string(d));
  }
  k->mutable_compile()->set_maxrregcount(absl::GetFlag(FLAGS_maxrregcount));
  k->mutable_compile()->set_fast_math(absl::GetFlag(FLAGS_fast_math));
  k->mutable_compile()->set_line_info(absl::GetFlag(FLAGS_line_info));
  // A user kernel's launch has no catalog default: 256 threads, one item each, unless named.
  k->mutable_launch()->set_block_size(block_size > 0 ? block_size : 256);
  k->mutable_launch()->set_items_per_thread(items_per_thread);
  k->mutable_launch()->set_dynamic_shared_bytes(absl::GetFlag(FLAGS_dynamic_shared_bytes));
  k->mutable_launch()->set_grid_size(absl::GetFlag(FLAGS_grid));
  k->set_compare(absl::GetFlag(FLAGS_compare));
  return true;
}

int Contract(const Invocation& invocation) {
  const std::vector<std::string>& args = invocation.args;
  if (args.size() != 3 || absl::GetFlag(FLAGS_dtype).empty()) {
    std::cerr << "gpubench: usage: gpubench contract FAMILY --dtype=D [--entry NAME]\n";
    return kExitUsage;
  }
  v1::GetKernelContractRequest request;
  request.set_family(args[2]);
  request.set_dtype(absl::GetFlag(FLAGS_dtype));
  request.set_entry(absl::GetFlag(FLAGS_entry));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetKernelContractResponse response;
  grpc::Status status = invocation.stub->GetKernelContract(&context, request, &response);
  if (!status.ok()) return ReportRpcError("GetKernelContract", status);
  std::string text;
  if (invocation.format == Format::kJson) {
    text = ToJson(response);
  } else {
    text = "// " + response.family() + " at " + response.dtype() + "\n// " + response.signature() +
           "\n//\n// " + response.notes() + "\n\n" + response.example();
  }
  return Emit(text) ? kExitOk : kExitUsage;
}

}  // namespace gpubench::client
