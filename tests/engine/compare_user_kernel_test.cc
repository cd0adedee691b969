// UserKernel.compare's candidates and its chain, on the CPU backend (a user kernel itself needs a
// GPU; the chain only needs the user kernel's result, made up here).
#include "server/engine/compare_user_kernel.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "kernels/cpu_backend.h"
#include "server/engine/worker_pool.h"

namespace gpubench {
namespace {

std::set<std::string> Names(const std::vector<const KernelVariant*>& variants) {
  std::set<std::string> names;
  for (const KernelVariant* k : variants) names.insert(std::string(k->name));
  return names;
}

TEST(CompareUserKernel, CandidatesAreTheFamilysVariantsOfTheDtypeBaselinesApart) {
  const KernelVariant& add = **FindKernel("add_f32");
  const ComparisonCandidates c = CandidatesFor(*add.family, DType::kF32);
  const std::set<std::string> builtins = Names(c.builtins);
  EXPECT_TRUE(builtins.count("add_f32") && builtins.count("add_f32x4") &&
              builtins.count("add_f32_tuned"));
  EXPECT_EQ(Names(c.baselines), std::set<std::string>{"cub_add_f32"});
  for (const KernelVariant* k : c.builtins) {
    EXPECT_EQ(k->family, add.family) << k->name;
    EXPECT_EQ(k->dtype, DType::kF32) << k->name;
    EXPECT_FALSE(absl::StartsWith(k->name, "test_")) << k->name;
    EXPECT_FALSE(absl::StartsWith(k->provenance, "baseline:")) << k->name;
  }
  // Every variant of the family and dtype is one or the other, but the test_ ones other tests of
  // this binary register (verification_test.cc), which are never compared.
  size_t of_family = 0;
  for (const KernelVariant& k : AllKernels()) {
    of_family += k.family == add.family && k.dtype == DType::kF32 &&
                 !absl::StartsWith(k.name, "test_");
  }
  EXPECT_EQ(c.builtins.size() + c.baselines.size(), of_family);
}

// The role of every run the engine finished (RoleFor: which worker process would measure it).
class Roles final : public RunObserver {
 public:
  void OnRunFinished(const RunSpec& spec, const absl::StatusOr<RunResult>&,
                     absl::Duration) override {
    std::lock_guard<std::mutex> lock(mu_);
    roles_.push_back(RoleFor(spec));
  }
  void OnQueueDepth(int, int) override {}
  std::vector<WorkerRole> roles() {
    std::lock_guard<std::mutex> lock(mu_);
    return roles_;
  }

 private:
  std::mutex mu_;
  std::vector<WorkerRole> roles_;
};

// The chain after a (made-up) user kernel result of 1 s per launch: every built-in is measured,
// the fastest is reported with its speedup (its median / the user's) and the count, then the
// vendor baseline; the note says how they were measured. Each in the user kernel's worker (the
// user-kernel context), never the catalog worker. An error passes through untouched.
TEST(CompareUserKernel, MeasuresTheBuiltinsAfterTheUserKernelAndReportsRatios) {
  Engine engine(MakeCpuBackend({.devices = 1, .threads_per_device = 1}), ServerLimits());
  Roles roles;
  engine.AddObserver(&roles);
  RunRequest r;
  r.kernel = "add_f32";
  r.elements = 4096;
  r.cache_mode = CacheMode::kHot;
  r.measurement.min_samples = 3;
  r.measurement.min_time_seconds = 0.001;
  r.measurement.timeout_seconds = 0.5;
  absl::StatusOr<RunSpec> user = engine.Resolve(r);
  ASSERT_TRUE(user.ok()) << user.status();

  std::promise<absl::StatusOr<RunResult>> promise;
  RunDoneFn wrapped = ComparingUserKernel(
      engine, *user, absl::Now() + absl::Seconds(120),
      [&promise](absl::StatusOr<RunResult> result) { promise.set_value(std::move(result)); });
  RunResult made_up;
  made_up.stats.median_seconds = 1.0;
  made_up.user_kernel = UserKernelReport{};
  wrapped(made_up);
  absl::StatusOr<RunResult> result = promise.get_future().get();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->user_kernel.has_value());
  const std::vector<UserKernelComparison>& c = result->user_kernel->comparisons;
  ASSERT_EQ(c.size(), 2u);
  const ComparisonCandidates candidates = CandidatesFor(*user->kernel->family, DType::kF32);
  EXPECT_EQ(c[0].role, "best_builtin");
  EXPECT_TRUE(Names(candidates.builtins).count(c[0].kernel)) << c[0].kernel << " " << c[0].note;
  EXPECT_EQ(c[0].candidates, static_cast<int>(candidates.builtins.size())) << c[0].note;
  EXPECT_GT(c[0].median_seconds, 0);
  EXPECT_NEAR(c[0].speedup, c[0].median_seconds / 1.0, 1e-12);
  EXPECT_EQ(c[0].metric, "bytes_per_second");
  EXPECT_GT(c[0].value, 0);
  EXPECT_EQ(c[1].role, "vendor_baseline");
  EXPECT_EQ(c[1].kernel, "cub_add_f32") << c[1].note;
  ASSERT_FALSE(result->notes.empty());
  EXPECT_TRUE(absl::StrContains(result->notes.back(), "compare: ")) << result->notes.back();
  EXPECT_EQ(roles.roles(),
            std::vector<WorkerRole>(candidates.builtins.size() + candidates.baselines.size(),
                                    WorkerRole::kUser));

  std::promise<absl::StatusOr<RunResult>> failed;
  ComparingUserKernel(engine, *user, absl::Now() + absl::Seconds(10),
                      [&failed](absl::StatusOr<RunResult> result) {
                        failed.set_value(std::move(result));
                      })(absl::InternalError("the user kernel trapped"));
  EXPECT_EQ(failed.get_future().get().status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gpubench
