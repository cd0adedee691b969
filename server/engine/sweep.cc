#include "server/engine/sweep.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/echo.h"

namespace gpubench {

int64_t CountCombinations(std::initializer_list<int64_t> factors, int64_t limit) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (f <= 0) return 0;
    if (product > limit / f) return limit + 1;  // over the limit: stop before overflowing
    product *= f;
  }
  return product;
}

absl::StatusOr<std::vector<RunSpec>> ExpandSweep(const SweepPlan& plan, const Engine& engine,
                                                 int max_items) {
  if (plan.kernels.empty() || plan.sizes.empty()) {
    return absl::InvalidArgumentError("a sweep needs at least one kernel and one size");
  }
  const int64_t count = CountCombinations(
      {static_cast<int64_t>(plan.kernels.size()), static_cast<int64_t>(plan.sizes.size()),
       std::max<int64_t>(1, plan.block_sizes.size()),
       std::max<int64_t>(1, plan.items_per_thread.size())},
      max_items);
  if (count > max_items) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the sweep has more than ", max_items,
        " items (kernels x sizes x block sizes x items per thread), this server's limit "
        "(--max_sweep_items)"));
  }
  std::vector<int> blocks = plan.block_sizes;
  if (blocks.empty()) blocks.push_back(0);
  std::vector<int> items_list = plan.items_per_thread;
  if (items_list.empty()) items_list.push_back(0);
  std::vector<int> devices = {plan.base.device_index};
  if (plan.all_devices) {
    devices.clear();
    for (int d = 0; d < engine.backend().device_count(); ++d) devices.push_back(d);
  }
  if (CountCombinations({count, static_cast<int64_t>(devices.size())}, max_items) > max_items) {
    return absl::InvalidArgumentError(absl::StrCat("the sweep has ", count * devices.size(),
                                                   " items on all devices, over this server's "
                                                   "limit of ", max_items,
                                                   " (--max_sweep_items)"));
  }
  std::vector<RunSpec> items;
  for (int device : devices) {
    for (const std::string& kernel : plan.kernels) {
      for (int64_t size : plan.sizes) {
        for (int block : blocks) {
          for (int items_per_thread : items_list) {
            RunRequest one = plan.base;
            one.kernel = kernel;
            one.elements = size;
            one.device_index = device;
            if (plan.all_devices) one.device_uuid.clear();
            one.block_size = block;
            one.items_per_thread = items_per_thread;
            absl::StatusOr<RunSpec> spec = engine.Resolve(one);
            if (!spec.ok()) {
              return absl::Status(
                  spec.status().code(),
                  absl::StrCat("sweep item kernel=", EchoForMessage(kernel), " elements=", size,
                               " block_size=", block, " items_per_thread=", items_per_thread,
                               ": ", spec.status().message()));
            }
            items.push_back(*std::move(spec));
          }
        }
      }
    }
  }
  return items;
}

}  // namespace gpubench
