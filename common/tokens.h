// Bearer-token files, read the same way by the server (--token_file) and the CLI (--token_file,
// GPUBENCH_TOKEN): one token per line, surrounding whitespace (CR included) trimmed, blank lines
// and '#' comments skipped.
#ifndef GPUBENCH_COMMON_TOKENS_H_
#define GPUBENCH_COMMON_TOKENS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpubench {

// The tokens of a token file's text, in order.
std::vector<std::string> ParseTokenLines(absl::string_view text);

// OK when `token` can travel in an "authorization: Bearer <token>" header: 1 to 4096 visible
// ASCII characters (no spaces, control characters or non-ASCII bytes). INVALID_ARGUMENT otherwise,
// saying why without echoing the token.
absl::Status CheckTokenUsable(absl::string_view token);

// Reads `path` (ParseTokenLines), checks every token; INVALID_ARGUMENT for an unreadable file, one
// without tokens, or an unusable token.
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_TOKENS_H_
