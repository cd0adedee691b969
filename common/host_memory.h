// How much host memory a new allocation may take: the smaller of the kernel's MemAvailable and
// what the process's memory cgroup (v2 or v1) still allows. Both paths are injectable for tests.
#ifndef GPUBENCH_COMMON_HOST_MEMORY_H_
#define GPUBENCH_COMMON_HOST_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>

namespace gpubench {

struct HostMemorySources {
  std::string meminfo_path = "/proc/meminfo";
  std::string cgroup_root = "/sys/fs/cgroup";  // the cgroup filesystem as the process sees it
  std::string self_cgroup_path = "/proc/self/cgroup";
};

struct HostMemoryBudget {
  std::optional<int64_t> mem_available_bytes;      // /proc/meminfo MemAvailable
  std::optional<int64_t> cgroup_limit_bytes;       // absent: no limit (or no cgroup found)
  std::optional<int64_t> cgroup_usage_bytes;       // usage minus inactive file cache
  // min(MemAvailable, limit - usage); absent when neither could be read.
  std::optional<int64_t> available_bytes() const;
  std::string Describe() const;  // "MemAvailable 7.1 GiB, cgroup limit 8 GiB (6.2 GiB used)"
};

// Reads the sources now. Missing files leave fields absent. Thread-safe.
HostMemoryBudget ReadHostMemoryBudget(const HostMemorySources& sources = {});

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_HOST_MEMORY_H_
