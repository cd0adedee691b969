// The dense peak FLOP/s a GEMM of each precision can reach on a device, from NVIDIA's datasheets
// (the table and its sources are in gemm_peak.cc): the denominator of a GEMM result's "percent of
// peak". Host-only.
#ifndef GPUBENCH_KERNELS_GEMM_PEAK_H_
#define GPUBENCH_KERNELS_GEMM_PEAK_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/gemm.h"

namespace gpubench {

struct GemmPeak {
  double flops_per_second = 0;
  std::string model;       // the datasheet's product, e.g. "H200 SXM"
  std::string basis;       // how the figure was derived, in words
  std::string source_url;  // the datasheet or whitepaper
};

// The dense (no 2:4 sparsity) peak for `precision` on the device called `device_name` (CUDA's
// name, e.g. "NVIDIA H200") with compute capability major.minor and `multiprocessors` SMs:
// tensor-core peaks for f16, bf16, tf32, fp8 and f64 (f64 on GPUs without f64 tensor cores: the
// FMA peak), the f32 FMA peak for f32. A device with fewer SMs than the datasheet's product (a MIG
// slice) gets the figure scaled by its share of SMs. NOT_FOUND when the table has no row for the
// device or its datasheet gives no figure for the precision. Thread-safe.
absl::StatusOr<GemmPeak> GemmDensePeak(absl::string_view device_name, int cc_major, int cc_minor,
                                       int multiprocessors, GemmPrecision precision);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_GEMM_PEAK_H_
