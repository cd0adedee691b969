// Client-supplied strings quoted back in messages (errors, logs): bounded and printable, so a
// hostile request cannot grow a status past the metadata limit or smuggle control characters.
#ifndef GPUBENCH_COMMON_ECHO_H_
#define GPUBENCH_COMMON_ECHO_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gpubench {

// Longest client string quoted in a message, in bytes.
inline constexpr size_t kMaxEchoBytes = 64;
// Longest status message the server sends (gRPC's metadata limit is 8 KiB for all headers).
inline constexpr size_t kMaxStatusMessageBytes = 2048;

// `text` cut to `max_bytes` (at a UTF-8 character boundary, "..." plus the full length appended
// when cut), control characters shown as '?'.
std::string EchoForMessage(absl::string_view text, size_t max_bytes = kMaxEchoBytes);

// `message` cut to kMaxStatusMessageBytes at a UTF-8 boundary, with " [truncated]".
std::string BoundStatusMessage(absl::string_view message);

// Up to `count` of `candidates` closest to `text` by edit distance (case-insensitive), nearest
// first; none farther than half the length of the candidate.
std::vector<std::string> ClosestNames(absl::string_view text,
                                      const std::vector<std::string>& candidates, size_t count);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_ECHO_H_
