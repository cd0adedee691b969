// The worker pool with real gpubench_worker processes on the CPU backend (docs/workers.md): which
// worker measures which run (catalog runs in the catalog worker; user kernels and --compare's
// built-ins in the user-kernel worker), the user-kernel worker's start on demand and its stop when
// idle, and its faults, which end only it and never count toward the device's health.
//
// Each worker refuses a run of the other role (INTERNAL "... was sent a ... run"), so an answer
// that is not that refusal says which worker measured it; the pids say it too.
#include "server/engine/worker_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "kernels/test_faults.h"
#include "server/engine/run_op.h"
#include "tests/eventually.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// PTX is passed through to the device without NVRTC, so these tests need no CUDA toolkit; the
// CPU backend's user-kernel worker answers it FAILED_PRECONDITION "cannot run a user kernel".
constexpr char kPtx[] = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry my_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 n) { ret; }
)";

// How long the tests below wait for a worker to exit or start.
constexpr absl::Duration kWait = absl::Seconds(10);
constexpr absl::Duration kPoll = absl::Milliseconds(20);

class Events {
 public:
  void Add(const WorkerEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    all_.push_back(e);
  }
  std::vector<WorkerEvent> Of(WorkerRole role) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<WorkerEvent> out;
    for (const WorkerEvent& e : all_) {
      if (e.role == role) out.push_back(e);
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<WorkerEvent> all_;
};

class WorkerPoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static const absl::Status registered = RegisterTestFaultVariants();
    ASSERT_TRUE(registered.ok()) << registered;
  }

  void Start(absl::Duration idle, absl::Duration stall = absl::Seconds(1),
             std::vector<std::string> extra_args = {},
             absl::Duration compile_limit = absl::Seconds(30)) {
    WorkerOptions o;
    o.binary = GPUBENCH_WORKER_BINARY;
    o.args = {"--backend=cpu", "--cpu_devices=1", "--cpu_threads=1", "--test_fault_kernels=true"};
    o.args.insert(o.args.end(), extra_args.begin(), extra_args.end());
    o.user_kernel_compile_limit = compile_limit;
    o.user_kernels = true;
    o.user_args = {"--allow_user_kernels=true"};
    o.user_worker_idle = idle;
    // One fault of the catalog worker would mark the device unhealthy: a user-kernel worker's
    // fault counted toward it would show.
    o.max_faults = 1;
    o.stall_timeout = stall;
    absl::StatusOr<std::unique_ptr<WorkerPool>> pool =
        WorkerPool::Start(o, [this](const WorkerEvent& e) { events_.Add(e); });
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
    ServerLimits limits;
    limits.user_kernels.allowed = true;
    engine_ = std::make_unique<Engine>(pool_->MakeBackend(), limits);
    engine_->SetRunner(pool_.get());
  }

  void TearDown() override {
    engine_.reset();  // its queue threads first: they call the pool
    pool_.reset();
  }

  static RunRequest Quick(RunRequest r) {
    r.measurement.min_samples = 3;
    r.measurement.min_time_seconds = 0.001;
    r.measurement.timeout_seconds = 0.2;
    return r;
  }
  static RunRequest Catalog(const std::string& kernel = "add_f32") {
    RunRequest r;
    r.kernel = kernel;
    r.elements = 4096;
    return Quick(r);
  }
  static RunRequest User() {
    RunRequest r;
    r.elements = 4096;
    UserKernelRequest k;
    k.kind = UserCodeKind::kPtx;
    k.code = kPtx;
    k.entry = "my_add";
    k.family = "elementwise_add";
    k.dtype = "f32";
    k.launch.block_size = 256;
    r.user_kernel = k;
    return Quick(r);
  }

  // `request` resolved (in the user-kernel context where asked, as --compare's built-ins are)
  // and measured.
  absl::StatusOr<RunResult> Run(const RunRequest& request, bool user_context = false) {
    absl::StatusOr<RunSpec> spec = engine_->Resolve(request);
    if (!spec.ok()) return spec.status();
    spec->user_context = user_context;
    return RunAndWait(*engine_, *std::move(spec), absl::Now() + absl::Seconds(60));
  }

  static void ExpectUserWorkerAnswer(const absl::StatusOr<RunResult>& r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("cannot run a user kernel"));
  }

  Events events_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(WorkerPoolTest, RolesOfRuns) {
  Start(absl::Minutes(5));
  absl::StatusOr<RunSpec> catalog = engine_->Resolve(Catalog());
  absl::StatusOr<RunSpec> user = engine_->Resolve(User());
  ASSERT_TRUE(catalog.ok() && user.ok()) << catalog.status() << user.status();
  EXPECT_EQ(RoleFor(*catalog), WorkerRole::kCatalog);
  EXPECT_EQ(RoleFor(*user), WorkerRole::kUser);
  catalog->user_context = true;  // --compare's built-ins
  EXPECT_EQ(RoleFor(*catalog), WorkerRole::kUser);
}

// The user-kernel worker has no process until a user kernel needs it; catalog runs never start
// it and never go to it; user kernels and user-context built-ins go to it; the catalog worker's
// process is the same throughout.
TEST_F(WorkerPoolTest, EachRunGoesToTheWorkerOfItsRole) {
  Start(absl::Minutes(5));
  const pid_t catalog = pool_->Pid(0, WorkerRole::kCatalog);
  ASSERT_GT(catalog, 0);
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kUser), -1);
  EXPECT_EQ(pool_->Pids(), std::set<pid_t>{catalog});

  absl::StatusOr<RunResult> plain = Run(Catalog());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->verification.has_value() && plain->verification->passed);
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kUser), -1) << "a catalog run started the user worker";

  ExpectUserWorkerAnswer(Run(User()));
  const pid_t user = pool_->Pid(0, WorkerRole::kUser);
  ASSERT_GT(user, 0);
  EXPECT_NE(user, catalog);
  EXPECT_EQ(pool_->Pids(), (std::set<pid_t>{catalog, user}));  // the NVML busy check's own

  // --compare's built-ins: measured (and verified) in the user-kernel worker, which refuses
  // catalog runs, so a pass says where it ran.
  absl::StatusOr<RunResult> compared = Run(Catalog(), /*user_context=*/true);
  ASSERT_TRUE(compared.ok()) << compared.status();
  EXPECT_TRUE(compared->verification.has_value() && compared->verification->passed);
  absl::StatusOr<RunResult> again = Run(Catalog());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kUser), user);
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kCatalog), catalog);
  const std::vector<WorkerEvent> started = events_.Of(WorkerRole::kUser);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].state, WorkerState::kReady);
  EXPECT_EQ(started[0].fault, "");
}

// Without a run for the idle time the user-kernel worker exits (no fault); the next user kernel
// starts a new one. The catalog worker is untouched.
TEST_F(WorkerPoolTest, TheUserWorkerStopsWhenIdleAndStartsAgainOnDemand) {
  Start(absl::Seconds(1));
  const pid_t catalog = pool_->Pid(0, WorkerRole::kCatalog);
  ExpectUserWorkerAnswer(Run(User()));
  const pid_t first = pool_->Pid(0, WorkerRole::kUser);
  ASSERT_GT(first, 0);
  EXPECT_TRUE(Eventually([&] { return pool_->Pid(0, WorkerRole::kUser) == -1; }, kWait, kPoll));
  EXPECT_NE(kill(first, 0), 0) << "the idle worker's process is still there";
  std::vector<WorkerEvent> events = events_.Of(WorkerRole::kUser);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].state, WorkerState::kIdle);
  EXPECT_EQ(events[1].fault, "") << "an idle stop is not a fault";
  EXPECT_THAT(events[1].reason, HasSubstr("stopped after 1s without a run"));

  ExpectUserWorkerAnswer(Run(User()));
  EXPECT_GT(pool_->Pid(0, WorkerRole::kUser), 0);
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kCatalog), catalog);
  EXPECT_TRUE(pool_->Healthy(0));
}

// Faults in the user-kernel context (an abort, a kernel that never returns): the run fails
// UNAVAILABLE naming the user-kernel worker, that worker alone ends (its next run starts a new
// one), the fault is "user_kernel" and the device stays healthy although one catalog fault would
// mark it unhealthy (max_faults 1). The catalog worker's process and its runs go on.
TEST_F(WorkerPoolTest, AUserWorkerFaultEndsOnlyItAndNeverTheDevicesHealth) {
  Start(absl::Minutes(5));
  const pid_t catalog = pool_->Pid(0, WorkerRole::kCatalog);
  for (const char* fault : {"test_fault_trap", "test_fault_hang"}) {
    SCOPED_TRACE(fault);
    absl::StatusOr<RunResult> r = Run(Catalog(fault), /*user_context=*/true);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("the user-kernel worker of "));
    EXPECT_THAT(r.status().message(), HasSubstr("restarted by the next user-kernel run"));
    EXPECT_TRUE(Eventually([&] { return pool_->Pid(0, WorkerRole::kUser) == -1; }, kWait, kPoll));
    EXPECT_TRUE(pool_->Healthy(0));
    EXPECT_TRUE(pool_->Available(0).ok());
    EXPECT_EQ(pool_->Pid(0, WorkerRole::kCatalog), catalog);
    absl::StatusOr<RunResult> plain = Run(Catalog());
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_TRUE(plain->verification.has_value() && plain->verification->passed);
  }
  for (const WorkerEvent& e : events_.Of(WorkerRole::kUser)) {
    EXPECT_TRUE(e.fault.empty() || e.fault == "user_kernel") << e.fault << ": " << e.reason;
    EXPECT_NE(e.state, WorkerState::kUnhealthy);
  }
  EXPECT_TRUE(events_.Of(WorkerRole::kCatalog).size() <= 1u) << "the catalog worker restarted";
}

// Killed from outside in the middle of a run (one that would never end; the stall watchdog set
// far out): the run names the user-kernel worker's death, the next user kernel gets a new one,
// the catalog worker's process is the same and the device healthy.
TEST_F(WorkerPoolTest, AUserWorkerKilledMidRunRestartsOnlyItself) {
  Start(absl::Minutes(5), /*stall=*/absl::Seconds(60));
  const pid_t catalog = pool_->Pid(0, WorkerRole::kCatalog);
  absl::StatusOr<RunResult> killed;
  std::thread run([&] { killed = Run(Catalog("test_fault_hang"), /*user_context=*/true); });
  // Started (its Hello answered), then the run sent and hung.
  ASSERT_TRUE(Eventually([&] { return !events_.Of(WorkerRole::kUser).empty(); }, kWait, kPoll));
  absl::SleepFor(absl::Milliseconds(500));
  const pid_t user = pool_->Pid(0, WorkerRole::kUser);
  ASSERT_GT(user, 0);
  kill(user, SIGKILL);
  run.join();
  EXPECT_EQ(killed.status().code(), absl::StatusCode::kUnavailable) << killed.status();
  EXPECT_THAT(killed.status().message(), HasSubstr("died with SIGKILL during test_fault_hang"));
  ExpectUserWorkerAnswer(Run(User()));  // a new user-kernel worker
  EXPECT_GT(pool_->Pid(0, WorkerRole::kUser), 0);
  EXPECT_NE(pool_->Pid(0, WorkerRole::kUser), user);
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kCatalog), catalog);
  EXPECT_TRUE(pool_->Healthy(0));
  const std::vector<WorkerEvent> events = events_.Of(WorkerRole::kUser);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[1].fault, "user_kernel");
}

// A worker's PR_SET_PDEATHSIG fires when the *thread* that spawned it ends, not the process. A
// user-kernel worker started on demand must outlive the run's thread: the engine's device-queue
// threads end (here: the engine destroyed) while the pool, and its worker, stay.
TEST_F(WorkerPoolTest, AnOnDemandWorkerOutlivesTheThreadOfTheRunThatStartedIt) {
  Start(absl::Minutes(5));
  ExpectUserWorkerAnswer(Run(User()));
  const pid_t user = pool_->Pid(0, WorkerRole::kUser);
  ASSERT_GT(user, 0);
  engine_.reset();  // joins the device queue's thread, on which the run started the worker
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kUser), user);
  EXPECT_EQ(kill(user, 0), 0) << "the user-kernel worker died with its starting thread";
  for (const WorkerEvent& e : events_.Of(WorkerRole::kUser)) {
    EXPECT_EQ(e.fault, "") << e.reason;
  }
}

// A sticky device error (the CPU backend's emulation of a trap): the worker answers the run, then
// exits. The next run, sent at once, waits for a new worker instead of going to the exiting one
// (which would fail it "exited after a sticky device error" without running it). The worker
// takes 300 ms to exit, as a CUDA context's teardown may (a CPU worker's exit is instant).
TEST_F(WorkerPoolTest, TheRunAfterAStickyErrorWaitsForTheNewWorker) {
  Start(absl::Minutes(5), absl::Seconds(1), {"--test_device_lost_exit_delay_ms=300"});
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const pid_t before = pool_->Pid(0, WorkerRole::kUser);
    absl::StatusOr<RunResult> lost = Run(Catalog("test_fault_sticky"), /*user_context=*/true);
    EXPECT_EQ(lost.status().code(), absl::StatusCode::kInternal) << lost.status();
    EXPECT_THAT(lost.status().message(), HasSubstr("a sticky device error"));
    EXPECT_THAT(lost.status().message(), HasSubstr("exits to drop the poisoned context"));
    ExpectUserWorkerAnswer(Run(User()));
    const pid_t after = pool_->Pid(0, WorkerRole::kUser);
    EXPECT_GT(after, 0);
    if (before > 0) {
      EXPECT_NE(after, before);
    }
  }
  EXPECT_TRUE(pool_->Healthy(0));
  for (const WorkerEvent& e : events_.Of(WorkerRole::kUser)) {
    EXPECT_TRUE(e.fault.empty() || e.fault == "user_kernel") << e.fault << ": " << e.reason;
  }
}

#if GPUBENCH_TEST_HAVE_NVRTC
// A compile that follows a quick run is bounded by the compile limit, not by the stall rule. The
// heartbeats are slow (0.7 s), so the first one the compile's run sees may carry the previous
// run's last progress; a supervisor that took that for the compile's progress (H200,
// 2026-12-06) killed it as a kernel that never returns after the stall time (1 s here).
TEST_F(WorkerPoolTest, ACompileAfterAQuickRunIsBoundedByTheCompileLimitNotTheStallRule) {
  Start(absl::Minutes(5), /*stall=*/absl::Seconds(1), {"--heartbeat_interval_ms=700"},
        /*compile_limit=*/absl::Seconds(4));
  // 2^30 distinct instantiations: never compiled in 4 s.
  RunRequest bomb = User();
  bomb.user_kernel->kind = UserCodeKind::kSource;
  bomb.user_kernel->code =
      "template <int N, int K> struct X {\n"
      "  static constexpr long long v = X<N - 1, 2 * K>::v + X<N - 1, 2 * K + 1>::v;\n};\n"
      "template <int K> struct X<0, K> { static constexpr long long v = 1; };\n"
      "__device__ long long sink = X<30, 0>::v;\n"
      "extern \"C\" __global__ void my_add(const float* a, const float* b, float* c, long long n) "
      "{}\n";
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    absl::StatusOr<RunResult> quick = Run(Catalog(), /*user_context=*/true);
    ASSERT_TRUE(quick.ok()) << quick.status();
    absl::StatusOr<RunResult> r = Run(bomb);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("the user kernel's compile ran over 4s"));
  }
  EXPECT_TRUE(pool_->Healthy(0));
}
#endif

// The catalog worker's own fault still counts: with max_faults 1, one marks the device unhealthy,
// and then user kernels are refused too (the device is given up, whichever worker would run).
TEST_F(WorkerPoolTest, ACatalogFaultStillCountsTowardTheDevicesHealth) {
  Start(absl::Minutes(5));
  absl::StatusOr<RunResult> r = Run(Catalog("test_fault_trap"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("the device is marked unhealthy"));
  EXPECT_FALSE(pool_->Healthy(0));
  absl::StatusOr<RunSpec> user = engine_->Resolve(User());
  ASSERT_TRUE(user.ok()) << user.status();
  JobCallbacks callbacks;
  callbacks.on_done = [](absl::StatusOr<RunResult>) {};
  absl::StatusOr<std::shared_ptr<Job>> refused =
      engine_->Submit(*user, absl::Now() + absl::Seconds(10), callbacks, nullptr);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(pool_->Pid(0, WorkerRole::kUser), -1);
}

// Without user kernels the pool has no user-kernel workers and refuses a run that needs one.
TEST(WorkerPoolWithoutUserKernels, HasNoUserWorker) {
  WorkerOptions o;
  o.binary = GPUBENCH_WORKER_BINARY;
  o.args = {"--backend=cpu", "--cpu_devices=1", "--cpu_threads=1"};
  absl::StatusOr<std::unique_ptr<WorkerPool>> pool = WorkerPool::Start(o, nullptr);
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)->Pid(0, WorkerRole::kUser), -1);
  RunSpec spec;
  spec.user_context = true;
  absl::Status refused = (*pool)->Prepare(spec, [] { return false; });
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("--allow_user_kernels"));
}

}  // namespace
}  // namespace gpubench
