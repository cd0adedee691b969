#include "common/tokens.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/files.h"

namespace gpubench {

std::vector<std::string> ParseTokenLines(absl::string_view text) {
  std::vector<std::string> tokens;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && line[0] != '#') tokens.emplace_back(line);
  }
  return tokens;
}

absl::Status CheckTokenUsable(absl::string_view token) {
  constexpr size_t kMaxTokenBytes = 4096;
  if (token.empty()) return absl::InvalidArgumentError("the token is empty");
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the token is ", token.size(), " bytes; at most ", kMaxTokenBytes));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the token has a character that cannot travel in a header (byte ", static_cast<int>(c),
          " at offset ", i, "); tokens are visible ASCII without spaces"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path) {
  std::string text;
  if (!ReadFileToString(path, &text)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read token file ", path));
  }
  std::vector<std::string> tokens = ParseTokenLines(text);
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("token file ", path, " holds no token"));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (absl::Status s = CheckTokenUsable(tokens[i]); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token file ", path, ", token ", i + 1, ": ", s.message()));
    }
  }
  return tokens;
}

}  // namespace gpubench
