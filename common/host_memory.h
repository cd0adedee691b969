// How much host memory a new allocation may take: the smaller of the kernel's MemAvailable and
// what every memory cgroup (v2 or v1) from the process's own up to the root still allows. All
// paths are injectable for tests.
#ifndef GPUBENCH_COMMON_HOST_MEMORY_H_
#define GPUBENCH_COMMON_HOST_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace gpubench {

// `cgroup_root` "none" reads no cgroup (MemAvailable only): an explicit choice, never a fallback.
inline constexpr char kNoCgroupRoot[] = "none";
// --cgroup_root's default: /sys/fs/cgroup where CheckCgroupRoot accepts it, else kNoCgroupRoot.
inline constexpr char kAutoCgroupRoot[] = "auto";

struct HostMemorySources {
  std::string meminfo_path = "/proc/meminfo";
  std::string cgroup_root = "/sys/fs/cgroup";  // the cgroup filesystem as the process sees it
  std::string self_cgroup_path = "/proc/self/cgroup";
};

struct HostMemoryBudget {
  std::optional<int64_t> mem_available_bytes;  // /proc/meminfo MemAvailable
  // The binding cgroup: of every level with a limit (the process's own directory and each
  // ancestor up to the root; v1 also its hierarchical_memory_limit), the one with the least left.
  std::optional<int64_t> cgroup_limit_bytes;  // absent: no limit at any level (or no cgroup found)
  std::optional<int64_t> cgroup_usage_bytes;  // that level's usage minus inactive file cache
  std::string cgroup_dir;                     // that level's directory, under the root
  int cgroup_levels_read = 0;                 // directories whose limit file was read
  // min(MemAvailable, limit - usage); absent when neither could be read.
  std::optional<int64_t> available_bytes() const;
  // "MemAvailable 7.10 GiB, cgroup limit 8.00 GiB at /kubepods/pod1 (6.20 GiB in use)"
  std::string Describe() const;
};

// Reads the sources now. Missing files leave fields absent. Thread-safe.
HostMemoryBudget ReadHostMemoryBudget(const HostMemorySources& sources = {});

// The cgroup root that --cgroup_root=`flag` means: `flag` itself, except kAutoCgroupRoot, which is
// /sys/fs/cgroup where it holds a readable memory cgroup and kNoCgroupRoot where not (a host
// without a memory controller, or a sandbox that hides it; the caller says so).
std::string ResolveCgroupRoot(const std::string& flag);

// Start-up check of --cgroup_root: OK for kNoCgroupRoot, or a readable directory that holds a
// memory cgroup (v2: cgroup.controllers or memory.max; v1: memory/memory.limit_in_bytes), so that
// a wrong path is refused instead of silently turning the limit check off.
absl::Status CheckCgroupRoot(const std::string& cgroup_root);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_HOST_MEMORY_H_
