// A user kernel as the engine carries it (docs/user-kernels.md): the request's plain values, the
// validated spec with the run-time KernelVariant that stands in for a catalog variant, and what
// the result says about it. No gRPC, no NVRTC, no CUDA.
#ifndef GPUBENCH_SERVER_ENGINE_USER_KERNEL_SPEC_H_
#define GPUBENCH_SERVER_ENGINE_USER_KERNEL_SPEC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/catalog.h"
#include "kernels/user_kernel.h"

namespace gpubench {

enum class UserCodeKind { kSource, kPtx, kCubin };
const char* UserCodeKindName(UserCodeKind kind);  // "source", "ptx", "cubin"

struct UserLaunchRequest {
  int block_size = 0;
  int items_per_thread = 0;  // 0: 1
  int dynamic_shared_bytes = 0;
  int64_t grid_size = 0;  // 0: covering grid
};

struct UserKernelRequest {
  UserCodeKind kind = UserCodeKind::kSource;
  std::string code = {};  // the source, the PTX text or the cubin's bytes
  std::string entry = {};
  std::string family = {};
  std::string dtype = {};
  UserCompileOptions compile = {};
  UserLaunchRequest launch = {};
  // Measure the family's built-ins beside it (SubmitRun, server/engine/compare_user_kernel.h);
  // the server's business only: it does not cross to the worker.
  bool compare = false;
};

// What the server allows (flags; ServerLimits::user_kernels).
struct UserKernelLimits {
  bool allowed = false;                       // --allow_user_kernels
  int64_t max_code_bytes = int64_t{1} << 20;  // --max_user_kernel_bytes
};

// A validated user kernel. `variant` is the run's KernelVariant (name kUserKernelName, the
// family, dtype, tolerance of the family's built-in variant, the request's launch as its
// policy); its CPU emulation computes nothing and its CUDA launcher is bound in the worker,
// which also loads the image (server/worker/user_kernel_runtime.h). Shared by the RunSpec copies
// of one run: the variant's address stays valid as long as any copy lives.
struct UserKernelSpec {
  UserKernelRequest request = {};
  UserKernelContract contract = {};
  KernelVariant variant = {};
  std::string code_sha256 = {};  // hex
};

// Validates `request` (family and dtype with a contract, entry name, compile options, code size
// and the source checks, launch bounds) and builds the spec. INVALID_ARGUMENT / FAILED_PRECONDITION
// naming the field. Used by the server (resolve) and again by the worker on what it receives.
absl::StatusOr<std::shared_ptr<const UserKernelSpec>> MakeUserKernelSpec(UserKernelRequest request,
                                                                         int64_t max_code_bytes);

// A built-in measured beside a user kernel (proto UserKernelComparison).
struct UserKernelComparison {
  std::string role = {};    // "best_builtin" or "vendor_baseline"
  std::string kernel = {};  // empty: none measured (note says why)
  double median_seconds = 0;
  std::string metric = {};
  double value = 0;
  double speedup = 0;  // its median / the user kernel's
  int candidates = 0;  // best_builtin: built-ins measured
  std::string note = {};
};

// The figures behind the integrity checks that measure something (proto UserKernelIntegrity);
// UserKernelReport::integrity_checks names every check applied, in words. Filled by
// server/engine/user_kernel_checks.h.
struct UserKernelIntegrity {
  // launch_count: the GPU operations in each timed sample's window.
  bool launch_count_applied = false;
  std::string launch_count_source = {};       // WindowSourceName; empty when not applied
  std::string launch_count_unavailable = {};  // why not applied
  int64_t windows_checked = 0;                // windows with a complete record
  int64_t windows_unrecorded = 0;             // windows without one (not judged)
  // Of the checked windows, those traced only for the audit (CUDA-event timer), outside the
  // statistics; 0 where the timer records every sample.
  int64_t windows_outside_statistics = 0;
  int expected_operations = 0;                // per window
  int64_t foreign_kernels = 0;                // over every checked window
  // timer_cross_check: the run's timer against the kernels' own durations, medians over the
  // same kept samples.
  bool timer_cross_check_applied = false;  // false: not applied, or the timer is the durations
  std::string timer_cross_check = {};      // what was compared, in words
  double timer_median_seconds = 0;
  double kernel_median_seconds = 0;
  double timer_ratio = 0;      // timer / kernel
  double timer_tolerance = 0;  // refused below kernel x (1 - this) - the absolute one
  double timer_tolerance_seconds = 0;
  // physical_floor: the largest of the three floors, and which it was.
  double floor_seconds = 0;
  std::string floor_bound = {};  // "dram", "l2", "flop"; empty: no floor known
  double dram_floor_seconds = 0;
  double l2_floor_seconds = 0;
  double flop_floor_seconds = 0;
};

// What a user kernel's result adds (RunResult::user_kernel; proto UserKernelReport).
struct UserKernelReport {
  std::string kind = {};
  std::string entry = {};
  std::string lowered_name = {};
  std::string code_sha256 = {};
  std::string architecture = {};
  bool compile_cache_hit = false;
  double compile_seconds = 0;
  bool signature_checked = false;
  std::string signature_note = {};
  std::vector<std::string> integrity_checks = {};
  UserKernelIntegrity integrity = {};
  std::string compile_log = {};
  uint64_t seed = 0;
  std::vector<UserKernelComparison> comparisons = {};  // filled by the server, after the worker
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_USER_KERNEL_SPEC_H_
