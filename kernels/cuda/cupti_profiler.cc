#include "kernels/cuda/cupti_profiler.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/cuda/cupti_library.h"

namespace gpubench::cuda {
namespace {

// A CUPTI parameter struct: zeroed, with its size set (what the _STRUCT_SIZE initializer idiom
// does, without naming each member).
template <typename Params>
Params CuptiParams(size_t struct_size) {
  Params params{};
  params.structSize = struct_size;
  return params;
}

// The CUPTI entry points used, resolved by CuptiSymbol; the declarations come from the headers.
struct Cupti {
#define GPUBENCH_CUPTI_FN(name) decltype(&::name) name = nullptr
  GPUBENCH_CUPTI_FN(cuptiGetResultString);
  GPUBENCH_CUPTI_FN(cuptiProfilerInitialize);
  GPUBENCH_CUPTI_FN(cuptiProfilerDeInitialize);
  GPUBENCH_CUPTI_FN(cuptiDeviceGetChipName);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerEnable);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerDisable);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerGetCounterDataSize);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerCounterDataImageInitialize);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerSetConfig);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerStart);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerStop);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerDecodeData);
  GPUBENCH_CUPTI_FN(cuptiRangeProfilerGetCounterDataInfo);
  GPUBENCH_CUPTI_FN(cuptiProfilerHostInitialize);
  GPUBENCH_CUPTI_FN(cuptiProfilerHostDeinitialize);
  GPUBENCH_CUPTI_FN(cuptiProfilerHostConfigAddMetrics);
  GPUBENCH_CUPTI_FN(cuptiProfilerHostGetConfigImageSize);
  GPUBENCH_CUPTI_FN(cuptiProfilerHostGetConfigImage);
  GPUBENCH_CUPTI_FN(cuptiProfilerHostEvaluateToGpuValues);
#undef GPUBENCH_CUPTI_FN
  std::string load_error;
};

const Cupti& LoadCupti() {
  static const Cupti* cupti = [] {
    auto* c = new Cupti();
    void* lib = CuptiLibrary(&c->load_error);
    if (lib == nullptr) return c;
#define GPUBENCH_LOAD(name) \
  c->name = reinterpret_cast<decltype(c->name)>(CuptiSymbol(lib, #name, &c->load_error))
    GPUBENCH_LOAD(cuptiGetResultString);
    GPUBENCH_LOAD(cuptiProfilerInitialize);
    GPUBENCH_LOAD(cuptiProfilerDeInitialize);
    GPUBENCH_LOAD(cuptiDeviceGetChipName);
    GPUBENCH_LOAD(cuptiRangeProfilerEnable);
    GPUBENCH_LOAD(cuptiRangeProfilerDisable);
    GPUBENCH_LOAD(cuptiRangeProfilerGetCounterDataSize);
    GPUBENCH_LOAD(cuptiRangeProfilerCounterDataImageInitialize);
    GPUBENCH_LOAD(cuptiRangeProfilerSetConfig);
    GPUBENCH_LOAD(cuptiRangeProfilerStart);
    GPUBENCH_LOAD(cuptiRangeProfilerStop);
    GPUBENCH_LOAD(cuptiRangeProfilerDecodeData);
    GPUBENCH_LOAD(cuptiRangeProfilerGetCounterDataInfo);
    GPUBENCH_LOAD(cuptiProfilerHostInitialize);
    GPUBENCH_LOAD(cuptiProfilerHostDeinitialize);
    GPUBENCH_LOAD(cuptiProfilerHostConfigAddMetrics);
    GPUBENCH_LOAD(cuptiProfilerHostGetConfigImageSize);
    GPUBENCH_LOAD(cuptiProfilerHostGetConfigImage);
    GPUBENCH_LOAD(cuptiProfilerHostEvaluateToGpuValues);
#undef GPUBENCH_LOAD
    return c;
  }();
  return *cupti;
}

constexpr const char* kMetrics[] = {"sm__warps_active.avg.pct_of_peak_sustained_active",
                                    "dram__throughput.avg.pct_of_peak_sustained_elapsed"};
// A kernel's duration on the GPU in nanoseconds, the figure Nsight Compute reports as Duration.
constexpr const char* kTimeMetric = "gpu__time_duration.sum";
// Kernels one measured launch may run (library launches such as CUB's run one or two).
constexpr size_t kMaxKernelsPerMeasure = 16;

// One range-profiler session on a device's context: configured once for `metrics` (Open), then
// any number of collections (Collect), each an auto range per kernel the launch function enqueues.
// Every method returns an empty string on success or the failing step.
class RangeSession {
 public:
  explicit RangeSession(const Cupti& c) : c_(c) {}
  ~RangeSession() {
    if (host_ != nullptr) {
      auto p = CuptiParams<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
      p.pHostObject = host_;
      c_.cuptiProfilerHostDeinitialize(&p);
    }
    if (object_ != nullptr) {
      auto p = CuptiParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      p.pRangeProfilerObject = object_;
      c_.cuptiRangeProfilerDisable(&p);
    }
    if (initialized_) {
      auto p = CuptiParams<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
      c_.cuptiProfilerDeInitialize(&p);
    }
  }
  RangeSession(const RangeSession&) = delete;
  RangeSession& operator=(const RangeSession&) = delete;

  std::string Fail(const char* step, CUptiResult r) {
    const char* text = "unknown";
    c_.cuptiGetResultString(r, &text);
    const char* hint = "";
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
      hint = " (counters need root or NVreg_RestrictProfilingToAdminUsers=0)";
    } else if (r == CUPTI_ERROR_HARDWARE_BUSY || r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ||
               r == CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED) {
      // The counters are one driver-wide resource: dcgm-exporter's profiling metrics (DCP,
      // DCGM_FI_PROF_*) or an Nsight tool holding them makes every other profiler fail.
      hint = " (profiling conflict: another profiler holds this GPU's counters, typically DCGM's "
             "profiling metrics (dcgm-exporter DCGM_FI_PROF_*; pause them with `dcgmi profile "
             "--pause`, resume with `dcgmi profile --resume`) or an Nsight Compute/Systems "
             "session)";
    }
    return absl::StrCat(step, " failed: ", text, hint);
  }

  // Enables the range profiler on `device`'s context for `metrics` (which must outlive the
  // session), with room for `max_ranges` kernels per collection.
  std::string Open(int device, std::vector<const char*> metrics, size_t max_ranges,
                   CUpti_ProfilerReplayMode replay) {
    metrics_ = std::move(metrics);
    max_ranges_ = max_ranges;
    replay_ = replay;
    if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
      return "cannot make the device's context current";
    }
    std::string context_error;
    CUcontext ctx = CurrentContext(&context_error);
    if (ctx == nullptr) return context_error;

    auto init = CuptiParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    if (CUptiResult r = c_.cuptiProfilerInitialize(&init); r != CUPTI_SUCCESS) {
      return Fail("cuptiProfilerInitialize", r);
    }
    initialized_ = true;
    auto chip = CuptiParams<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    chip.deviceIndex = static_cast<size_t>(device);
    if (CUptiResult r = c_.cuptiDeviceGetChipName(&chip); r != CUPTI_SUCCESS) {
      return Fail("cuptiDeviceGetChipName", r);
    }
    auto enable = CuptiParams<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    enable.ctx = ctx;
    if (CUptiResult r = c_.cuptiRangeProfilerEnable(&enable); r != CUPTI_SUCCESS) {
      return Fail("cuptiRangeProfilerEnable (is another profiler such as ncu attached?)", r);
    }
    object_ = enable.pRangeProfilerObject;

    auto host = CuptiParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip.pChipName;
    if (CUptiResult r = c_.cuptiProfilerHostInitialize(&host); r != CUPTI_SUCCESS) {
      return Fail("cuptiProfilerHostInitialize", r);
    }
    host_ = host.pHostObject;
    auto add = CuptiParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host_;
    add.ppMetricNames = metrics_.data();
    add.numMetrics = metrics_.size();
    if (CUptiResult r = c_.cuptiProfilerHostConfigAddMetrics(&add); r != CUPTI_SUCCESS) {
      return Fail("cuptiProfilerHostConfigAddMetrics", r);
    }
    auto size = CuptiParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = host_;
    if (CUptiResult r = c_.cuptiProfilerHostGetConfigImageSize(&size); r != CUPTI_SUCCESS) {
      return Fail("cuptiProfilerHostGetConfigImageSize", r);
    }
    config_.assign(size.configImageSize, 0);
    auto image = CuptiParams<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    image.pHostObject = host_;
    image.pConfigImage = config_.data();
    image.configImageSize = config_.size();
    if (CUptiResult r = c_.cuptiProfilerHostGetConfigImage(&image); r != CUPTI_SUCCESS) {
      return Fail("cuptiProfilerHostGetConfigImage", r);
    }
    auto data_size = CuptiParams<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    data_size.pRangeProfilerObject = object_;
    data_size.pMetricNames = metrics_.data();
    data_size.numMetrics = metrics_.size();
    data_size.maxNumOfRanges = max_ranges_;
    data_size.maxNumRangeTreeNodes = max_ranges_;
    if (CUptiResult r = c_.cuptiRangeProfilerGetCounterDataSize(&data_size); r != CUPTI_SUCCESS) {
      return Fail("cuptiRangeProfilerGetCounterDataSize", r);
    }
    counter_data_.assign(data_size.counterDataSize, 0);
    return "";
  }

  // Runs `launch` under the profiler, one auto range per kernel it enqueues (at most max_ranges),
  // waits for the device, and fills (*values)[range][metric] for every range profiled.
  std::string Collect(const std::function<int()>& launch,
                      std::vector<std::vector<double>>* values) {
    // A fresh counter-data image and configuration for every collection: each holds only its
    // own ranges.
    auto init_data = CuptiParams<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init_data.pRangeProfilerObject = object_;
    init_data.pCounterData = counter_data_.data();
    init_data.counterDataSize = counter_data_.size();
    if (CUptiResult r = c_.cuptiRangeProfilerCounterDataImageInitialize(&init_data);
        r != CUPTI_SUCCESS) {
      return Fail("cuptiRangeProfilerCounterDataImageInitialize", r);
    }
    auto set = CuptiParams<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    set.pRangeProfilerObject = object_;
    set.configSize = config_.size();
    set.pConfig = config_.data();
    set.counterDataImageSize = counter_data_.size();
    set.pCounterDataImage = counter_data_.data();
    set.range = CUPTI_AutoRange;
    set.replayMode = replay_;
    set.maxRangesPerPass = max_ranges_;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 0;
    if (CUptiResult r = c_.cuptiRangeProfilerSetConfig(&set); r != CUPTI_SUCCESS) {
      return Fail("cuptiRangeProfilerSetConfig", r);
    }
    auto start = CuptiParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    start.pRangeProfilerObject = object_;
    if (CUptiResult r = c_.cuptiRangeProfilerStart(&start); r != CUPTI_SUCCESS) {
      return Fail("cuptiRangeProfilerStart", r);
    }
    const int launch_error = launch();
    const cudaError_t sync_error = cudaDeviceSynchronize();
    auto stop = CuptiParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    stop.pRangeProfilerObject = object_;
    const CUptiResult stop_result = c_.cuptiRangeProfilerStop(&stop);
    if (launch_error != 0 || sync_error != cudaSuccess) {
      return absl::StrCat("the profiled launch failed: ",
                          cudaGetErrorString(static_cast<cudaError_t>(
                              launch_error != 0 ? launch_error : sync_error)));
    }
    if (stop_result != CUPTI_SUCCESS) return Fail("cuptiRangeProfilerStop", stop_result);
    auto decode = CuptiParams<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = object_;
    if (CUptiResult r = c_.cuptiRangeProfilerDecodeData(&decode); r != CUPTI_SUCCESS) {
      return Fail("cuptiRangeProfilerDecodeData", r);
    }
    auto info = CuptiParams<CUpti_RangeProfiler_GetCounterDataInfo_Params>(CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = counter_data_.data();
    info.counterDataImageSize = counter_data_.size();
    if (CUptiResult r = c_.cuptiRangeProfilerGetCounterDataInfo(&info); r != CUPTI_SUCCESS) {
      return Fail("cuptiRangeProfilerGetCounterDataInfo", r);
    }
    values->assign(info.numTotalRanges, std::vector<double>(metrics_.size()));
    for (size_t range = 0; range < info.numTotalRanges; ++range) {
      auto eval = CuptiParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
      eval.pHostObject = host_;
      eval.pCounterDataImage = counter_data_.data();
      eval.counterDataImageSize = counter_data_.size();
      eval.ppMetricNames = metrics_.data();
      eval.numMetrics = metrics_.size();
      eval.rangeIndex = range;
      eval.pMetricValues = (*values)[range].data();
      if (CUptiResult r = c_.cuptiProfilerHostEvaluateToGpuValues(&eval); r != CUPTI_SUCCESS) {
        return Fail("cuptiProfilerHostEvaluateToGpuValues", r);
      }
    }
    return "";
  }

 private:
  const Cupti& c_;
  std::vector<const char*> metrics_;
  size_t max_ranges_ = 0;
  CUpti_ProfilerReplayMode replay_ = CUPTI_KernelReplay;
  std::vector<uint8_t> config_;
  std::vector<uint8_t> counter_data_;
  bool initialized_ = false;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

}  // namespace

CounterValues ProfileKernel(int device, const std::function<int()>& launch) {
  // One profiling pass at a time in the process, and none while a run records kernel durations.
  std::unique_lock<std::shared_mutex> lock(CuptiGate());
  CounterValues out;
  const Cupti& cupti = LoadCupti();
  if (!cupti.load_error.empty()) {
    out.unavailable_reason = cupti.load_error;
    return out;
  }
  RangeSession session(cupti);
  // Kernel replay: CUPTI saves and restores memory between the passes the two metrics need.
  out.unavailable_reason = session.Open(device, {std::begin(kMetrics), std::end(kMetrics)},
                                        /*max_ranges=*/4, CUPTI_KernelReplay);
  std::vector<std::vector<double>> values;
  if (out.unavailable_reason.empty()) out.unavailable_reason = session.Collect(launch, &values);
  if (out.unavailable_reason.empty() && values.empty()) {
    out.unavailable_reason = "no kernel range was profiled";
  }
  if (out.unavailable_reason.empty()) {
    out.warps_active_pct = values[0][0];  // the first kernel's
    out.dram_throughput_pct = values[0][1];
  }
  return out;
}

struct KernelTimeProfiler::Impl {
  explicit Impl(const Cupti& c) : session(c) {}
  std::unique_lock<std::shared_mutex> gate;
  RangeSession session;
};

absl::StatusOr<std::unique_ptr<KernelTimeProfiler>> KernelTimeProfiler::Start(int device) {
  const Cupti& cupti = LoadCupti();
  if (!cupti.load_error.empty()) return absl::FailedPreconditionError(cupti.load_error);
  auto impl = std::make_unique<Impl>(cupti);
  // Exclusive, as a counter pass: activity records of other runs would see the profiler's work.
  impl->gate = std::unique_lock<std::shared_mutex>(CuptiGate());
  // One pass suffices for the one metric: nothing is replayed, so the launch runs once, as is.
  if (std::string e = impl->session.Open(device, {kTimeMetric}, kMaxKernelsPerMeasure,
                                         CUPTI_KernelReplay);
      !e.empty()) {
    return absl::FailedPreconditionError(e);
  }
  return std::unique_ptr<KernelTimeProfiler>(new KernelTimeProfiler(std::move(impl)));
}

KernelTimeProfiler::KernelTimeProfiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KernelTimeProfiler::~KernelTimeProfiler() = default;

absl::StatusOr<KernelTimeProfiler::Durations> KernelTimeProfiler::Measure(
    const std::function<int()>& launch) {
  std::vector<std::vector<double>> values;
  if (std::string e = impl_->session.Collect(launch, &values); !e.empty()) {
    return absl::UnavailableError(absl::StrCat("the gpu__time_duration counter: ", e));
  }
  Durations d;
  for (const std::vector<double>& range : values) d.seconds += range[0] * 1e-9;  // ns
  d.kernels = static_cast<int>(values.size());
  return d;
}

}  // namespace gpubench::cuda
