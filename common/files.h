// Whole-file reads for flags that name files (plans, TLS material, baselines, tuned defaults).
#ifndef GPUBENCH_COMMON_FILES_H_
#define GPUBENCH_COMMON_FILES_H_

#include <string>

#include "absl/status/status.h"

namespace gpubench {

// Replaces *out with the contents of `path`; false (and *out untouched) when it cannot be opened.
// Thread-safe.
bool ReadFileToString(const std::string& path, std::string* out);

// Writes `contents` to a new file beside `path` and renames it over `path`. The temporary is
// created by mkstemp (O_CREAT | O_EXCL with a random name), so a link planted at a predictable
// "<path>.tmp" is never followed, and a crash leaves `path` whole. Empty `contents` with
// `probe_only`: only checks that the directory takes a new file.
// UNAVAILABLE naming the file and the error. Thread-safe for different paths.
absl::Status ReplaceFileContents(const std::string& path, const std::string& contents,
                                 bool probe_only = false);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_FILES_H_
