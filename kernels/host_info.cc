#include "kernels/host_info.h"

#include <sys/utsname.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpubench {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

// "48K" / "1280K" / "32M" as sysfs writes cache sizes.
int64_t ParseSysfsSize(absl::string_view text) {
  int64_t multiplier = 1;
  if (absl::ConsumeSuffix(&text, "K")) multiplier = 1024;
  else if (absl::ConsumeSuffix(&text, "M")) multiplier = 1024 * 1024;
  int64_t value = 0;
  return absl::SimpleAtoi(text, &value) ? value * multiplier : 0;
}

// Value in bytes of a /proc/meminfo line such as "MemAvailable:   1234 kB".
int64_t MeminfoBytes(const std::string& meminfo, absl::string_view key) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view view(line);
    if (!absl::ConsumePrefix(&view, key) || !absl::ConsumePrefix(&view, ":")) continue;
    view = absl::StripAsciiWhitespace(view);
    absl::ConsumeSuffix(&view, " kB");
    int64_t kib = 0;
    if (absl::SimpleAtoi(view, &kib)) return kib * 1024;
  }
  return 0;
}

}  // namespace

HostInfo ReadHostInfo() {
  HostInfo info;
  info.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (absl::StartsWith(line, "model name")) {
        const size_t colon = line.find(':');
        if (colon != std::string::npos) {
          info.cpu_model = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
        }
        break;
      }
    }
  }
  for (int index = 0; index < 8; ++index) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    const std::string level = ReadFirstLine(dir + "level");
    if (level.empty()) break;
    const std::string type = ReadFirstLine(dir + "type");
    const int64_t size = ParseSysfsSize(ReadFirstLine(dir + "size"));
    if (level == "1" && type == "Data") info.l1d_cache_bytes = size;
    if (level == "2") info.l2_cache_bytes = size;
    if (level == "3") info.l3_cache_bytes = size;
  }
  {
    std::ifstream in("/proc/meminfo");
    std::stringstream buffer;
    buffer << in.rdbuf();
    info.total_memory_bytes = MeminfoBytes(buffer.str(), "MemTotal");
    info.available_memory_bytes = MeminfoBytes(buffer.str(), "MemAvailable");
  }
  utsname uts{};
  if (uname(&uts) == 0) info.kernel_release = uts.release;
  return info;
}

}  // namespace gpubench
