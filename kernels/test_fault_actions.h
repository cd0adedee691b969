// The host-side halves of the test-only fault variants (kernels/test_faults.h), shared by the
// CPU emulation and the CUDA launchers. Host-only; inline so that the CUDA library needs nothing
// from the kernels library.
#ifndef GPUBENCH_KERNELS_TEST_FAULT_ACTIONS_H_
#define GPUBENCH_KERNELS_TEST_FAULT_ACTIONS_H_

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace gpubench::test_faults {

// The worker's exit code when test_fault_exit runs: neither a clean exit nor a device loss.
inline constexpr int kExitCode = 7;

[[noreturn]] inline void ExitAbruptly() { _exit(kExitCode); }

// Allocates and touches 64 MiB after 64 MiB until something stops the process (the supervisor's
// memory guard, RLIMIT_AS, or the kernel's OOM killer, which prefers the worker:
// oom_score_adj 1000). malloc, not new: a new-expression's allocation may be elided.
[[noreturn]] inline void AllocateWithoutBound() {
  constexpr size_t kChunk = size_t{64} << 20;
  for (;;) {
    volatile char* p = static_cast<volatile char*>(std::malloc(kChunk));
    if (p == nullptr) std::abort();  // the address-space limit: end like an OOM kill would
    for (size_t i = 0; i < kChunk; i += 4096) p[i] = 1;
  }
}

[[noreturn]] inline void HangForever() {
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace gpubench::test_faults

#endif  // GPUBENCH_KERNELS_TEST_FAULT_ACTIONS_H_
