#include "common/echo.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gpubench {
namespace {

// The largest cut <= max_bytes that does not split a UTF-8 sequence.
size_t Utf8Cut(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string EchoForMessage(absl::string_view text, size_t max_bytes) {
  const size_t cut = Utf8Cut(text, max_bytes);
  std::string out(text.substr(0, cut));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (cut < text.size()) absl::StrAppend(&out, "... (", text.size(), " bytes)");
  return out;
}

std::string BoundStatusMessage(absl::string_view message) {
  const size_t cut = Utf8Cut(message, kMaxStatusMessageBytes);
  if (cut == message.size()) return std::string(message);
  return absl::StrCat(message.substr(0, cut), " [truncated]");
}

std::vector<std::string> ClosestNames(absl::string_view text,
                                      const std::vector<std::string>& candidates, size_t count) {
  // Longer inputs cannot be close to any name: do not spend time on them.
  if (text.size() > 2 * kMaxEchoBytes) return {};
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(text, c);
    if (d <= std::max<size_t>(2, c.size() / 2)) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace gpubench
