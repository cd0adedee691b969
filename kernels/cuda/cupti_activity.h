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
//
// Kernels the region did not issue are counted apart (Span::foreign_kernels), for the launch
// count of user kernels (docs/user-kernels.md): a kernel of the recorder's context that started
// strictly inside the region's span without being one of its calls' (another stream's, another
// thread's), and every kernel launched from the device (a CDP_KERNEL record, or a kernel record
// marked isDeviceLaunched: a device-launched graph) that started after the span's start, since
// the host never launches those and a tail-launched child may start after its parent ended.
// Not caught: another stream's kernel that started before the span and still runs in it, or
// that starts after the span ended, or whose record comes back after TakeSpan; device-side
// launches CUPTI emits no record for (CDP records come with CONCURRENT_KERNEL where the device
// and driver support them; the worker refuses the device runtime before any launch); and records
// a kernel overwrote (CUPTI's buffers are memory of the context the kernel runs in).
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
  // the region's GPU operations (gaps between them included), how many there were, how many of
  // them were kernels, and the foreign kernels (above) of the recorder's context; nullopt when
  // no complete record came back. Forgets the region.
  struct Span {
    uint64_t nanoseconds = 0;
    int operations = 0;
    int kernels = 0;
    int foreign_kernels = 0;
  };
  std::optional<Span> TakeSpan(uint64_t region);

 private:
  ActivityRecorder(std::shared_lock<std::shared_mutex> gate, void* context, uint32_t context_id)
      : gate_(std::move(gate)), context_(context), context_id_(context_id) {}
  std::shared_lock<std::shared_mutex> gate_;
  void* context_;        // the CUcontext whose operations it records
  uint32_t context_id_;  // CUPTI's id of it, as kernel records name it
};

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_CUPTI_ACTIVITY_H_
