// UserKernel.compare: the family's built-ins measured beside a user kernel, in the same request,
// on the same device, at the same size, mode and measurement options, the way user kernels are
// measured (every timed sample one launch from poisoned outputs, some of them verified), so that
// the ratios compare like with like (docs/user-kernels.md).
#ifndef GPUBENCH_SERVER_ENGINE_COMPARE_USER_KERNEL_H_
#define GPUBENCH_SERVER_ENGINE_COMPARE_USER_KERNEL_H_

#include <vector>

#include "absl/time/time.h"
#include "kernels/catalog.h"
#include "server/engine/engine.h"
#include "server/engine/run_op.h"

namespace gpubench {

// What a user kernel of `family` at `dtype` is compared with: every registered variant of that
// family and dtype, vendor baselines (provenance "baseline: ...") apart; test variants (names
// "test_...") left out. Registration order. Thread-safe.
struct ComparisonCandidates {
  std::vector<const KernelVariant*> builtins;
  std::vector<const KernelVariant*> baselines;
};
ComparisonCandidates CandidatesFor(const KernelFamily& family, DType dtype);

// `done`, wrapped for a user kernel's run `user` that asked for comparisons: after a result
// (errors pass through unchanged), measures the candidates one after another on `engine` with
// `deadline`, fills result.user_kernel->comparisons (the fastest built-in and the first baseline;
// what could not be measured is a note), then calls `done` once.
RunDoneFn ComparingUserKernel(Engine& engine, const RunSpec& user, absl::Time deadline,
                              RunDoneFn done);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_COMPARE_USER_KERNEL_H_
