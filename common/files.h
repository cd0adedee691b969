// Whole-file reads for flags that name files (plans, TLS material, baselines, tuned defaults).
#ifndef GPUBENCH_COMMON_FILES_H_
#define GPUBENCH_COMMON_FILES_H_

#include <string>

namespace gpubench {

// Replaces *out with the contents of `path`; false (and *out untouched) when it cannot be opened.
// Thread-safe.
bool ReadFileToString(const std::string& path, std::string* out);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_FILES_H_
