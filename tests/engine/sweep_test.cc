// Sweep expansion: the plan's lists crossed in a fixed order, limits counted before building,
// the first bad item named, and what every item shares carried to each. SweepRun: per-device
// chains in order, per-item errors, cancellation, a refused first item.
#include "server/engine/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"

#include "engine/fake_backend.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Engine> MakeEngine(int devices) {
  testing::FakeScript script;
  script.devices = devices;
  return std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script), ServerLimits{});
}

SweepPlan TwoByTwo() {
  SweepPlan plan;
  plan.kernels = {"add_f32", "add_f32_tuned"};
  plan.sizes = {1024, 4096};
  plan.base.measurement.min_samples = 3;
  return plan;
}

TEST(CountCombinationsTest, ProductCappedAboveTheLimit) {
  EXPECT_EQ(CountCombinations({2, 3, 4}, 100), 24);
  EXPECT_EQ(CountCombinations({2, 3, 4}, 10), 11);
  EXPECT_EQ(CountCombinations({int64_t{1} << 40, int64_t{1} << 40}, 1000), 1001);  // no overflow
  EXPECT_EQ(CountCombinations({5, 0}, 10), 0);
  EXPECT_EQ(CountCombinations({5, -1}, 10), 0);
}

TEST(SweepTest, ExpandsKernelsThenSizesThenBlocksThenItems) {
  auto engine = MakeEngine(1);
  SweepPlan plan = TwoByTwo();
  plan.kernels = {"add_f32_tuned"};
  plan.block_sizes = {128, 256};
  plan.items_per_thread = {4, 8};
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, *engine, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 8u);
  EXPECT_EQ((*items)[0].elements, 1024);
  EXPECT_EQ((*items)[0].geometry.block_size, 128);
  EXPECT_EQ((*items)[0].geometry.items_per_thread, 4);
  EXPECT_EQ((*items)[1].geometry.items_per_thread, 8);
  EXPECT_EQ((*items)[2].geometry.block_size, 256);
  EXPECT_EQ((*items)[4].elements, 4096);
  for (const RunSpec& spec : *items) EXPECT_EQ(spec.block_size_source, "request");
}

TEST(SweepTest, EmptyListsMeanEachVariantsDefault) {
  auto engine = MakeEngine(1);
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(TwoByTwo(), *engine, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 4u);
  EXPECT_EQ((*items)[0].kernel->name, "add_f32");
  EXPECT_EQ((*items)[2].kernel->name, "add_f32_tuned");
  EXPECT_EQ((*items)[2].geometry.block_size, (*items)[2].kernel->default_policy.block_size);
  EXPECT_EQ((*items)[2].block_size_source, "catalog");
}

TEST(SweepTest, SharedFieldsReachEveryItem) {
  auto engine = MakeEngine(1);
  SweepPlan plan = TwoByTwo();
  plan.base.seed = 42;
  plan.base.verify = false;
  plan.base.cache_mode = CacheMode::kHot;
  plan.base.measurement.max_noise = 0.02;
  plan.base.force = true;
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, *engine, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  for (const RunSpec& spec : *items) {
    EXPECT_EQ(spec.seed, 42u);
    EXPECT_FALSE(spec.verify);
    EXPECT_EQ(spec.cache_mode, CacheMode::kHot);
    EXPECT_DOUBLE_EQ(spec.measurement.max_noise, 0.02);
    EXPECT_EQ(spec.measurement.min_samples, 3);
    EXPECT_TRUE(spec.force);
  }
}

TEST(SweepTest, AllDevicesRunsEveryItemOnEachDeviceDeviceMajor) {
  auto engine = MakeEngine(3);
  SweepPlan plan = TwoByTwo();
  plan.all_devices = true;
  plan.base.device_uuid = "no-such-uuid";  // ignored with all_devices
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, *engine, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 12u);
  EXPECT_EQ((*items)[0].device_index, 0);
  EXPECT_EQ((*items)[3].device_index, 0);
  EXPECT_EQ((*items)[4].device_index, 1);
  EXPECT_EQ((*items)[11].device_index, 2);
}

TEST(SweepTest, DeviceIndexOrUuidSelectsOneDevice) {
  auto engine = MakeEngine(2);
  SweepPlan plan = TwoByTwo();
  plan.base.device_index = 1;
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, *engine, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  for (const RunSpec& spec : *items) EXPECT_EQ(spec.device_index, 1);

  plan.base.device_uuid = "no-such-uuid";
  items = ExpandSweep(plan, *engine, 100);
  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), absl::StatusCode::kNotFound);
}

TEST(SweepTest, LimitsAreCountedBeforeBuilding) {
  auto engine = MakeEngine(2);
  SweepPlan plan = TwoByTwo();
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, *engine, 3);
  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(items.status().message(), HasSubstr("more than 3 items"));

  plan.all_devices = true;  // 4 items x 2 devices
  items = ExpandSweep(plan, *engine, 5);
  ASSERT_FALSE(items.ok());
  EXPECT_THAT(items.status().message(), HasSubstr("8 items on all devices"));

  plan.block_sizes.assign(1 << 20, 256);  // a huge list is refused, not expanded
  plan.items_per_thread.assign(1 << 20, 1);
  items = ExpandSweep(plan, *engine, 1000);
  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SweepTest, EmptyPlanAndBadItemsFailAsAWholeNamingTheItem) {
  auto engine = MakeEngine(1);
  SweepPlan empty;
  EXPECT_EQ(ExpandSweep(empty, *engine, 100).status().code(),
            absl::StatusCode::kInvalidArgument);

  SweepPlan plan = TwoByTwo();
  plan.kernels.push_back("no_such_kernel");
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, *engine, 100);
  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(items.status().message(), HasSubstr("sweep item kernel=no_such_kernel"));

  plan = TwoByTwo();
  plan.block_sizes = {100};
  items = ExpandSweep(plan, *engine, 100);
  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(items.status().message(), HasSubstr("block_size=100"));
}

// A user kernel's sweep: one item per size x launch, the block sizes and items per thread put in
// the user kernel's launch (never the request's, which a user kernel refuses), every item of a
// launch sharing one validated spec (and one copy of the code). Refused beside catalog kernels,
// with compare, with a fixed seed, and where the server does not allow user kernels.
TEST(SweepTest, AUserKernelIsCrossedWithSizesAndLaunches) {
  testing::FakeScript script;
  ServerLimits limits;
  limits.user_kernels.allowed = true;
  Engine engine(std::make_unique<testing::FakeBackend>(script), limits);
  SweepPlan plan;
  plan.sizes = {1024, 4096, 16384};
  plan.block_sizes = {128, 256};
  UserKernelRequest k;
  k.kind = UserCodeKind::kPtx;
  k.code = ".version 8.0\n.target sm_90\n.address_size 64\n";
  k.entry = "my_add";
  k.family = "elementwise_add";
  k.dtype = "f32";
  k.launch.block_size = 64;  // replaced by the list's
  plan.base.user_kernel = k;
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweep(plan, engine, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 6u);
  for (size_t i = 0; i < items->size(); ++i) {
    const RunSpec& item = (*items)[i];
    ASSERT_NE(item.user_kernel, nullptr);
    EXPECT_EQ(item.kernel, &item.user_kernel->variant);
    EXPECT_EQ(item.kernel->name, "user_kernel");
    EXPECT_EQ(item.elements, plan.sizes[i / 2]);
    EXPECT_EQ(item.geometry.block_size, plan.block_sizes[i % 2]);
    EXPECT_EQ(item.user_kernel->request.launch.block_size, plan.block_sizes[i % 2]);
    EXPECT_EQ(item.user_kernel, (*items)[i % 2].user_kernel) << "one spec per launch";
  }
  EXPECT_NE((*items)[0].user_kernel, (*items)[1].user_kernel);

  SweepPlan with_kernels = plan;
  with_kernels.kernels = {"add_f32"};
  EXPECT_THAT(ExpandSweep(with_kernels, engine, 100).status().message(),
              HasSubstr("kernels and user_kernel are exclusive"));
  SweepPlan compare = plan;
  compare.base.user_kernel->compare = true;
  EXPECT_THAT(ExpandSweep(compare, engine, 100).status().message(),
              HasSubstr("user_kernel.compare is for RunBenchmark"));
  SweepPlan seeded = plan;
  seeded.base.seed = 7;
  absl::Status s = ExpandSweep(seeded, engine, 100).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("sweep item user_kernel=my_add elements=1024"));
  SweepPlan no_sizes = plan;
  no_sizes.sizes.clear();
  EXPECT_EQ(ExpandSweep(no_sizes, engine, 100).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandSweep(plan, engine, 5).status().code(), absl::StatusCode::kInvalidArgument);
  // Off on a server without --allow_user_kernels: the whole sweep, at once.
  auto off = MakeEngine(1);
  s = ExpandSweep(plan, *off, 100).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("--allow_user_kernels"));
}

// A scheduled plan: its sweeps in order; a multi-device (peer) sweep only where the server has a
// second device (a one-GPU node runs the rest of the fleet plan); the failing sweep named.
TEST(SweepTest, ExpandSweepsLeavesMultiDeviceSweepsOutOnOneDevice) {
  SweepPlan single = TwoByTwo();
  SweepPlan peer = TwoByTwo();
  peer.kernels = {"add_f32"};
  peer.multi_device = true;
  const std::vector<SweepPlan> plans = {single, peer};

  auto one = MakeEngine(1);
  EXPECT_TRUE(SweepFitsDevices(single, *one));
  EXPECT_FALSE(SweepFitsDevices(peer, *one));
  absl::StatusOr<std::vector<RunSpec>> items = ExpandSweeps(plans, *one, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  EXPECT_EQ(items->size(), 4u);

  auto two = MakeEngine(2);
  EXPECT_TRUE(SweepFitsDevices(peer, *two));
  items = ExpandSweeps(plans, *two, 100);
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 6u);
  EXPECT_EQ((*items)[3].elements, 4096);  // the first sweep's items first
  EXPECT_EQ((*items)[4].elements, 1024);

  // A bad multi-device sweep fails the plan only where it runs, and is named.
  SweepPlan bad_peer = peer;
  bad_peer.kernels = {"no_such_kernel"};
  const std::vector<SweepPlan> with_bad_peer = {single, bad_peer};
  EXPECT_TRUE(ExpandSweeps(with_bad_peer, *one, 100).ok());
  items = ExpandSweeps(with_bad_peer, *two, 100);
  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(items.status().message(), HasSubstr("multi-device sweep 1 of the plan: "));

  SweepPlan bad = single;
  bad.sizes = {0};
  const std::vector<SweepPlan> with_bad = {single, bad_peer, bad};
  items = ExpandSweeps(with_bad, *one, 100);
  ASSERT_FALSE(items.ok());
  EXPECT_THAT(items.status().message(), HasSubstr("sweep 2 of the plan: sweep item"));
}

// What a SweepRun reported, in order. Thread-safe.
struct SweepLog {
  std::mutex mu;
  std::vector<std::string> events;
  std::vector<absl::StatusCode> item_codes;
  std::promise<absl::Status> finished;
  SweepCallbacks Callbacks() {
    SweepCallbacks cb;
    cb.on_queued = [this](int index, int) { Add(absl::StrCat("queued ", index)); };
    cb.on_start = [this](int index) { Add(absl::StrCat("start ", index)); };
    cb.on_item = [this](int index, absl::StatusOr<RunResult> result) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(absl::StrCat("done ", index));
      item_codes.push_back(result.status().code());
    };
    cb.on_finished = [this](absl::Status status) { finished.set_value(status); };
    return cb;
  }
  void Add(std::string event) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(std::move(event));
  }
};

TEST(SweepRunTest, EachDevicesChainRunsInOrderAndEveryItemIsReported) {
  auto engine = MakeEngine(2);
  SweepPlan plan = TwoByTwo();
  plan.all_devices = true;
  std::vector<RunSpec> items = *ExpandSweep(plan, *engine, 100);
  SweepLog log;
  std::shared_ptr<SweepRun> run =
      SweepRun::Start(engine.get(), items, absl::InfiniteFuture(), log.Callbacks());
  EXPECT_TRUE(log.finished.get_future().get().ok());
  std::lock_guard<std::mutex> lock(log.mu);
  ASSERT_EQ(log.item_codes.size(), 8u);
  for (absl::StatusCode code : log.item_codes) EXPECT_EQ(code, absl::StatusCode::kOk);
  // Within a device's chain: queued, started and done one item after another.
  for (int device = 0; device < 2; ++device) {
    std::vector<std::string> chain;
    for (const std::string& e : log.events) {
      const int index = std::stoi(e.substr(e.find(' ') + 1));
      if (items[index].device_index == device) chain.push_back(e);
    }
    const int first = device * 4;
    std::vector<std::string> expected;
    for (int i = first; i < first + 4; ++i) {
      expected.push_back(absl::StrCat("queued ", i));
      expected.push_back(absl::StrCat("start ", i));
      expected.push_back(absl::StrCat("done ", i));
    }
    EXPECT_EQ(chain, expected);
  }
}

TEST(SweepRunTest, AFailedVerificationIsThatItemsErrorAndTheRestRun) {
  testing::FakeScript script;
  script.corrupt_output = true;
  auto engine = std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script),
                                         ServerLimits{});
  SweepLog log;
  std::shared_ptr<SweepRun> run = SweepRun::Start(
      engine.get(), *ExpandSweep(TwoByTwo(), *engine, 100), absl::InfiniteFuture(),
      log.Callbacks());
  EXPECT_TRUE(log.finished.get_future().get().ok());
  std::lock_guard<std::mutex> lock(log.mu);
  ASSERT_EQ(log.item_codes.size(), 4u);
  for (absl::StatusCode code : log.item_codes) EXPECT_EQ(code, absl::StatusCode::kInternal);
}

TEST(SweepRunTest, CancelStopsTheChainAndEndsCancelled) {
  std::atomic<bool> release{false};
  testing::FakeScript script;
  script.release = &release;
  auto engine = std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script),
                                         ServerLimits{});
  SweepLog log;
  std::shared_ptr<SweepRun> run = SweepRun::Start(
      engine.get(), *ExpandSweep(TwoByTwo(), *engine, 100), absl::InfiniteFuture(),
      log.Callbacks());
  run->Cancel();
  release = true;
  absl::Status finished = log.finished.get_future().get();
  EXPECT_EQ(finished.code(), absl::StatusCode::kCancelled);
  std::lock_guard<std::mutex> lock(log.mu);
  EXPECT_LE(log.item_codes.size(), 1u);  // the item in flight at most
}

TEST(SweepRunTest, AFirstItemTheQueueRefusesEndsTheSweepWithThatError) {
  std::atomic<bool> release{false};
  testing::FakeScript script;
  script.release = &release;
  ServerLimits limits;
  limits.queue_capacity = 1;
  auto engine = std::make_unique<Engine>(std::make_unique<testing::FakeBackend>(script), limits);
  // Fill the queue: one run holding the worker, one waiting.
  std::vector<RunSpec> fillers = *ExpandSweep(TwoByTwo(), *engine, 100);
  std::vector<std::promise<absl::StatusOr<RunResult>>> done(2);
  std::atomic<bool> started{false};
  for (int i = 0; i < 2; ++i) {
    JobCallbacks cb;
    cb.on_start = [&started] { started = true; };
    cb.on_done = [&done, i](absl::StatusOr<RunResult> r) { done[i].set_value(std::move(r)); };
    ASSERT_TRUE(engine->Submit(fillers[i], absl::InfiniteFuture(), cb, nullptr).ok());
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  SweepLog log;
  std::shared_ptr<SweepRun> run =
      SweepRun::Start(engine.get(), fillers, absl::InfiniteFuture(), log.Callbacks());
  absl::Status finished = log.finished.get_future().get();
  EXPECT_EQ(finished.code(), absl::StatusCode::kResourceExhausted);
  release = true;
  for (auto& d : done) EXPECT_TRUE(d.get_future().get().ok());
}

}  // namespace
}  // namespace gpubench
