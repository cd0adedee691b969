#include "common/host_memory.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"

namespace gpubench {
namespace {

// cgroup v1 writes "no limit" as a huge page-aligned number.
constexpr int64_t kNoLimitAbove = int64_t{1} << 60;

std::optional<int64_t> ReadNumber(const std::string& path) {
  std::string text;
  if (!ReadFileToString(path, &text)) return std::nullopt;
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) return std::nullopt;
  return value;
}

// "key value" lines (memory.stat, or meminfo's "key: value kB").
std::optional<int64_t> ReadKey(const std::string& path, absl::string_view key, int64_t unit) {
  std::string text;
  if (!ReadFileToString(path, &text)) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, key)) continue;
    if (!absl::ConsumePrefix(&line, ":") && !absl::ConsumePrefix(&line, " ")) continue;
    line = absl::StripAsciiWhitespace(line);
    absl::ConsumeSuffix(&line, " kB");
    int64_t value = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &value)) return value * unit;
  }
  return std::nullopt;
}

std::string Gib(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (int64_t{1} << 30));
}

}  // namespace

std::optional<int64_t> HostMemoryBudget::available_bytes() const {
  std::optional<int64_t> out = mem_available_bytes;
  if (cgroup_limit_bytes) {
    const int64_t left = std::max<int64_t>(0, *cgroup_limit_bytes - cgroup_usage_bytes.value_or(0));
    out = out ? std::min(*out, left) : left;
  }
  return out;
}

std::string HostMemoryBudget::Describe() const {
  std::string out = mem_available_bytes ? absl::StrCat("MemAvailable ", Gib(*mem_available_bytes))
                                        : std::string("MemAvailable unknown");
  if (cgroup_limit_bytes) {
    absl::StrAppend(&out, ", cgroup limit ", Gib(*cgroup_limit_bytes), " (",
                    Gib(cgroup_usage_bytes.value_or(0)), " in use)");
  }
  return out;
}

HostMemoryBudget ReadHostMemoryBudget(const HostMemorySources& sources) {
  HostMemoryBudget budget;
  budget.mem_available_bytes = ReadKey(sources.meminfo_path, "MemAvailable", 1024);
  // The process's own cgroup directory: the root itself inside a container (cgroup namespace),
  // else the path /proc/self/cgroup names under the root.
  std::vector<std::string> v2_dirs = {sources.cgroup_root};
  std::vector<std::string> v1_dirs = {sources.cgroup_root + "/memory"};
  std::string self;
  if (ReadFileToString(sources.self_cgroup_path, &self)) {
    for (absl::string_view line : absl::StrSplit(self, '\n', absl::SkipEmpty())) {
      const std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() != 3 || parts[2] == "/") continue;
      if (parts[0] == "0" && parts[1].empty()) {
        v2_dirs.insert(v2_dirs.begin(), absl::StrCat(sources.cgroup_root, parts[2]));
      } else if (absl::StrContains(parts[1], "memory")) {
        v1_dirs.insert(v1_dirs.begin(), absl::StrCat(sources.cgroup_root, "/memory", parts[2]));
      }
    }
  }
  for (const std::string& dir : v2_dirs) {
    std::string max_text;
    if (!ReadFileToString(dir + "/memory.max", &max_text)) continue;
    int64_t limit = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(max_text), &limit)) {  // "max": no limit
      budget.cgroup_limit_bytes = limit;
      const int64_t usage = ReadNumber(dir + "/memory.current").value_or(0);
      const int64_t inactive = ReadKey(dir + "/memory.stat", "inactive_file", 1).value_or(0);
      budget.cgroup_usage_bytes = std::max<int64_t>(0, usage - inactive);
    }
    return budget;
  }
  for (const std::string& dir : v1_dirs) {
    const std::optional<int64_t> limit = ReadNumber(dir + "/memory.limit_in_bytes");
    if (!limit) continue;
    if (*limit < kNoLimitAbove) {
      budget.cgroup_limit_bytes = *limit;
      const int64_t usage = ReadNumber(dir + "/memory.usage_in_bytes").value_or(0);
      const int64_t inactive = ReadKey(dir + "/memory.stat", "total_inactive_file", 1).value_or(0);
      budget.cgroup_usage_bytes = std::max<int64_t>(0, usage - inactive);
    }
    return budget;
  }
  return budget;
}

}  // namespace gpubench
