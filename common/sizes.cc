#include "common/sizes.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench {

absl::StatusOr<int64_t> ParseElementCount(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (s.empty()) return absl::InvalidArgumentError("size is empty");
  size_t digits = 0;
  while (digits < s.size() && absl::ascii_isdigit(s[digits])) ++digits;
  if (digits == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("size '", text, "' must start with digits, e.g. 1024, 16M, 256Mi"));
  }
  uint64_t base = 0;
  if (!absl::SimpleAtoi(s.substr(0, digits), &base)) {
    return absl::InvalidArgumentError(absl::StrCat("size '", text, "' is too large"));
  }
  // Exactly the documented spellings: case matters ('m' is milli in SI, not mega), so anything
  // else is refused rather than guessed. 'k' is SI's own spelling of kilo.
  const absl::string_view suffix = s.substr(digits);
  uint64_t multiplier = 1;
  if (suffix.empty()) {
    multiplier = 1;
  } else if (suffix == "K" || suffix == "k") {
    multiplier = 1000ULL;
  } else if (suffix == "M") {
    multiplier = 1000ULL * 1000;
  } else if (suffix == "G") {
    multiplier = 1000ULL * 1000 * 1000;
  } else if (suffix == "Ki") {
    multiplier = 1ULL << 10;
  } else if (suffix == "Mi") {
    multiplier = 1ULL << 20;
  } else if (suffix == "Gi") {
    multiplier = 1ULL << 30;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "size '", text, "' has unknown suffix '", suffix,
        "' (use K, M, G for powers of 1000 or Ki, Mi, Gi for powers of 1024; case matters)"));
  }
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (base > kMax / multiplier) {
    return absl::InvalidArgumentError(absl::StrCat("size '", text, "' overflows int64"));
  }
  const uint64_t value = base * multiplier;
  if (value == 0) return absl::InvalidArgumentError("size must be at least 1 element");
  return static_cast<int64_t>(value);
}

std::string FormatElementCount(int64_t count) {
  struct Unit {
    int64_t factor;
    const char* suffix;
  };
  static constexpr Unit kUnits[] = {{1LL << 30, "Gi"}, {1LL << 20, "Mi"}, {1LL << 10, "Ki"},
                                    {1000000000LL, "G"}, {1000000LL, "M"}, {1000LL, "K"}};
  // The exact form with the smallest number: 16000000 -> "16M", 268435456 -> "256Mi".
  const Unit* best = nullptr;
  for (const Unit& unit : kUnits) {
    if (count >= unit.factor && count % unit.factor == 0 &&
        (best == nullptr || count / unit.factor < count / best->factor)) {
      best = &unit;
    }
  }
  if (best != nullptr) return absl::StrCat(count / best->factor, best->suffix);
  return absl::StrCat(count);
}

std::string FormatBytesPerSecond(double bytes_per_second) {
  static constexpr const char* kUnits[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  int unit = 0;
  double value = bytes_per_second;
  while (std::fabs(value) >= 1000.0 && unit < 4) {
    value /= 1000.0;
    ++unit;
  }
  return absl::StrFormat("%.2f %s", value, kUnits[unit]);
}

std::string FormatSeconds(double seconds) {
  const double abs_seconds = std::fabs(seconds);
  if (abs_seconds >= 1.0) return absl::StrFormat("%.3f s", seconds);
  if (abs_seconds >= 1e-3) return absl::StrFormat("%.3f ms", seconds * 1e3);
  if (abs_seconds >= 1e-6) return absl::StrFormat("%.3f us", seconds * 1e6);
  return absl::StrFormat("%.1f ns", seconds * 1e9);
}

}  // namespace gpubench
