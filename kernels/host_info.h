// Facts about the host read from /proc and /sys (Linux). Used by the CPU backend's Describe.
#ifndef GPUBENCH_KERNELS_HOST_INFO_H_
#define GPUBENCH_KERNELS_HOST_INFO_H_

#include <cstdint>
#include <string>

namespace gpubench {

struct HostInfo {
  std::string cpu_model;
  int logical_cores = 0;
  int64_t l1d_cache_bytes = 0;
  int64_t l2_cache_bytes = 0;
  int64_t l3_cache_bytes = 0;
  int64_t total_memory_bytes = 0;
  int64_t available_memory_bytes = 0;
  std::string kernel_release;
};

// Reads the host's facts now. Missing files leave fields at 0. Thread-safe.
HostInfo ReadHostInfo();

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_HOST_INFO_H_
