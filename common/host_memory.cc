#include "common/host_memory.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

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

// The directory `relative` under `base` and each ancestor up to `base` itself, nearest first.
std::vector<std::pair<std::string, std::string>> Chain(const std::string& base,
                                                       absl::string_view relative) {
  std::vector<std::pair<std::string, std::string>> dirs;  // {path, the part under base}
  std::string rel(relative);
  while (!rel.empty() && rel != "/") {
    dirs.emplace_back(base + rel, rel);
    rel.resize(rel.rfind('/'));
  }
  dirs.emplace_back(base, "/");
  return dirs;
}

struct Level {
  int64_t limit = 0, usage = 0;
  std::string dir;
};

// Keeps the level with the least left in `budget`.
void Consider(const Level& level, HostMemoryBudget* budget) {
  const int64_t left = level.limit - level.usage;
  if (budget->cgroup_limit_bytes &&
      *budget->cgroup_limit_bytes - budget->cgroup_usage_bytes.value_or(0) <= left) {
    return;
  }
  budget->cgroup_limit_bytes = level.limit;
  budget->cgroup_usage_bytes = level.usage;
  budget->cgroup_dir = level.dir;
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
    absl::StrAppend(&out, ", cgroup limit ", Gib(*cgroup_limit_bytes), " at ", cgroup_dir, " (",
                    Gib(cgroup_usage_bytes.value_or(0)), " in use)");
  } else if (cgroup_levels_read > 0) {
    absl::StrAppend(&out, ", no cgroup limit");
  }
  return out;
}

HostMemoryBudget ReadHostMemoryBudget(const HostMemorySources& sources) {
  HostMemoryBudget budget;
  budget.mem_available_bytes = ReadKey(sources.meminfo_path, "MemAvailable", 1024);
  if (sources.cgroup_root == kNoCgroupRoot) return budget;
  // The process's own cgroup: the root itself inside a container (cgroup namespace), else the
  // path /proc/self/cgroup names under the root. Every ancestor's limit applies as well (a
  // systemd slice's MemoryMax, a pod-level limit): the smallest headroom of them all binds.
  std::string v2_path, v1_path;
  std::string self;
  if (ReadFileToString(sources.self_cgroup_path, &self)) {
    for (absl::string_view line : absl::StrSplit(self, '\n', absl::SkipEmpty())) {
      const std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() != 3 || !absl::StartsWith(parts[2], "/") ||
          absl::StrContains(parts[2], "..")) {
        continue;
      }
      if (parts[0] == "0" && parts[1].empty()) {
        v2_path = std::string(parts[2]);
      } else if (absl::StrContains(parts[1], "memory")) {
        v1_path = std::string(parts[2]);
      }
    }
  }
  for (const auto& [dir, relative] : Chain(sources.cgroup_root, v2_path)) {
    std::string max_text;
    if (!ReadFileToString(dir + "/memory.max", &max_text)) continue;
    ++budget.cgroup_levels_read;
    int64_t limit = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(max_text), &limit)) continue;  // "max"
    const int64_t usage = ReadNumber(dir + "/memory.current").value_or(0);
    const int64_t inactive = ReadKey(dir + "/memory.stat", "inactive_file", 1).value_or(0);
    Consider({limit, std::max<int64_t>(0, usage - inactive), relative}, &budget);
  }
  if (budget.cgroup_levels_read > 0) return budget;
  const std::string v1_root = sources.cgroup_root + "/memory";
  bool own = true;
  for (const auto& [dir, relative] : Chain(v1_root, v1_path)) {
    const std::optional<int64_t> limit = ReadNumber(dir + "/memory.limit_in_bytes");
    if (!limit) continue;
    ++budget.cgroup_levels_read;
    const int64_t usage = ReadNumber(dir + "/memory.usage_in_bytes").value_or(0);
    const int64_t inactive = ReadKey(dir + "/memory.stat", "total_inactive_file", 1).value_or(0);
    const int64_t used = std::max<int64_t>(0, usage - inactive);
    if (*limit < kNoLimitAbove) Consider({*limit, used, relative}, &budget);
    if (own) {
      // v1 also states the smallest limit of every ancestor, including those a cgroup namespace
      // hides; their usage is unknown, so the own level's usage stands for it (a lower bound).
      const std::optional<int64_t> hierarchical =
          ReadKey(dir + "/memory.stat", "hierarchical_memory_limit", 1);
      if (hierarchical && *hierarchical < kNoLimitAbove) {
        Consider({*hierarchical, used, absl::StrCat(relative, " (hierarchical)")}, &budget);
      }
      own = false;
    }
  }
  return budget;
}

std::string ResolveCgroupRoot(const std::string& flag) {
  if (flag != kAutoCgroupRoot) return flag;
  constexpr char kMount[] = "/sys/fs/cgroup";
  return CheckCgroupRoot(kMount).ok() ? kMount : kNoCgroupRoot;
}

absl::Status CheckCgroupRoot(const std::string& cgroup_root) {
  if (cgroup_root == kNoCgroupRoot) return absl::OkStatus();
  std::error_code error;
  if (!std::filesystem::is_directory(cgroup_root, error)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cgroup_root=", cgroup_root, " is not a directory", error ? ": " : "",
        error ? error.message() : "",
        "; give the cgroup filesystem's mount point (/sys/fs/cgroup) or --cgroup_root=none to "
        "check MemAvailable only"));
  }
  for (const char* marker :
       {"/cgroup.controllers", "/memory.max", "/memory/memory.limit_in_bytes"}) {
    std::string text;
    if (ReadFileToString(cgroup_root + marker, &text)) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--cgroup_root=", cgroup_root,
      " holds no readable memory cgroup (neither cgroup v2's cgroup.controllers or memory.max nor "
      "v1's memory/memory.limit_in_bytes), so no memory limit could be checked; give the cgroup "
      "filesystem's mount point (/sys/fs/cgroup) or --cgroup_root=none to check MemAvailable "
      "only"));
}

}  // namespace gpubench
