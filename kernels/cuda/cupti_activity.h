// Kernel durations from CUPTI activity records: the device timestamps of the GPU operations
// (kernels, memcpys, memsets) that a region of host code issued, the same timestamps Nsight
// Systems shows and close to what Nsight Compute's gpu__time_duration measures. Host-only; no
// gRPC/protobuf. libcupti is loaded with dlopen (cupti_library.h), so the server runs without it.
//
// How a region's operations are found: the thread pushes an external correlation id before the
// timed launches and pops it after; CUPTI then emits an external-correlation record for every
// runtime/driver API call made in between, naming the call's correlation id, which the kernel /
// memcpy / memset records of that call carry too. Operations issued outside the region (the L2
// flush, the blocking kernel, warm-up) are not counted.
#ifndef GPUBENCH_KERNELS_CUDA_CUPTI_ACTIVITY_H_
#define GPUBENCH_KERNELS_CUDA_CUPTI_ACTIVITY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>

#include "absl/status/statusor.h"

namespace gpubench::cuda {

// Records while it exists, the operations of the context current at Start (the run's device):
// the first recorder of a context enables the operation kinds for it, the first of the process
// the API kinds; the last ones disable them (several devices' runs may record at once). Holds CuptiGate() shared,
// so the counter profiler waits until no run records. Use from one thread (the run's).
class ActivityRecorder {
 public:
  // FAILED_PRECONDITION with the reason where CUPTI cannot record (library missing or too old,
  // an enable refused, e.g. by another tool holding CUPTI).
  static absl::StatusOr<std::unique_ptr<ActivityRecorder>> Start();
  ~ActivityRecorder();
  ActivityRecorder(const ActivityRecorder&) = delete;
  ActivityRecorder& operator=(const ActivityRecorder&) = delete;

  // Marks the calling thread's API calls from now until EndRegion as the region's; returns its id.
  uint64_t BeginRegion();
  void EndRegion();

  // After the region's work has completed on the device (the caller synchronized): flushes
  // CUPTI's buffers and returns the nanoseconds from the earliest start to the latest end among
  // the region's GPU operations (gaps between them included), and how many there were; nullopt
  // when no complete record came back. Forgets the region.
  struct Span {
    uint64_t nanoseconds = 0;
    int operations = 0;
  };
  std::optional<Span> TakeSpan(uint64_t region);

 private:
  ActivityRecorder(std::shared_lock<std::shared_mutex> gate, void* context)
      : gate_(std::move(gate)), context_(context) {}
  std::shared_lock<std::shared_mutex> gate_;
  void* context_;  // the CUcontext whose operations it records
};

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_CUPTI_ACTIVITY_H_
