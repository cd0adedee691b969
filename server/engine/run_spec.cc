#include "server/engine/run_spec.h"

namespace gpubench {

const char* CacheModeName(CacheMode mode) { return mode == CacheMode::kHot ? "hot" : "cold"; }

const char* TimerChoiceName(TimerChoice choice) {
  switch (choice) {
    case TimerChoice::kAuto:
      return "auto";
    case TimerChoice::kCupti:
      return "cupti";
    case TimerChoice::kEvents:
      return "events";
    case TimerChoice::kGpuTime:
      return "gpu_time";
  }
  return "unknown";
}

const char* SampleTimerName(SampleTimer timer) {
  switch (timer) {
    case SampleTimer::kCuptiActivity:
      return "cupti_activity";
    case SampleTimer::kCudaEvent:
      return "cuda_event";
    case SampleTimer::kCpuClock:
      return "cpu_clock";
    case SampleTimer::kGpuTimeDuration:
      return "gpu_time_duration";
  }
  return "unknown";
}

}  // namespace gpubench
