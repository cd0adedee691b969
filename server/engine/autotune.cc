#include "server/engine/autotune.h"

#include <algorithm>
#include <future>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/engine/resolve.h"
#include "server/engine/sweep.h"
#include "spdlog/spdlog.h"

namespace gpubench {
namespace {

// The grid: the request's lists, or the defaults; INVALID_ARGUMENT over `max_items`, counted
// before anything is built (the lists come from the client).
absl::StatusOr<std::vector<TunedLaunch>> Grid(const AutotuneRequest& request,
                                              const KernelVariant& k, int max_items) {
  std::vector<int> blocks = request.block_sizes;
  if (blocks.empty()) {
    blocks.assign(std::begin(kDefaultAutotuneBlockSizes), std::end(kDefaultAutotuneBlockSizes));
  }
  std::vector<int> items = request.items_per_thread;
  if (items.empty()) items = ItemsPerThreadCandidates(k);
  if (CountCombinations({static_cast<int64_t>(blocks.size()), static_cast<int64_t>(items.size())},
                        max_items) > max_items) {
    return absl::InvalidArgumentError(absl::StrCat(
        "more than ", max_items, " configurations (", blocks.size(), " block sizes x ",
        items.size(), " items per thread), over the limit of --max_sweep_items"));
  }
  std::vector<TunedLaunch> grid;
  for (int block : blocks) {
    for (int i : items) grid.push_back({block, i});
  }
  return grid;
}

// Tiles whose shared memory the device cannot give one block are listed as skipped, not run: the
// default grid of block sizes x items crosses that limit for the bulk kernels. Where the device
// cannot be described, nothing is skipped (resolving then says what is wrong).
std::vector<TunedLaunch> WithoutUnfitTiles(const std::vector<TunedLaunch>& grid,
                                           const KernelVariant& k, const Engine& engine,
                                           int device_index, std::vector<std::string>* skipped) {
  const absl::StatusOr<DeviceInfo> device = engine.backend().Describe(device_index);
  std::vector<TunedLaunch> fit;
  for (const TunedLaunch& c : grid) {
    if (device.ok()) {
      if (absl::Status fits = CheckSharedMemoryFits(k, c.block_size, c.items_per_thread, *device);
          !fits.ok()) {
        skipped->push_back(std::string(fits.message()));
        continue;
      }
    }
    fit.push_back(c);
  }
  return fit;
}

}  // namespace

absl::StatusOr<AutotunePlan> PlanAutotune(const AutotuneRequest& request, const Engine& engine,
                                          int max_items) {
  ASSIGN_OR_RETURN(const KernelVariant* kernel, FindKernel(request.kernel));
  const KernelVariant& k = *kernel;
  if (!k.default_policy.block_size_tunable) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel ", request.kernel, " picks its own launch configuration; nothing to tune"));
  }
  ASSIGN_OR_RETURN(const std::vector<TunedLaunch> grid, Grid(request, k, max_items));
  AutotunePlan plan;
  plan.kernel = request.kernel;
  plan.apply = request.apply;
  plan.catalog = {k.default_policy.block_size, k.default_policy.items_per_thread};
  std::vector<TunedLaunch> configs =
      WithoutUnfitTiles(grid, k, engine, request.device_index, &plan.skipped);
  if (std::find(configs.begin(), configs.end(), plan.catalog) == configs.end()) {
    configs.push_back(plan.catalog);  // measured too, for the speedup figure
  }
  if (static_cast<int>(configs.size()) > max_items) {
    return absl::InvalidArgumentError(
        absl::StrCat(configs.size(), " configurations (block sizes x items per thread), over "
                     "the limit of ", max_items, " (--max_sweep_items)"));
  }
  for (const TunedLaunch& c : configs) {
    RunRequest one;
    one.kernel = request.kernel;
    one.elements = request.elements;
    one.device_index = request.device_index;
    one.block_size = c.block_size;
    // The catalog's items are sent as 0: variants with fixed items reject an explicit value.
    one.items_per_thread = ItemsPerThreadTunable(k) ? c.items_per_thread : 0;
    one.cache_mode = request.cache_mode;
    one.measurement = request.measurement;
    absl::StatusOr<RunSpec> spec = engine.Resolve(one);
    if (!spec.ok()) {
      return absl::Status(spec.status().code(),
                          absl::StrCat("block_size ", c.block_size, ", items_per_thread ",
                                       c.items_per_thread, ": ", spec.status().message()));
    }
    plan.runs.push_back(*std::move(spec));
  }
  plan.device_index = plan.runs[0].device_index;
  return plan;
}

AutotuneRow AutotuneRowOf(const RunResult& result) {
  AutotuneRow row;
  row.block_size = result.spec.geometry.block_size;
  row.items_per_thread = result.spec.geometry.items_per_thread;
  row.median_seconds = result.stats.median_seconds;
  row.bandwidth_bytes_per_second = result.bandwidth_bytes_per_second;
  row.relative_noise = result.stats.relative_noise;
  if (result.occupancy) row.theoretical_occupancy = result.occupancy->theoretical_occupancy;
  return row;
}

AutotuneReport CompleteAutotune(const AutotunePlan& plan, std::vector<AutotuneRow> rows,
                                TunedDefaults& tuned) {
  AutotuneReport report;
  report.kernel = plan.kernel;
  report.device_index = plan.device_index;
  report.skipped = plan.skipped;
  report.rows = std::move(rows);
  const AutotuneRow* best = nullptr;
  const AutotuneRow* catalog = nullptr;
  for (const AutotuneRow& row : report.rows) {
    if (best == nullptr || row.median_seconds < best->median_seconds) best = &row;
    if (TunedLaunch{row.block_size, row.items_per_thread} == plan.catalog) catalog = &row;
  }
  report.best = *best;
  if (catalog != nullptr) {
    report.speedup_over_catalog_default = catalog->median_seconds / best->median_seconds;
  }
  if (plan.apply) {
    const KernelVariant& k = *plan.runs[0].kernel;
    const TunedLaunch launch{best->block_size,
                             ItemsPerThreadTunable(k) ? best->items_per_thread : 0};
    const absl::Status saved = tuned.Apply(plan.device_index, k, launch, plan.runs[0].elements,
                                           best->bandwidth_bytes_per_second);
    if (!saved.ok()) {
      spdlog::warn("autotune {}: applied in memory, not persisted: {}", std::string(k.name),
                   saved.ToString());
    }
    report.applied = true;
    report.persisted = tuned.persistent() && saved.ok();
  }
  return report;
}

AutotuneRun::AutotuneRun(Engine* engine, AutotunePlan plan, absl::Time deadline, DoneFn done)
    : engine_(engine), plan_(std::move(plan)), deadline_(deadline), done_(std::move(done)) {}

std::shared_ptr<AutotuneRun> AutotuneRun::Start(Engine* engine, AutotunePlan plan,
                                                absl::Time deadline, DoneFn done) {
  // One kernel at one size on one device: every candidate can run on the first one's buffers.
  MarkBufferReuse(plan.runs, engine->backend().capabilities());
  std::shared_ptr<AutotuneRun> run(
      new AutotuneRun(engine, std::move(plan), deadline, std::move(done)));
  run->Next();
  return run;
}

void AutotuneRun::Cancel() {
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    job = job_;
  }
  if (job) job->Cancel();
}

void AutotuneRun::Next() {
  if (rows_.size() == plan_.runs.size()) {
    done_(CompleteAutotune(plan_, std::move(rows_), engine_->tuned_defaults()));
    return;
  }
  const size_t index = rows_.size();
  JobCallbacks callbacks;
  callbacks.on_done = [self = shared_from_this()](absl::StatusOr<RunResult> result) {
    self->OnRunDone(std::move(result));
  };
  absl::StatusOr<std::shared_ptr<Job>> job =
      engine_->Submit(plan_.runs[index], deadline_, std::move(callbacks), nullptr);
  if (!job.ok()) {
    done_(job.status());
    return;
  }
  bool cancel = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_ == index) job_ = *job;  // it may have finished already
    cancel = cancelled_;
  }
  if (cancel) (*job)->Cancel();  // a cancel that came before this run was queued
}

void AutotuneRun::OnRunDone(absl::StatusOr<RunResult> result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_.reset();
    ++finished_;
  }
  if (absl::Status status = RunStatus(result); !status.ok()) {
    done_(status);
    return;
  }
  rows_.push_back(AutotuneRowOf(*result));
  Next();
}

absl::StatusOr<AutotuneReport> RunAutotune(Engine* engine, const AutotuneRequest& request,
                                           int max_items, absl::Time deadline) {
  ASSIGN_OR_RETURN(AutotunePlan plan, PlanAutotune(request, *engine, max_items));
  std::promise<absl::StatusOr<AutotuneReport>> promise;
  std::future<absl::StatusOr<AutotuneReport>> future = promise.get_future();
  AutotuneRun::Start(engine, std::move(plan), deadline,
                     [&promise](absl::StatusOr<AutotuneReport> report) {
                       promise.set_value(std::move(report));
                     });
  return future.get();
}

}  // namespace gpubench
