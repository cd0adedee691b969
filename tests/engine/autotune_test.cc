// Autotune: the grid and its defaults, the skip list, the catalog's configuration measured for the
// speedup, the best pick, and the apply step through TunedDefaults with a fake persistence.
#include "server/engine/autotune.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "engine/fake_backend.h"
#include "server/engine/resolve.h"

namespace gpubench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// Records what it is asked to keep; fails when told to.
class FakePersistence final : public TunedDefaultsPersistence {
 public:
  struct Saved {
    int device;
    std::string kernel;
    TunedLaunch launch;
    int64_t elements;
    double bandwidth_bytes_per_second;
  };
  absl::Status Save(int device, const KernelVariant& kernel, TunedLaunch launch, int64_t elements,
                    double bandwidth_bytes_per_second) override {
    saved.push_back({device, std::string(kernel.name), launch, elements,
                     bandwidth_bytes_per_second});
    return fail ? absl::UnavailableError("disk full (fake)") : absl::OkStatus();
  }
  std::vector<Saved> saved;
  bool fail = false;
};

class AutotuneTest : public ::testing::Test {
 protected:
  void Make(testing::FakeScript script = {}) {
    engine_ = std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script),
                                       ServerLimits{});
  }
  static AutotuneRequest Request(const std::string& kernel) {
    AutotuneRequest r;
    r.kernel = kernel;
    r.elements = 4096;
    r.measurement.min_samples = 3;
    r.measurement.min_time_seconds = 1e-3;
    return r;
  }
  static std::vector<std::pair<int, int>> Configs(const AutotunePlan& plan) {
    std::vector<std::pair<int, int>> out;
    for (const RunSpec& s : plan.runs) {
      out.emplace_back(s.geometry.block_size, s.geometry.items_per_thread);
    }
    return out;
  }
  std::unique_ptr<Engine> engine_;
};

TEST_F(AutotuneTest, DefaultGridIsEveryBlockSizeAtTheVariantsItems) {
  Make();
  absl::StatusOr<AutotunePlan> plan = PlanAutotune(Request("add_f32"), *engine_, 100);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Configs(*plan), ElementsAre(std::pair(32, 1), std::pair(64, 1), std::pair(128, 1),
                                          std::pair(256, 1), std::pair(512, 1),
                                          std::pair(1024, 1)));
  EXPECT_THAT(plan->skipped, IsEmpty());
  EXPECT_EQ(plan->catalog, (TunedLaunch{256, 1}));
  EXPECT_EQ(plan->kernel, "add_f32");
  for (const RunSpec& s : plan->runs) {
    EXPECT_EQ(s.measurement.min_samples, 3);
    EXPECT_TRUE(s.verify);  // every configuration is verified
  }
}

TEST_F(AutotuneTest, TheCatalogConfigurationIsAddedForTheSpeedup) {
  Make();
  AutotuneRequest request = Request("add_f32_tuned");
  request.block_sizes = {128};
  request.items_per_thread = {8};
  absl::StatusOr<AutotunePlan> plan = PlanAutotune(request, *engine_, 100);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(Configs(*plan), ElementsAre(std::pair(128, 8), std::pair(768, 4)));
}

TEST_F(AutotuneTest, TilesTheDeviceCannotHoldAreSkippedWithTheReason) {
  testing::FakeScript script;
  script.shared_memory_per_block_optin_bytes = 48 * 1024;
  Make(script);
  AutotuneRequest request = Request("add_f32_bulk");
  request.block_sizes = {256, 1024};
  request.items_per_thread = {3, 64};
  absl::StatusOr<AutotunePlan> plan = PlanAutotune(request, *engine_, 100);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_THAT(plan->skipped, SizeIs(::testing::Ge(1u)));
  EXPECT_THAT(plan->skipped[0], HasSubstr("shared memory"));
  for (const RunSpec& s : plan->runs) {
    EXPECT_TRUE(CheckSharedMemoryFits(*s.kernel, s.geometry.block_size,
                                      s.geometry.items_per_thread, *engine_->backend().Describe(0))
                    .ok());
  }
  EXPECT_EQ(plan->runs.size() + plan->skipped.size(), 4u);
}

TEST_F(AutotuneTest, BadRequestsAreRefusedBeforeAnythingRuns) {
  Make();
  EXPECT_EQ(PlanAutotune(Request("no_such_kernel"), *engine_, 100).status().code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<AutotunePlan> library = PlanAutotune(Request("cub_add_f32"), *engine_, 100);
  EXPECT_EQ(library.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(library.status().message(), HasSubstr("nothing to tune"));

  AutotuneRequest big = Request("add_f32_tuned");
  big.block_sizes.assign(1 << 20, 256);
  big.items_per_thread.assign(1 << 20, 4);
  absl::StatusOr<AutotunePlan> over = PlanAutotune(big, *engine_, 1000);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(), HasSubstr("--max_sweep_items"));

  AutotuneRequest bad_block = Request("add_f32");
  bad_block.block_sizes = {100};
  absl::StatusOr<AutotunePlan> bad = PlanAutotune(bad_block, *engine_, 100);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("block_size 100, items_per_thread 1"));
}

AutotunePlan TwoConfigPlan(const Engine& engine, bool apply) {
  AutotuneRequest request;
  request.kernel = "add_f32_tuned";
  request.elements = 4096;
  request.block_sizes = {128};
  request.items_per_thread = {8};
  request.apply = apply;
  return *PlanAutotune(request, engine, 100);  // (128, 8) and the catalog's (768, 4)
}

AutotuneRow Row(int block, int items, double median_seconds) {
  AutotuneRow row;
  row.block_size = block;
  row.items_per_thread = items;
  row.median_seconds = median_seconds;
  row.bandwidth_bytes_per_second = 1.0 / median_seconds;
  return row;
}

TEST_F(AutotuneTest, BestIsTheLowestMedianAndTheSpeedupIsOverTheCatalog) {
  Make();
  const AutotunePlan plan = TwoConfigPlan(*engine_, /*apply=*/false);
  AutotuneReport report =
      CompleteAutotune(plan, {Row(128, 8, 1e-3), Row(768, 4, 4e-3)}, engine_->tuned_defaults());
  EXPECT_EQ(report.best.block_size, 128);
  EXPECT_EQ(report.best.items_per_thread, 8);
  ASSERT_TRUE(report.speedup_over_catalog_default.has_value());
  EXPECT_DOUBLE_EQ(*report.speedup_over_catalog_default, 4.0);
  EXPECT_FALSE(report.applied);
  EXPECT_FALSE(engine_->tuned_defaults().Get(0, "add_f32_tuned").has_value());

  // Equal medians: the first measured wins.
  report = CompleteAutotune(plan, {Row(128, 8, 2e-3), Row(768, 4, 2e-3)},
                            engine_->tuned_defaults());
  EXPECT_EQ(report.best.block_size, 128);
}

TEST_F(AutotuneTest, ApplyGoesThroughTunedDefaultsAndItsPersistence) {
  Make();
  FakePersistence persistence;
  engine_->tuned_defaults().SetPersistence(&persistence);
  const AutotunePlan plan = TwoConfigPlan(*engine_, /*apply=*/true);
  AutotuneReport report =
      CompleteAutotune(plan, {Row(128, 8, 1e-3), Row(768, 4, 4e-3)}, engine_->tuned_defaults());
  EXPECT_TRUE(report.applied);
  EXPECT_TRUE(report.persisted);
  std::optional<TunedLaunch> tuned = engine_->tuned_defaults().Get(0, "add_f32_tuned");
  ASSERT_TRUE(tuned.has_value());
  EXPECT_EQ(*tuned, (TunedLaunch{128, 8}));
  ASSERT_THAT(persistence.saved, SizeIs(1));
  EXPECT_EQ(persistence.saved[0].kernel, "add_f32_tuned");
  EXPECT_EQ(persistence.saved[0].launch, (TunedLaunch{128, 8}));
  EXPECT_EQ(persistence.saved[0].elements, 4096);
  EXPECT_DOUBLE_EQ(persistence.saved[0].bandwidth_bytes_per_second, 1e3);

  // A persistence that fails: applied in memory all the same, not persisted.
  persistence.fail = true;
  report = CompleteAutotune(plan, {Row(128, 8, 5e-3), Row(768, 4, 4e-3)},
                            engine_->tuned_defaults());
  EXPECT_TRUE(report.applied);
  EXPECT_FALSE(report.persisted);
  EXPECT_EQ(*engine_->tuned_defaults().Get(0, "add_f32_tuned"), (TunedLaunch{768, 4}));
  engine_->tuned_defaults().RemovePersistence(&persistence);
  EXPECT_FALSE(engine_->tuned_defaults().persistent());
}

TEST_F(AutotuneTest, FixedItemsAreAppliedAsTheCatalogs) {
  Make();
  AutotuneRequest request = Request("add_f32");
  request.block_sizes = {128};
  request.apply = true;
  const AutotunePlan plan = *PlanAutotune(request, *engine_, 100);
  AutotuneReport report =
      CompleteAutotune(plan, {Row(128, 1, 1e-3), Row(256, 1, 2e-3)}, engine_->tuned_defaults());
  EXPECT_TRUE(report.applied);
  EXPECT_FALSE(report.persisted);  // no persistence: memory only
  EXPECT_EQ(*engine_->tuned_defaults().Get(0, "add_f32"), (TunedLaunch{128, 0}));
}

TEST_F(AutotuneTest, RunsEveryConfigurationThroughTheQueueThenAppliesTheBest) {
  Make();
  AutotuneRequest request = Request("add_f32_tuned");
  request.block_sizes = {128, 256};
  request.items_per_thread = {8};
  request.apply = true;
  absl::StatusOr<AutotuneReport> report =
      RunAutotune(engine_.get(), request, 100, absl::InfiniteFuture());
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_THAT(report->rows, SizeIs(3));
  EXPECT_EQ(report->rows[0].block_size, 128);
  EXPECT_EQ(report->rows[1].block_size, 256);
  EXPECT_EQ(report->rows[2].block_size, 768);
  for (const AutotuneRow& row : report->rows) EXPECT_GT(row.median_seconds, 0);
  EXPECT_TRUE(report->applied);
  // A later request that names no geometry gets the applied one.
  RunRequest later;
  later.kernel = "add_f32_tuned";
  later.elements = 4096;
  absl::StatusOr<RunSpec> spec = engine_->Resolve(later);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->block_size_source, "tuned");
  EXPECT_EQ(spec->geometry.block_size, report->best.block_size);
}

TEST_F(AutotuneTest, AFailedVerificationEndsItWithThatError) {
  testing::FakeScript script;
  script.corrupt_output = true;
  Make(script);
  AutotuneRequest request = Request("add_f32");
  request.block_sizes = {128};
  request.apply = true;
  absl::StatusOr<AutotuneReport> report =
      RunAutotune(engine_.get(), request, 100, absl::InfiniteFuture());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(report.status().message(), HasSubstr("verification failed"));
  EXPECT_FALSE(engine_->tuned_defaults().Get(0, "add_f32").has_value());
}

TEST_F(AutotuneTest, CancelEndsItCancelled) {
  std::atomic<bool> release{false};
  testing::FakeScript script;
  script.release = &release;
  Make(script);
  absl::StatusOr<AutotunePlan> plan = PlanAutotune(Request("add_f32"), *engine_, 100);
  ASSERT_TRUE(plan.ok());
  std::promise<absl::StatusOr<AutotuneReport>> done;
  std::shared_ptr<AutotuneRun> run = AutotuneRun::Start(
      engine_.get(), *std::move(plan), absl::InfiniteFuture(),
      [&done](absl::StatusOr<AutotuneReport> r) { done.set_value(std::move(r)); });
  run->Cancel();
  release = true;
  absl::StatusOr<AutotuneReport> report = done.get_future().get();
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace gpubench
