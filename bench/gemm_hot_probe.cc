// Where does gpubench's hot GEMM sample lose time against torch's? (issue #17, GEMM 4096.)
// Times batches of BATCH launches of gpubench's own cuBLASLt plan (kernels/cuda/gemm_lt.h, on
// gpubench's generated inputs) between two CUDA events, under several ways of holding the stream,
// interleaved ABBA over ROUNDS rounds of SECONDS each (per mode and round), so that the GPU's
// power and clock state drifts into every mode alike:
//   none       no hold: start event, launches, stop event, synchronize (launch latency included)
//   block      gpubench's hot sample exactly (CudaSession::TimeLaunches): the blocking kernel of
//              kernels/cuda/timing.h (one thread spinning on a flag in mapped pinned host memory,
//              20 us least window), start event, launches, stop event, flag released, synchronize
//   sleep      a fixed-length spin instead of the host-released flag, as torch.cuda._sleep in
//              bench/torch_gemm.py: the same kernel with its flag already set (in device memory),
//              held 1.5 x the previous sample's host queuing time + 20 us (the torch script's rule)
//   block_warm block, plus one untimed launch of the GEMM queued after the blocking kernel and
//              before the start event
//   block_cupti block with CUPTI activity records (kernels/cuda/cupti_activity.h) of the timed
//              launches: the kernels' span (first start to last end) beside the events
//   block_idle block, then the host idles IDLE_US after every sample, as the torch script's
//              per-sample Python overhead leaves the GPU idle (duty cycle ~0.75 there, ~0.85 in
//              gpubench's sampling loop): under a power cap, does the duty cycle move the median?
//   block_idle3x block_idle with three times the idle (duty ~0.5): a second point of the same
//              dose-response
// For each mode: the median per-launch time, its spread (p10, p90), TFLOP/s, the medians of the
// single rounds, the duty cycle (event-timed seconds / wall seconds of the mode's rounds) and the
// SM clock the holding kernel measured (none: no reading); block_cupti adds the span per launch,
// events minus span per batch, and the GPU operations per batch.
//
//   gemm_hot_probe [SIZE=4096] [PRECISIONS=bf16,f16] [SECONDS=0.25] [ROUNDS=4] [BATCH=11]
//   HOT_MODES=none,block,... picks modes (default all seven); HOT_IDLE_US (default 700).
// Plans: the heuristic's first candidate, and the setup trials' choice where it differs (the
// candidate gpubench runs). Needs libcublasLt.so.13 (LD_LIBRARY_PATH; bench/device_lib.sh).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/parallel.h"
#include "kernels/cuda/cupti_activity.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/timing.h"
#include "kernels/gemm.h"

namespace gpubench {
namespace {

using Clock = std::chrono::steady_clock;

#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                   cudaGetErrorString(e_));                                               \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

void CheckOk(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(s.message()).c_str());
    std::exit(1);
  }
}

// gpubench's constants (kernels/cuda/cuda_backend.cc).
constexpr uint64_t kClockWindowNs = 20'000;
constexpr uint64_t kBlockingTimeoutNs = 2'000'000'000;
// Samples of the first 50 ms of each mode's round are dropped: the GPU's power and clock state
// left by the previous mode fades first (the power cap's control loop acts within milliseconds).
constexpr double kSettleSeconds = 0.05;

enum class Mode { kNone, kBlock, kSleep, kBlockWarm, kBlockCupti, kBlockIdle, kBlockIdle3x };
struct ModeName {
  Mode mode;
  const char* name;
};
constexpr ModeName kModes[] = {{Mode::kNone, "none"},           {Mode::kBlock, "block"},
                               {Mode::kSleep, "sleep"},         {Mode::kBlockWarm, "block_warm"},
                               {Mode::kBlockCupti, "block_cupti"}, {Mode::kBlockIdle, "block_idle"},
                               {Mode::kBlockIdle3x, "block_idle3x"}};

struct Sample {
  double seconds = 0;         // events, whole batch
  double clock_hz = 0;        // 0: no reading
  double span_seconds = 0;    // CUPTI, whole batch; 0: none
  int operations = 0;         // CUPTI records in the batch
  bool hold_too_short = false;  // sleep: the host queued longer than the hold
};

struct ModeResult {
  std::vector<Sample> samples;
  std::vector<double> round_medians;  // per-launch seconds
  double timed_seconds = 0;
  double wall_seconds = 0;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

class HotProbe {
 public:
  HotProbe(const cuda::GemmPlan& plan, int candidate, const void* a, const void* b, void* d,
           void* workspace, int64_t workspace_bytes, int batch, double idle_seconds)
      : plan_(plan), candidate_(candidate), a_(a), b_(b), d_(d), workspace_(workspace),
        workspace_bytes_(workspace_bytes), batch_(batch), idle_seconds_(idle_seconds) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&start_));
    CHECK_CUDA(cudaEventCreate(&stop_));
    void* state = nullptr;
    CHECK_CUDA(cudaHostAlloc(&state, sizeof(cuda::BlockingState), cudaHostAllocMapped));
    state_ = static_cast<volatile cuda::BlockingState*>(state);
    *const_cast<cuda::BlockingState*>(state_) = cuda::BlockingState{};
    void* device_state = nullptr;
    CHECK_CUDA(cudaHostGetDevicePointer(&device_state, state, 0));
    device_state_ = static_cast<cuda::BlockingState*>(device_state);
    // The fixed-length spin's state lives in device memory with its flag set: it spins on the
    // clock alone and never reads host memory.
    CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&sleep_state_), sizeof(cuda::BlockingState)));
    cuda::BlockingState preset{};
    preset.release = 1;  // the kernel never clears it: set once
    CHECK_CUDA(cudaMemcpy(sleep_state_, &preset, sizeof(preset), cudaMemcpyHostToDevice));
  }
  ~HotProbe() {
    state_->release = 1;
    cudaStreamSynchronize(stream_);
    cudaFree(sleep_state_);
    cudaFreeHost(const_cast<cuda::BlockingState*>(state_));
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  void Launch() {
    CheckOk(plan_.RunCandidate(candidate_, a_, b_, d_, workspace_, workspace_bytes_, stream_),
            "cublasLtMatmul");
  }
  void Warm(int launches) {
    for (int i = 0; i < launches; ++i) Launch();
    CHECK_CUDA(cudaStreamSynchronize(stream_));
  }

  Sample Take(Mode mode, cuda::ActivityRecorder* recorder) {
    Sample s;
    const bool blocks = mode != Mode::kNone && mode != Mode::kSleep;
    if (blocks) {
      state_->release = 0;
      state_->timed_out = 0;
      state_->clock_cycles = 0;
      state_->clock_ns = 0;
      CHECK_CUDA(static_cast<cudaError_t>(
          cuda::LaunchBlockingKernel(device_state_, kClockWindowNs, kBlockingTimeoutNs, stream_)));
    } else if (mode == Mode::kSleep) {
      CHECK_CUDA(static_cast<cudaError_t>(cuda::LaunchBlockingKernel(
          sleep_state_, static_cast<uint64_t>(hold_seconds_ * 1e9), kBlockingTimeoutNs,
          stream_)));
    }
    const Clock::time_point queue_start = Clock::now();
    if (mode == Mode::kBlockWarm) Launch();
    CHECK_CUDA(cudaEventRecord(start_, stream_));
    uint64_t region = 0;
    if (recorder != nullptr) region = recorder->BeginRegion();
    for (int i = 0; i < batch_; ++i) Launch();
    if (recorder != nullptr) recorder->EndRegion();
    CHECK_CUDA(cudaEventRecord(stop_, stream_));
    const double queued = std::chrono::duration<double>(Clock::now() - queue_start).count();
    if (blocks) state_->release = 1;
    CHECK_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    s.seconds = ms * 1e-3;
    if (blocks) {
      if (state_->timed_out != 0) std::fprintf(stderr, "blocking kernel timed out\n");
      if (state_->clock_ns > 0) {
        s.clock_hz = static_cast<double>(state_->clock_cycles) /
                     static_cast<double>(state_->clock_ns) * 1e9;
      }
    } else if (mode == Mode::kSleep) {
      cuda::BlockingState read{};
      CHECK_CUDA(cudaMemcpy(&read, sleep_state_, sizeof(read), cudaMemcpyDeviceToHost));
      if (read.clock_ns > 0) {
        s.clock_hz = static_cast<double>(read.clock_cycles) / static_cast<double>(read.clock_ns) *
                     1e9;
      }
      s.hold_too_short = queued > hold_seconds_;
      hold_seconds_ = 1.5 * queued + 20e-6;  // bench/torch_gemm.py's rule
    }
    if (recorder != nullptr) {
      if (std::optional<cuda::ActivityRecorder::Span> span = recorder->TakeSpan(region);
          span.has_value()) {
        s.span_seconds = static_cast<double>(span->nanoseconds) * 1e-9;
        s.operations = span->operations;
      }
    }
    if (mode == Mode::kBlockIdle || mode == Mode::kBlockIdle3x) {
      const Clock::time_point until =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                             mode == Mode::kBlockIdle ? idle_seconds_ : 3 * idle_seconds_));
      while (Clock::now() < until) {
      }
    }
    return s;
  }

 private:
  const cuda::GemmPlan& plan_;
  const int candidate_;
  const void* a_;
  const void* b_;
  void* d_;
  void* workspace_;
  const int64_t workspace_bytes_;
  const int batch_;
  const double idle_seconds_;
  double hold_seconds_ = 1e-3;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  volatile cuda::BlockingState* state_ = nullptr;
  cuda::BlockingState* device_state_ = nullptr;
  cuda::BlockingState* sleep_state_ = nullptr;
};

void Report(const char* precision, const std::string& plan_name, const char* mode,
            const ModeResult& r, int batch, double flops) {
  std::vector<double> per_launch, clocks, spans, gaps;
  int operations = 0, short_holds = 0;
  for (const Sample& s : r.samples) {
    per_launch.push_back(s.seconds / batch);
    if (s.clock_hz > 0) clocks.push_back(s.clock_hz / 1e6);
    if (s.span_seconds > 0) {
      spans.push_back(s.span_seconds / batch);
      gaps.push_back((s.seconds - s.span_seconds) * 1e6);
      operations = std::max(operations, s.operations);
    }
    short_holds += s.hold_too_short ? 1 : 0;
  }
  const double median = Percentile(per_launch, 0.5);
  std::vector<std::string> rounds;
  for (double m : r.round_medians) rounds.push_back(std::to_string(m * 1e6).substr(0, 6));
  std::printf("%s,%s,%s,%zu,%.2f,%.2f,%.2f,%.1f,%s,%.3f,%s,%s,%s,%s,%d\n", precision,
              plan_name.c_str(), mode, per_launch.size(), median * 1e6,
              Percentile(per_launch, 0.1) * 1e6, Percentile(per_launch, 0.9) * 1e6,
              flops / median / 1e12, absl::StrJoin(rounds, " ").c_str(),
              r.wall_seconds > 0 ? r.timed_seconds / r.wall_seconds : 0.0,
              clocks.empty() ? "" : std::to_string(static_cast<int>(Percentile(clocks, 0.5))).c_str(),
              spans.empty() ? "" : std::to_string(Percentile(spans, 0.5) * 1e6).c_str(),
              gaps.empty() ? "" : std::to_string(Percentile(gaps, 0.5)).c_str(),
              operations > 0 ? std::to_string(operations).c_str() : "", short_holds);
  std::fflush(stdout);
}

void RunPlan(cuda::GemmPlan& plan, int candidate, const std::string& plan_name,
             const char* precision, const void* a, const void* b, void* d, void* workspace,
             int64_t workspace_bytes, const std::vector<ModeName>& modes, double seconds,
             int rounds, int batch, double idle_seconds) {
  HotProbe probe(plan, candidate, a, b, d, workspace, workspace_bytes, batch, idle_seconds);
  probe.Warm(3);  // gpubench's default warmup_launches
  std::vector<ModeResult> results(modes.size());
  std::vector<bool> skip(modes.size(), false);
  for (int round = 0; round < rounds; ++round) {
    for (size_t j = 0; j < modes.size(); ++j) {
      const size_t i = round % 2 == 0 ? j : modes.size() - 1 - j;  // ABBA
      if (skip[i]) continue;
      std::unique_ptr<cuda::ActivityRecorder> recorder;
      if (modes[i].mode == Mode::kBlockCupti) {
        absl::StatusOr<std::unique_ptr<cuda::ActivityRecorder>> started =
            cuda::ActivityRecorder::Start();
        if (!started.ok()) {
          std::printf("# %s: CUPTI cannot record (%s); mode skipped\n", modes[i].name,
                      std::string(started.status().message()).c_str());
          skip[i] = true;
          continue;
        }
        recorder = *std::move(started);
      }
      std::vector<double> round_samples;
      const Clock::time_point t0 = Clock::now();
      std::optional<Clock::time_point> kept_from;  // the first kept sample's start
      for (double elapsed = 0; elapsed < kSettleSeconds + seconds;
           elapsed = std::chrono::duration<double>(Clock::now() - t0).count()) {
        const Clock::time_point sample_start = Clock::now();
        const Sample s = probe.Take(modes[i].mode, recorder.get());
        if (elapsed < kSettleSeconds) continue;
        if (!kept_from.has_value()) kept_from = sample_start;
        results[i].samples.push_back(s);
        results[i].timed_seconds += s.seconds;
        round_samples.push_back(s.seconds / batch);
      }
      if (kept_from.has_value()) {
        results[i].wall_seconds += std::chrono::duration<double>(Clock::now() - *kept_from).count();
      }
      results[i].round_medians.push_back(Percentile(round_samples, 0.5));
    }
  }
  const double flops = GemmFlops(plan.shape());
  for (size_t i = 0; i < modes.size(); ++i) {
    if (!skip[i]) Report(precision, plan_name, modes[i].name, results[i], batch, flops);
  }
}

int Main(int argc, char** argv) {
  const int64_t size = argc > 1 ? std::atoll(argv[1]) : 4096;
  const std::string precisions = argc > 2 ? argv[2] : "bf16,f16";
  const double seconds = argc > 3 ? std::atof(argv[3]) : 0.25;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 4;
  const int batch = argc > 5 ? std::atoi(argv[5]) : 11;
  const char* idle_env = std::getenv("HOT_IDLE_US");
  const double idle_seconds = (idle_env != nullptr ? std::atof(idle_env) : 700.0) * 1e-6;
  std::vector<ModeName> modes;
  const char* modes_env = std::getenv("HOT_MODES");
  for (const ModeName& m : kModes) {
    if (modes_env == nullptr) {
      modes.push_back(m);
      continue;
    }
    for (absl::string_view want : absl::StrSplit(modes_env, ',')) {
      if (want == m.name) modes.push_back(m);
    }
  }
  if (size <= 0 || seconds <= 0 || rounds <= 0 || batch <= 0 || modes.empty()) {
    std::fprintf(stderr,
                 "usage: gemm_hot_probe [SIZE] [PRECISIONS] [SECONDS] [ROUNDS] [BATCH]; "
                 "HOT_MODES=none,block,sleep,block_warm,block_cupti,block_idle,block_idle3x\n");
    return 2;
  }
  absl::StatusOr<const cuda::CublasLt*> lt = cuda::CublasLt::Shared();
  CheckOk(lt.status(), "cuBLASLt");
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %s, %lld^3, batch %d, %d ABBA rounds of %.2f s per mode, idle %.0f us\n",
              prop.name, (*lt)->version().c_str(), static_cast<long long>(size), batch, rounds,
              seconds, idle_seconds * 1e6);
  std::printf(
      "precision,plan,mode,samples,median_us,p10_us,p90_us,tflops,round_medians_us,duty,"
      "clock_mhz,cupti_span_us,events_minus_span_us_per_batch,operations_per_batch,"
      "hold_too_short\n");
  ParallelPool pool(0);
  const GemmShape shape{size, size, size};
  for (absl::string_view name : absl::StrSplit(precisions, ',')) {
    const GemmPrecisionInfo* info = FindGemmPrecision(name);
    if (info == nullptr || info->precision == GemmPrecision::kF8E4M3) {
      std::printf("# %s: not a precision this probe runs (f16, bf16, tf32, f32, f64)\n",
                  std::string(name).c_str());
      continue;
    }
    const GemmHostData data = GenerateGemmData(info->precision, shape, /*seed=*/1, &pool);
    void *a = nullptr, *b = nullptr, *d = nullptr, *workspace = nullptr;
    CHECK_CUDA(cudaMalloc(&a, data.a.size()));
    CHECK_CUDA(cudaMalloc(&b, data.b.size()));
    CHECK_CUDA(cudaMalloc(&d, static_cast<size_t>(size * size * info->output_bytes)));
    CHECK_CUDA(cudaMemcpy(a, data.a.data(), data.a.size(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, data.b.data(), data.b.size(), cudaMemcpyHostToDevice));
    absl::StatusOr<std::unique_ptr<cuda::GemmPlan>> plan =
        cuda::GemmPlan::Create(**lt, info->precision, shape, prop.name,
                               prop.major * 10 + prop.minor, cuda::kGemmWorkspaceBytes);
    CheckOk(plan.status(), "GemmPlan::Create");
    // The session's workspace rule (kernels/cuda/gemm_cuda.cc).
    int64_t workspace_bytes = cuda::kGemmMinWorkspaceBytes;
    for (int i = 0; i < (*plan)->candidate_count(); ++i) {
      workspace_bytes = std::max(workspace_bytes, (*plan)->Candidate(i).workspace_bytes);
    }
    CHECK_CUDA(cudaMalloc(&workspace, static_cast<size_t>(workspace_bytes)));
    cudaStream_t tune_stream = nullptr;
    CHECK_CUDA(cudaStreamCreateWithFlags(&tune_stream, cudaStreamNonBlocking));
    CheckOk((*plan)->Autotune(a, b, d, workspace, workspace_bytes, tune_stream), "Autotune");
    CHECK_CUDA(cudaStreamDestroy(tune_stream));
    const cuda::GemmAlgorithm& chosen = (*plan)->algorithm();
    const std::string precision(info->name);
    std::printf("# %s first: %s\n", precision.c_str(), (*plan)->Candidate(0).Describe().c_str());
    std::printf("# %s setup trials: %s\n", precision.c_str(), chosen.Describe().c_str());
    std::fflush(stdout);
    RunPlan(**plan, 0, "first", precision.c_str(), a, b, d, workspace, workspace_bytes, modes,
            seconds, rounds, batch, idle_seconds);
    if (chosen.rank != 0) {
      RunPlan(**plan, chosen.rank, "tuned#" + std::to_string(chosen.rank), precision.c_str(), a,
              b, d, workspace, workspace_bytes, modes, seconds, rounds, batch, idle_seconds);
    }
    plan->reset();
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    cudaFree(workspace);
  }
  return 0;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::Main(argc, argv); }
