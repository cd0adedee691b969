// Parsing and printing of element counts with SI (K, M, G) and binary (Ki, Mi, Gi) suffixes.
#ifndef GPUBENCH_COMMON_SIZES_H_
#define GPUBENCH_COMMON_SIZES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpubench {

// Parses a positive count: "1000000", "16M" (16 * 10^6), "256Mi" (256 * 2^20, the seeds' "256M"
// elements), "1G", "4Ki", "3k". K/M/G are decimal, Ki/Mi/Gi binary; case of the letter is ignored.
// Rejects empty text, signs, fractions, zero, overflow and unknown suffixes. Thread-safe.
absl::StatusOr<int64_t> ParseElementCount(absl::string_view text);

// Prints a count compactly: 268435456 -> "256Mi", 1000 -> "1000". Thread-safe.
std::string FormatElementCount(int64_t count);

// Prints a byte rate with SI units: 4.2e12 -> "4.20 TB/s". Thread-safe.
std::string FormatBytesPerSecond(double bytes_per_second);

// Prints seconds with an adapted unit: 1.5e-6 -> "1.500 us". Thread-safe.
std::string FormatSeconds(double seconds);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_SIZES_H_
