#include "kernels/test_faults.h"

#include <csignal>
#include <cstdint>
#include <cstdlib>

#include "kernels/catalog.h"
#include "kernels/families/families.h"
#include "kernels/test_fault_actions.h"

namespace gpubench {
#if GPUBENCH_HAVE_CUDA
namespace cuda {
GPUBENCH_CUDA_LAUNCHER(LaunchFaultTrap);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultOob);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultHang);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultExit);
GPUBENCH_CUDA_LAUNCHER(LaunchFaultAlloc);
}  // namespace cuda
#endif

namespace {

// The CPU backend's forms of the same faults: a trap aborts, a wild store segfaults. Thread 0
// alone acts, so the fault happens once per launch.
GPUBENCH_CPU_KERNEL(FaultTrap) {
  (void)buffers, (void)geometry, (void)thread_end;
  if (thread_begin == 0) std::abort();
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

constexpr absl::string_view kProvenance = "gpubench tests: worker fault isolation";

const KernelVariant kFaultVariants[] = {
    {.name = "test_fault_trap",
     .family = &kElementwiseAdd,
     .description = "TEST ONLY: __trap() in every thread (CPU: abort)",
     .provenance = kProvenance,
     .cpu = &FaultTrap,
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

}  // namespace

absl::Status RegisterTestFaultVariants() { return RegisterVariants(kFaultVariants); }

}  // namespace gpubench
