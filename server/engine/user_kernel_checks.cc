#include "server/engine/user_kernel_checks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench {

PhysicalFloor PhysicalFloorOf(const RunResult& result) {
  PhysicalFloor f;
  f.peak_bytes_per_second = result.device.peak_bandwidth_bytes_per_second;
  const KernelVariant& k = *result.spec.kernel;
  if (result.spec.cache_mode == CacheMode::kCold) {
    for (size_t i = 0; i < k.family->buffers.size(); ++i) {
      if (k.family->buffers[i].role != BufferRole::kOutput) {
        f.dram_bytes += BufferBytes(k, result.spec.shape, static_cast<int>(i));
      }
    }
  } else {
    f.dram_bytes = std::max<int64_t>(0, result.bytes_moved - result.device.l2_cache_bytes);
  }
  if (f.peak_bytes_per_second > 0) {
    f.seconds = static_cast<double>(f.dram_bytes) / f.peak_bytes_per_second;
  }
  return f;
}

absl::Status CheckPhysicalFloor(const RunResult& result, std::string* what) {
  const PhysicalFloor f = PhysicalFloorOf(result);
  const double median = result.stats.median_seconds;
  if (f.seconds <= 0) {
    *what = absl::StrFormat(
        "physical_floor: not applicable (%d bytes must come from DRAM; peak %.4g B/s)",
        f.dram_bytes, f.peak_bytes_per_second);
    return absl::OkStatus();
  }
  const std::string figures = absl::StrFormat(
      "median %.4g s vs floor %.4g s = %d bytes that must come from DRAM (%s) / %.4g B/s "
      "theoretical DRAM peak",
      median, f.seconds, f.dram_bytes,
      result.spec.cache_mode == CacheMode::kCold ? "every input, the L2 flushed"
                                                 : "bytes moved beyond the L2's size",
      f.peak_bytes_per_second);
  if (median < f.seconds) {
    return absl::FailedPreconditionError(absl::StrCat(
        "implausible: the user kernel's median is faster than the memory can deliver its data: ",
        figures));
  }
  *what = absl::StrCat("physical_floor: ", figures);
  return absl::OkStatus();
}

}  // namespace gpubench
