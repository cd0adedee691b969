#include "kernels/test_faults.h"

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/status_macros.h"
#include "kernels/catalog.h"
#include "kernels/cpu_backend.h"
#include "kernels/families/families.h"
#include "kernels/test_corrupt.h"
#include "kernels/test_fault_actions.h"

namespace gpubench {
#if GPUBENCH_HAVE_CUDA
namespace cuda {
GPUBENCH_CUDA_LAUNCHER(LaunchFaultTrap);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultOob);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultHang);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultExit);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultAlloc);
GPUBENCH_CUDA_LAUNCHER(LaunchCorruptOneAdd);
GPUBENCH_CUDA_LAUNCHER(LaunchWriteNothingAdd);
}  // namespace cuda
#endif

namespace {

// The CPU backend's forms of the same faults: a trap aborts, a wild store segfaults. Thread 0
// alone acts, so the fault happens once per launch.
GPUBENCH_CPU_KERNEL(FaultTrap) {
  (void)buffers, (void)geometry, (void)thread_end;
  if (thread_begin == 0) std::abort();
}
// A trap's effect as the worker sees it on a GPU: the run fails with a sticky (device-lost)
// error and the worker exits, rather than dying of a signal.
GPUBENCH_CPU_KERNEL(FaultSticky) {
  (void)buffers, (void)geometry, (void)thread_end;
  if (thread_begin == 0) RaiseCpuStickyError("test_fault_sticky");
}
GPUBENCH_CPU_KERNEL(FaultOob) {
  (void)buffers, (void)geometry, (void)thread_end;
  if (thread_begin != 0) return;
  // The zero page is never mapped. Through a volatile variable, so the compiler cannot see the
  // address (and refuse the store as out of bounds).
  volatile uintptr_t address = 8;
  *reinterpret_cast<volatile int*>(address) = 1;
  std::raise(SIGSEGV);
}
GPUBENCH_CPU_KERNEL(FaultHang) {
  (void)buffers, (void)geometry, (void)thread_begin, (void)thread_end;
  test_faults::HangForever();
}
GPUBENCH_CPU_KERNEL(FaultExit) {
  (void)buffers, (void)geometry, (void)thread_end;
  if (thread_begin == 0) test_faults::ExitAbruptly();
}
GPUBENCH_CPU_KERNEL(FaultAlloc) {
  (void)buffers, (void)geometry, (void)thread_end;
  if (thread_begin == 0) test_faults::AllocateWithoutBound();
}

// Wrong results, for verification's tests: the seed's one-float-per-thread add with
// one element off by kCorruption (its index from the seed, kernels/test_corrupt.h), and a kernel
// that writes nothing (the output keeps the all-ones poison: NaN).
GPUBENCH_CPU_KERNEL(CorruptOneAdd) {
  (void)geometry;
  const float* a = buffers.at<const float>(0);
  const float* b = buffers.at<const float>(1);
  float* c = buffers.at<float>(2);
  const int64_t n = buffers.n;
  if (n <= 0) return;
  uint32_t a0 = 0, b0 = 0;
  std::memcpy(&a0, a, sizeof(a0));
  std::memcpy(&b0, b, sizeof(b0));
  const int64_t bad = test_faults::CorruptedIndex(a0, b0, n);
  for (int64_t i = thread_begin; i < thread_end && i < n; ++i) {
    float v = a[i] + b[i];
    if (i == bad) v += test_faults::kCorruption;
    c[i] = v;
  }
}
GPUBENCH_CPU_KERNEL(WriteNothingAdd) { (void)buffers, (void)geometry, (void)thread_begin, (void)thread_end; }

constexpr absl::string_view kProvenance = "gpubench tests: worker fault isolation";
constexpr absl::string_view kWrongProvenance = "gpubench tests: verification catches wrong results";
// The seed's scalar launch: 256 threads, one element each.
constexpr LaunchPolicy kScalar{.block_size = 256, .items_per_thread = 1};

const KernelVariant kFaultVariants[] = {
    {.name = "test_fault_trap",
     .family = &kElementwiseAdd,
     .description = "TEST ONLY: __trap() in every thread (CPU: abort)",
     .provenance = kProvenance,
     .cpu = &FaultTrap,
     .cuda = GPUBENCH_CUDA(LaunchFaultTrap)},
    {.name = "test_fault_sticky",
     .family = &kElementwiseAdd,
     .description = "TEST ONLY: __trap() in every thread (CPU: a sticky device error, not an abort)",
     .provenance = kProvenance,
     .cpu = &FaultSticky,
     .cuda = GPUBENCH_CUDA(LaunchFaultTrap)},
    {.name = "test_fault_oob",
     .family = &kElementwiseAdd,
     .description = "TEST ONLY: a store 1 TiB past the output (CPU: a store to the zero page)",
     .provenance = kProvenance,
     .cpu = &FaultOob,
     .cuda = GPUBENCH_CUDA(LaunchFaultOob)},
    {.name = "test_fault_hang",
     .family = &kElementwiseAdd,
     .description = "TEST ONLY: a kernel that never returns",
     .provenance = kProvenance,
     .cpu = &FaultHang,
     .cuda = GPUBENCH_CUDA(LaunchFaultHang)},
    {.name = "test_fault_exit",
     .family = &kElementwiseAdd,
     .description = "TEST ONLY: the launch exits the process (_exit(7))",
     .provenance = kProvenance,
     .cpu = &FaultExit,
     .cuda = GPUBENCH_CUDA(LaunchFaultExit)},
    {.name = "test_fault_alloc",
     .family = &kElementwiseAdd,
     .description = "TEST ONLY: the launch allocates host memory without bound",
     .provenance = kProvenance,
     .cpu = &FaultAlloc,
     .cuda = GPUBENCH_CUDA(LaunchFaultAlloc)},
};

const KernelVariant kWrongResultVariants[] = {
    {.name = "test_corrupt_one_add_f32",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kScalar,
     .description = "TEST ONLY: c = a + b, except one element (index from the seed) off by 1",
     .provenance = kWrongProvenance,
     .cpu = &CorruptOneAdd,
     .cuda = GPUBENCH_CUDA(LaunchCorruptOneAdd)},
    {.name = "test_write_nothing_add_f32",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kScalar,
     .description = "TEST ONLY: an add kernel that writes nothing",
     .provenance = kWrongProvenance,
     .cpu = &WriteNothingAdd,
     .cuda = GPUBENCH_CUDA(LaunchWriteNothingAdd)},
};

}  // namespace

absl::Status RegisterTestFaultVariants() {
  RETURN_IF_ERROR(RegisterVariants(kFaultVariants));
  return RegisterVariants(kWrongResultVariants);
}

std::span<const KernelVariant> TestWrongResultVariants() { return kWrongResultVariants; }

}  // namespace gpubench
