// Buffer reuse within a sweep (docs/measurement.md, "buffer reuse"), without a GPU:
//   MarkBufferReuse: chains of consecutive items with one BufferKey per device, keep on all but
//     the last; the key is the buffers as the backend allocates them; user kernels never;
//   the CPU backend through MeasureRun: a reused run regenerates its inputs and poisons its
//     outputs, so test_write_nothing_add_f32 and test_corrupt_one_add_f32 are still caught on
//     the buffers a correct add_f32 left behind;
//   the engine (fake backend): a sweep's items say they reused and kept, single runs keep
//     nothing, admission counts kept buffers once, kept buffers are freed before a run that is
//     not theirs, when nothing follows, and after a failed run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "engine/fake_backend.h"
#include "kernels/cpu_backend.h"
#include "kernels/test_faults.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"
#include "server/engine/run_memory.h"
#include "server/engine/run_op.h"
#include "server/engine/sweep.h"
#include "tests/eventually.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Once per process, whichever test of this binary registers them first (verification_test.cc
// does too).
void RegisterWrongResultVariantsOnce() {
  if (FindKernel("test_write_nothing_add_f32").ok()) return;
  const absl::Status registered = RegisterVariants(TestWrongResultVariants());
  ASSERT_TRUE(registered.ok()) << registered;
}

RunRequest Quick(const std::string& kernel, int64_t n) {
  RunRequest r;
  r.kernel = kernel;
  r.elements = n;
  r.measurement.min_samples = 2;
  r.measurement.min_time_seconds = 0;
  r.measurement.max_noise = 1.0;
  r.measurement.timeout_seconds = 30;
  return r;
}

RunSpec Resolved(const Backend& backend, const RunRequest& r) {
  absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, backend, ServerLimits());
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

BackendCapabilities GpuLike() {
  BackendCapabilities can;
  can.placement_pads = true;
  can.placement_copies = true;
  return can;
}

// ---- MarkBufferReuse ----------------------------------------------------------------------------

TEST(MarkBufferReuseTest, ConsecutiveSameKeyItemsOnEachDeviceShareAChain) {
  testing::FakeScript script;
  script.devices = 2;
  Engine engine(std::make_unique<testing::FakeBackend>(script), ServerLimits{});
  SweepPlan plan;
  plan.kernels = {"add_f32", "add_f32x4", "add_f32_tuned"};
  plan.sizes = {4096};
  plan.all_devices = true;
  std::vector<RunSpec> items = *ExpandSweep(plan, engine, 100);
  ASSERT_EQ(items.size(), 6u);
  MarkBufferReuse(items, engine.backend().capabilities());
  for (int device = 0; device < 2; ++device) {
    const int first = 3 * device;
    EXPECT_NE(items[first].buffer_chain, 0u);
    for (int i = first; i < first + 3; ++i) {
      EXPECT_EQ(items[i].buffer_chain, items[first].buffer_chain) << i;
      EXPECT_EQ(items[i].keep_buffers, i < first + 2) << i;  // all but the chain's last
    }
  }
  EXPECT_NE(items[0].buffer_chain, items[3].buffer_chain);  // a chain per device

  // Marked again (a scheduled pass, a second sweep): new chains, never another sweep's.
  const uint64_t before = items[0].buffer_chain;
  MarkBufferReuse(items, engine.backend().capabilities());
  EXPECT_NE(items[0].buffer_chain, before);
}

TEST(MarkBufferReuseTest, ADifferentKeyStartsANewChainAndKeepsNothing) {
  testing::FakeScript script;
  Engine engine(std::make_unique<testing::FakeBackend>(script), ServerLimits{});
  SweepPlan plan;
  plan.kernels = {"add_f32", "add_f32x4"};
  plan.sizes = {1024, 4096};  // add_f32 1024, add_f32 4096, add_f32x4 1024, add_f32x4 4096
  std::vector<RunSpec> items = *ExpandSweep(plan, engine, 100);
  MarkBufferReuse(items, engine.backend().capabilities());
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_FALSE(items[i].keep_buffers) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(items[i].buffer_chain, items[j].buffer_chain);
  }
}

TEST(MarkBufferReuseTest, TheKeyIsTheBuffersAsTheBackendAllocatesThem) {
  std::unique_ptr<Backend> cpu = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  // The same bytes in another dtype: interchangeable (every run refills what it reads).
  std::vector<RunSpec> items = {Resolved(*cpu, Quick("add_f32", 4096)),
                                Resolved(*cpu, Quick("add_f16", 8192))};
  MarkBufferReuse(items, GpuLike());
  EXPECT_TRUE(items[0].keep_buffers);
  EXPECT_EQ(items[0].buffer_chain, items[1].buffer_chain);

  // Another placement pad: other allocations where the backend pads, the same where it does not.
  RunRequest padded = Quick("add_f32", 1 << 20);
  padded.measurement.placement_pad_bytes = 1 << 20;
  items = {Resolved(*cpu, Quick("add_f32", 1 << 20)), Resolved(*cpu, padded)};
  MarkBufferReuse(items, GpuLike());
  EXPECT_FALSE(items[0].keep_buffers);
  MarkBufferReuse(items, BackendCapabilities());
  EXPECT_TRUE(items[0].keep_buffers);

  // Other placement copies likewise.
  RunRequest copies = Quick("add_f32", 4096);
  copies.measurement.placements = 2;
  items = {Resolved(*cpu, Quick("add_f32", 4096)), Resolved(*cpu, copies)};
  MarkBufferReuse(items, GpuLike());
  EXPECT_FALSE(items[0].keep_buffers);
  MarkBufferReuse(items, BackendCapabilities());
  EXPECT_TRUE(items[0].keep_buffers);

  // Another family with other buffers.
  items = {Resolved(*cpu, Quick("add_f32", 4096)), Resolved(*cpu, Quick("saxpy_minimal", 4096))};
  MarkBufferReuse(items, GpuLike());
  EXPECT_FALSE(items[0].keep_buffers);
}

TEST(MarkBufferReuseTest, EachDevicesItemsChainInTheOrderItRunsThem) {
  std::unique_ptr<Backend> cpu = MakeCpuBackend({.devices = 2, .threads_per_device = 1});
  RunRequest on1 = Quick("add_f32", 4096);
  on1.device_index = 1;
  std::vector<RunSpec> items = {Resolved(*cpu, Quick("add_f32", 4096)), Resolved(*cpu, on1),
                                Resolved(*cpu, Quick("add_f32x4", 4096))};
  MarkBufferReuse(items, BackendCapabilities());
  EXPECT_TRUE(items[0].keep_buffers);  // for item 2, the next on device 0
  EXPECT_EQ(items[0].buffer_chain, items[2].buffer_chain);
  EXPECT_FALSE(items[1].keep_buffers);
  EXPECT_NE(items[1].buffer_chain, items[0].buffer_chain);
}

TEST(MarkBufferReuseTest, UserKernelsAreNeverMarkedAndBreakTheChain) {
  std::unique_ptr<Backend> cpu = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  std::vector<RunSpec> items = {Resolved(*cpu, Quick("add_f32", 4096)),
                                Resolved(*cpu, Quick("add_f32", 4096)),
                                Resolved(*cpu, Quick("add_f32", 4096))};
  items[1].user_kernel = std::make_shared<UserKernelSpec>();  // its variant: the same add
  MarkBufferReuse(items, BackendCapabilities());
  EXPECT_FALSE(items[0].keep_buffers);
  EXPECT_FALSE(items[1].keep_buffers);
  EXPECT_EQ(items[1].buffer_chain, 0u);
  EXPECT_NE(items[2].buffer_chain, items[0].buffer_chain);
}

// ---- the CPU backend through MeasureRun ---------------------------------------------------------

class CpuReuseTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterWrongResultVariantsOnce(); }
  absl::StatusOr<RunResult> Measure(Backend& backend, const std::string& kernel, int64_t n,
                                    uint64_t seed, uint64_t chain, bool keep) {
    RunRequest r = Quick(kernel, n);
    r.seed = seed;
    RunSpec spec = Resolved(backend, r);
    spec.buffer_chain = chain;
    spec.keep_buffers = keep;
    return MeasureRun(
        backend, spec, [] { return false; }, &pool_);
  }
  ParallelPool pool_{2};
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
};

TEST_F(CpuReuseTest, AReusedRunRegeneratesItsInputsAndSaysSo) {
  constexpr int64_t kN = 4099;
  absl::StatusOr<RunResult> first = Measure(*cpu_, "add_f32", kN, 1, 41, true);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->phases.buffers_reused);
  EXPECT_TRUE(first->phases.buffers_kept);
  EXPECT_THAT(first->method, Not(HasSubstr("reused")));
  // Another seed on the kept buffers: right only if its inputs were made anew.
  absl::StatusOr<RunResult> second = Measure(*cpu_, "add_f32x4", kN, 2, 41, false);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->phases.buffers_reused);
  EXPECT_FALSE(second->phases.buffers_kept);
  ASSERT_TRUE(second->verification.has_value());
  EXPECT_TRUE(second->verification->passed);
  EXPECT_THAT(second->method, HasSubstr(std::string("; ") + kBuffersReusedMethod + "; verified: "));
  // The same output as a run on new buffers.
  absl::StatusOr<RunResult> fresh = Measure(*cpu_, "add_f32x4", kN, 2, 0, false);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(fresh->phases.buffers_reused);
  EXPECT_EQ(second->output_hash, fresh->output_hash);
}

TEST_F(CpuReuseTest, WrongResultsAreCaughtOnTheBuffersACorrectKernelLeft) {
  constexpr int64_t kN = 4099;
  constexpr uint64_t kSeed = 7;  // the same inputs: stale outputs would be right
  ASSERT_TRUE(Measure(*cpu_, "add_f32", kN, kSeed, 42, true).ok());
  absl::StatusOr<RunResult> nothing =
      Measure(*cpu_, "test_write_nothing_add_f32", kN, kSeed, 42, true);
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_TRUE(nothing->phases.buffers_reused);
  ASSERT_TRUE(nothing->verification.has_value());
  EXPECT_FALSE(nothing->verification->passed);
  EXPECT_EQ(nothing->verification->mismatches, kN);  // every element still the poison
  EXPECT_FALSE(nothing->phases.buffers_kept);        // a failed verification keeps nothing

  ASSERT_TRUE(Measure(*cpu_, "add_f32", kN, kSeed, 43, true).ok());
  absl::StatusOr<RunResult> corrupt =
      Measure(*cpu_, "test_corrupt_one_add_f32", kN, kSeed, 43, false);
  ASSERT_TRUE(corrupt.ok()) << corrupt.status();
  EXPECT_TRUE(corrupt->phases.buffers_reused);
  EXPECT_EQ(corrupt->verification->mismatches, 1);
}

TEST_F(CpuReuseTest, OnlyTheSameChainAndKeyTakeKeptBuffers) {
  ASSERT_TRUE(Measure(*cpu_, "add_f32", 4096, 1, 44, true).ok());
  absl::StatusOr<RunResult> other_chain = Measure(*cpu_, "add_f32", 4096, 1, 45, true);
  ASSERT_TRUE(other_chain.ok());
  EXPECT_FALSE(other_chain->phases.buffers_reused);  // and chain 44's were freed
  absl::StatusOr<RunResult> other_size = Measure(*cpu_, "add_f32", 8192, 1, 45, true);
  ASSERT_TRUE(other_size.ok());
  EXPECT_FALSE(other_size->phases.buffers_reused);
  absl::StatusOr<RunResult> no_chain = Measure(*cpu_, "add_f32", 8192, 1, 0, true);
  ASSERT_TRUE(no_chain.ok());
  EXPECT_FALSE(no_chain->phases.buffers_reused);
  EXPECT_FALSE(no_chain->phases.buffers_kept);  // no chain: nothing to keep for
  absl::StatusOr<RunResult> after = Measure(*cpu_, "add_f32", 8192, 1, 45, false);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->phases.buffers_reused);  // the chain-less run freed them
}

TEST_F(CpuReuseTest, TheDeviceCheckPathVerifiesReusedBuffersToo) {
  testing::FakeScript script;
  script.verify_on_device = true;
  testing::FakeBackend fake(script);
  ASSERT_TRUE(Measure(fake, "add_f32", 4096, 3, 46, true).ok());
  absl::StatusOr<RunResult> nothing =
      Measure(fake, "test_write_nothing_add_f32", 4096, 3, 46, false);
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_TRUE(nothing->phases.buffers_reused);
  EXPECT_EQ(nothing->verification->where, VerifiedWhere::kDevice);
  EXPECT_EQ(nothing->verification->mismatches, 4096);
}

// ---- the engine ---------------------------------------------------------------------------------

struct Results {
  std::mutex mu;
  std::map<int, absl::StatusOr<RunResult>> items;
  std::promise<absl::Status> finished;
  SweepCallbacks Callbacks() {
    SweepCallbacks cb;
    cb.on_item = [this](int index, absl::StatusOr<RunResult> result) {
      std::lock_guard<std::mutex> lock(mu);
      items.emplace(index, std::move(result));
    };
    cb.on_finished = [this](absl::Status status) { finished.set_value(status); };
    return cb;
  }
};

// Polls `done` for up to two seconds.
TEST(EngineReuseTest, ASweepsNextItemReusesAndEveryResultSaysWhatHappened) {
  testing::FakeScript script;
  std::atomic<int> releases{0};
  script.buffer_releases = &releases;
  auto backend = std::make_unique<testing::FakeBackend>(script);
  testing::FakeBackend* fake = backend.get();
  Engine engine(std::move(backend), ServerLimits{});
  SweepPlan plan;
  plan.kernels = {"add_f32", "add_f32x4", "add_f32_tuned"};
  plan.sizes = {4096};
  plan.base.measurement.min_samples = 3;
  Results results;
  SweepRun::Start(&engine, *ExpandSweep(plan, engine, 100), absl::InfiniteFuture(),
                  results.Callbacks());
  ASSERT_TRUE(results.finished.get_future().get().ok());
  std::lock_guard<std::mutex> lock(results.mu);
  ASSERT_EQ(results.items.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const absl::StatusOr<RunResult>& r = results.items.at(i);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->verification->passed);
    EXPECT_EQ(r->phases.buffers_reused, i > 0) << i;
    EXPECT_EQ(r->phases.buffers_kept, i < 2) << i;
    EXPECT_EQ(absl::StrContains(r->method, kBuffersReusedMethod), i > 0) << r->method;
  }
  // The last item kept nothing: nothing is held after the sweep.
  EXPECT_EQ(fake->kept_bytes(), 0);
}

TEST(EngineReuseTest, SingleRunsKeepNothing) {
  testing::FakeScript script;
  auto backend = std::make_unique<testing::FakeBackend>(script);
  testing::FakeBackend* fake = backend.get();
  Engine engine(std::move(backend), ServerLimits{});
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<RunSpec> spec = engine.Resolve(Quick("add_f32", 4096));
    ASSERT_TRUE(spec.ok());
    EXPECT_EQ(spec->buffer_chain, 0u);  // never from a request
    absl::StatusOr<RunResult> r = RunAndWait(engine, *spec, absl::InfiniteFuture());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->phases.buffers_reused);
    EXPECT_FALSE(r->phases.buffers_kept);
    EXPECT_EQ(fake->kept_bytes(), 0);
  }
}

// The fake's free device memory drops by what its sessions keep, as a GPU's does; a sweep item
// that needs more than half the device then fits only if its kept buffers are not counted twice.
TEST(EngineReuseTest, AdmissionCountsKeptBuffersOnce) {
  constexpr int64_t kN = 1 << 16;
  testing::FakeScript probe_script;
  testing::FakeBackend probe(probe_script);
  const RunSpec spec = Resolved(probe, Quick("add_f32", kN));
  const DeviceInfo device = *probe.Describe(0);
  const RunMemory need = RunMemoryOf(spec, probe.capabilities(), device);
  const RunMemory kept = SessionBuffersOf(*spec.kernel, spec.shape, 0, 1);
  ASSERT_GT(kept.device_bytes, 0);

  testing::FakeScript script;
  script.free_memory_bytes = need.device_bytes + kept.device_bytes / 2;
  // The premise: with the first item's buffers kept, the second's whole need does not fit.
  ASSERT_GT(need.device_bytes, script.free_memory_bytes - kept.device_bytes);
  auto backend = std::make_unique<testing::FakeBackend>(script);
  Engine engine(std::move(backend), ServerLimits{});
  SweepPlan plan;
  plan.kernels = {"add_f32", "add_f32x4"};
  plan.sizes = {kN};
  plan.base.measurement.min_samples = 2;
  Results results;
  SweepRun::Start(&engine, *ExpandSweep(plan, engine, 100), absl::InfiniteFuture(),
                  results.Callbacks());
  ASSERT_TRUE(results.finished.get_future().get().ok());
  std::lock_guard<std::mutex> lock(results.mu);
  ASSERT_TRUE(results.items.at(1).ok()) << results.items.at(1).status();
  EXPECT_TRUE(results.items.at(1)->phases.buffers_reused);
}

// A kept set that is not the next run's is freed before that run is admitted: the run that
// needs the memory gets it.
TEST(EngineReuseTest, KeptBuffersAreFreedBeforeARunThatIsNotTheirs) {
  constexpr int64_t kN = 1 << 16;
  testing::FakeScript script;
  std::atomic<int> releases{0};
  script.buffer_releases = &releases;
  testing::FakeBackend probe(script);
  const RunSpec big = Resolved(probe, Quick("add_f32", 2 * kN));
  const RunMemory big_need = RunMemoryOf(big, probe.capabilities(), *probe.Describe(0));
  // Fits the big run alone, not beside the small run's kept buffers.
  script.free_memory_bytes = big_need.device_bytes + 1024;
  auto backend = std::make_unique<testing::FakeBackend>(script);
  testing::FakeBackend* fake = backend.get();
  Engine engine(std::move(backend), ServerLimits{});
  // Resolved first: resolve checks memory too, against what the device has free then.
  RunSpec next = *engine.Resolve(Quick("add_f32", 2 * kN));  // another chain (none), other key

  RunSpec small = *engine.Resolve(Quick("add_f32", kN));
  small.buffer_chain = 9001;
  small.keep_buffers = true;
  absl::StatusOr<RunResult> kept = RunAndWait(engine, small, absl::InfiniteFuture());
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->phases.buffers_kept);
  EXPECT_GT(fake->kept_bytes(), 0);

  absl::StatusOr<RunResult> r = RunAndWait(engine, next, absl::InfiniteFuture());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->phases.buffers_reused);
  EXPECT_GE(releases.load(), 1);
  EXPECT_EQ(fake->kept_bytes(), 0);
}

TEST(EngineReuseTest, KeptBuffersAreFreedWhenNoRunFollows) {
  testing::FakeScript script;
  std::atomic<int> releases{0};
  script.buffer_releases = &releases;
  auto backend = std::make_unique<testing::FakeBackend>(script);
  testing::FakeBackend* fake = backend.get();
  Engine engine(std::move(backend), ServerLimits{});
  RunSpec spec = *engine.Resolve(Quick("add_f32", 4096));
  spec.buffer_chain = 9002;
  spec.keep_buffers = true;  // as a sweep's item whose next never comes (cancelled)
  absl::StatusOr<RunResult> r = RunAndWait(engine, spec, absl::InfiniteFuture());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->phases.buffers_kept);
  EXPECT_TRUE(Eventually([&] { return fake->kept_bytes() == 0; }, absl::Seconds(2),
                         absl::Milliseconds(10)));
  EXPECT_EQ(releases.load(), 1);
}

TEST(EngineReuseTest, AFailedRunKeepsNothing) {
  for (const bool corrupt : {false, true}) {
    testing::FakeScript script;
    if (corrupt) {
      script.corrupt_output = true;  // verification fails
    } else {
      script.sample_error = absl::InternalError("the sample failed");
    }
    auto backend = std::make_unique<testing::FakeBackend>(script);
    testing::FakeBackend* fake = backend.get();
    Engine engine(std::move(backend), ServerLimits{});
    RunSpec spec = *engine.Resolve(Quick("add_f32", 4096));
    spec.buffer_chain = 9003;
    spec.keep_buffers = true;
    absl::StatusOr<RunResult> r = RunAndWait(engine, spec, absl::InfiniteFuture());
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(fake->kept_bytes(), 0) << corrupt;
  }
}

}  // namespace
}  // namespace gpubench
