// Autotune: a kernel measured at each block size x items per thread, one configuration after
// another through its device's queue; the fastest is reported and, when asked, applied as the
// device's default through TunedDefaults::Apply. The Autotune RPC and tests use it.
#ifndef GPUBENCH_SERVER_ENGINE_AUTOTUNE_H_
#define GPUBENCH_SERVER_ENGINE_AUTOTUNE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/engine/engine.h"
#include "server/engine/run_result.h"
#include "server/engine/run_spec.h"
#include "server/engine/tuned_defaults.h"

namespace gpubench {

// Block sizes tried when a request names none.
inline constexpr int kDefaultAutotuneBlockSizes[] = {32, 64, 128, 256, 512, 1024};

struct AutotuneRequest {
  std::string kernel;
  int64_t elements = 0;
  int device_index = 0;
  std::vector<int> block_sizes;       // empty: kDefaultAutotuneBlockSizes
  std::vector<int> items_per_thread;  // empty: the variant's candidates (ItemsPerThreadCandidates)
  std::optional<CacheMode> cache_mode;
  MeasurementOptions measurement;
  bool apply = false;  // make the fastest the device's default for this kernel
};

// The configurations to measure, validated: the grid minus the tiles the device cannot give
// shared memory for, plus the catalog's configuration (for the speedup figure).
struct AutotunePlan {
  std::string kernel;  // as requested
  int device_index = 0;
  bool apply = false;
  TunedLaunch catalog;              // the variant's own block size and items per thread
  std::vector<std::string> skipped;  // why each configuration left out was left out
  std::vector<RunSpec> runs;
};

// One measured configuration.
struct AutotuneRow {
  int block_size = 0;
  int items_per_thread = 0;
  double median_seconds = 0;
  double bandwidth_bytes_per_second = 0;
  double relative_noise = 0;
  std::optional<double> theoretical_occupancy;
};
AutotuneRow AutotuneRowOf(const RunResult& result);

struct AutotuneReport {
  std::string kernel;
  int device_index = 0;
  std::vector<std::string> skipped;
  std::vector<AutotuneRow> rows;  // in measurement order
  AutotuneRow best;               // the lowest median (the first of equals)
  std::optional<double> speedup_over_catalog_default;  // catalog median / best median
  bool applied = false;
  bool persisted = false;  // applied, and kept by the tuned-defaults persistence
};

// Validates `request` and builds its plan. NOT_FOUND for an unknown kernel; INVALID_ARGUMENT for a
// kernel that picks its own launch, a grid over `max_items`, or a configuration that does not
// resolve (the status names it). Thread-safe.
absl::StatusOr<AutotunePlan> PlanAutotune(const AutotuneRequest& request, const Engine& engine,
                                          int max_items);

// The report of `plan` measured as `rows` (one per run, at least one): the best pick and, when the
// plan applies, the apply step through `tuned`.
AutotuneReport CompleteAutotune(const AutotunePlan& plan, std::vector<AutotuneRow> rows,
                                TunedDefaults& tuned);

// Runs a plan: each configuration through the device's queue in turn, then CompleteAutotune with
// the engine's tuned defaults. The first failed run (a failed verification included) ends it with
// that run's error. Thread-safe; the run keeps itself alive until `done` is called (exactly once,
// on any thread).
class AutotuneRun : public std::enable_shared_from_this<AutotuneRun> {
 public:
  using DoneFn = std::function<void(absl::StatusOr<AutotuneReport>)>;
  static std::shared_ptr<AutotuneRun> Start(Engine* engine, AutotunePlan plan,
                                            absl::Time deadline, DoneFn done);
  // Cancels the run in progress (its error ends the autotune) and any not yet queued.
  void Cancel();

 private:
  AutotuneRun(Engine* engine, AutotunePlan plan, absl::Time deadline, DoneFn done);
  void Next();
  void OnRunDone(absl::StatusOr<RunResult> result);

  Engine* const engine_;
  const AutotunePlan plan_;
  const absl::Time deadline_;
  const DoneFn done_;
  std::vector<AutotuneRow> rows_;  // touched by one run's on_done at a time
  std::mutex mu_;
  std::shared_ptr<Job> job_;  // the run in progress
  size_t finished_ = 0;       // runs done
  bool cancelled_ = false;
};

// PlanAutotune, then AutotuneRun, waiting for the report. Not on a device worker's thread.
absl::StatusOr<AutotuneReport> RunAutotune(Engine* engine, const AutotuneRequest& request,
                                           int max_items, absl::Time deadline);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_AUTOTUNE_H_
