#include "common/measurement_options.h"

#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpubench {

const OptionSpec* FindOption(absl::string_view name) {
  for (const OptionSpec& o : kMeasurementOptions) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string FormatOptionValue(const OptionSpec& o, double value) {
  switch (o.kind) {
    case OptionKind::kInt32:
    case OptionKind::kInt64:
      if (std::isfinite(value) && value == std::trunc(value)) {
        return absl::StrCat(static_cast<int64_t>(value));
      }
      return absl::StrCat(value);
    case OptionKind::kDouble:
      return absl::StrCat(value);
    case OptionKind::kBool:
      return value != 0 ? "true" : "false";
    case OptionKind::kChoice: {
      const int i = static_cast<int>(value);
      if (i >= 0 && i < static_cast<int>(o.choices.size())) return std::string(o.choices[i]);
      return absl::StrCat(value);
    }
  }
  return absl::StrCat(value);
}

std::string RangeText(const OptionSpec& o, double max) {
  std::string text = absl::StrCat("[", FormatOptionValue(o, o.min), ", ", FormatOptionValue(o, max),
                                  o.max_exclusive ? ")" : "]");
  constexpr double kGiB = 1 << 30, kMiB = 1 << 20;
  if (o.unit == "bytes" && max >= kMiB) {
    absl::StrAppend(&text, " (",
                    std::fmod(max, kGiB) == 0 ? absl::StrCat(max / kGiB, " GiB")
                                              : absl::StrCat(max / kMiB, " MiB"),
                    ")");
  }
  return text;
}

absl::Status CheckOptionRange(const OptionSpec& o, double value, double max,
                              absl::string_view field) {
  const bool inside = value >= o.min && (o.max_exclusive ? value < max : value <= max);
  if (inside) return absl::OkStatus();  // NaN fails both comparisons
  const bool moved = !o.max_flag.empty() && value > max;
  return absl::InvalidArgumentError(absl::StrCat(
      field, " = ", FormatOptionValue(o, value), " is outside ", RangeText(o, max),
      " (unit: ", o.unit, ")",
      moved ? absl::StrCat(", allowed by this server (--", o.max_flag, ")") : "", ": ", o.help));
}

absl::StatusOr<int> ParseChoice(const OptionSpec& o, absl::string_view text,
                                absl::string_view field) {
  for (size_t i = 0; i < o.choices.size(); ++i) {
    if (absl::EqualsIgnoreCase(o.choices[i], text)) return static_cast<int>(i);
  }
  // "a, b or c", as the flags' messages always read.
  std::vector<std::string> names(o.choices.begin(), o.choices.end());
  std::string list = names.back();
  if (names.size() > 1) {
    names.pop_back();
    list = absl::StrCat(absl::StrJoin(names, ", "), " or ", list);
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " must be ", list, " (got '", text, "')"));
}

int ChoiceOfEnumName(const OptionSpec& o, absl::string_view enum_value_name) {
  const std::string lower = absl::AsciiStrToLower(enum_value_name);
  for (size_t i = 0; i < o.choices.size(); ++i) {
    if (lower == o.choices[i] || absl::EndsWith(lower, absl::StrCat("_", o.choices[i]))) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace gpubench
