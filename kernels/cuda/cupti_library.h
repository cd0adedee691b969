// The CUPTI library, shared by the counter profiler (cupti_profiler.h) and the kernel-duration
// recorder (cupti_activity.h): one dlopen for the process, and one gate that keeps the two from
// using CUPTI at the same time. Host-only.
#ifndef GPUBENCH_KERNELS_CUDA_CUPTI_LIBRARY_H_
#define GPUBENCH_KERNELS_CUDA_CUPTI_LIBRARY_H_

#include <cuda.h>

#include <shared_mutex>
#include <string>

namespace gpubench::cuda {

// The handle of libcupti.so.13 (dlopen'ed at the first call: by name through the loader's path,
// then where CUDA installs put it), or nullptr with `*error` saying why.
void* CuptiLibrary(std::string* error);

// The calling thread's current CUDA context (the runtime's primary context of the current device,
// through the driver entry point: the runtime is linked statically), or nullptr with `*error`.
CUcontext CurrentContext(std::string* error);

// `name` from the CUPTI library `lib` (CuptiLibrary), or nullptr; the first symbol missing sets
// *error ("libcupti has no NAME (CUPTI too old)") unless it already says something.
void* CuptiSymbol(void* lib, const char* name, std::string* error);

// The counter profiler replays kernels with the range profiler while activity recording would
// turn every replay into records: a profiling pass holds this exclusively, each recorder (one per
// run that records kernel durations) holds it shared for as long as it records.
std::shared_mutex& CuptiGate();

}  // namespace gpubench::cuda

#endif  // GPUBENCH_KERNELS_CUDA_CUPTI_LIBRARY_H_
