// Sweep: kernels x sizes x block sizes x items per thread (x devices), expanded by the engine into
// validated RunSpecs. RunSweep RPCs and scheduled plans (--schedule_plan) both come here.
#ifndef GPUBENCH_SERVER_ENGINE_SWEEP_H_
#define GPUBENCH_SERVER_ENGINE_SWEEP_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/engine.h"
#include "server/engine/run_spec.h"

namespace gpubench {

struct SweepPlan {
  std::vector<std::string> kernels;
  std::vector<int64_t> sizes;
  std::vector<int> block_sizes;       // empty: each variant's default
  std::vector<int> items_per_thread;  // empty: each variant's default
  bool all_devices = false;           // every device, instead of base's device_index / device_uuid
  // What every item shares: device, cache mode, measurement, verify, seed, profile, force. Its
  // kernel, elements, block_size and items_per_thread are ignored.
  RunRequest base;
};

// The product of `factors`, or limit + 1 as soon as it would exceed `limit` (never overflows);
// 0 when a factor is 0 or negative. Requests that multiply lists check this before building.
int64_t CountCombinations(std::initializer_list<int64_t> factors, int64_t limit);

// Expands `plan` into validated RunSpecs (device-major, then kernels, sizes, block sizes, items),
// failing as a whole on the first invalid item (its status names the item) or when it has more
// than `max_items` items. Thread-safe.
absl::StatusOr<std::vector<RunSpec>> ExpandSweep(const SweepPlan& plan, const Engine& engine,
                                                 int max_items);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_SWEEP_H_
