#include "kernels/gemm_peak.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gpubench {
namespace {

// One datasheet product. Figures in TFLOP/s, DENSE: NVIDIA's datasheets print the tensor-core
// figures of Ampere and later "with sparsity" (marked *), twice the dense rate; the table holds the
// printed figure / 2 for those and says so in `sparse_halved`. 0: the datasheet gives no figure.
struct PeakRow {
  const char* model;
  std::vector<absl::string_view> name_tokens;  // all must appear in CUDA's device name
  int cc;                                      // major x 10 + minor
  int multiprocessors;                         // SMs of the product
  double f16, bf16, tf32, f32, f64, fp8;       // dense TFLOP/s
  bool sparse_halved;  // f16/bf16/tf32/fp8 printed with sparsity and halved here
  const char* f64_kind;
  const char* url;
};

// Sources (retrieved 2026-11-30):
//  H200:  https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM / NVL specifications table:
//         FP64 34 / 30, FP64 Tensor Core 67 / 60, FP32 67 / 60, TF32 989* / 835*, BF16 and FP16
//         1,979* / 1,671*, FP8 3,958* / 3,341*; * with sparsity)
//  H100:  https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet
//         (H100 SXM / NVL / PCIe: FP64 Tensor Core 67 / 60 / 51, FP32 67 / 60 / 51,
//         TF32 989* / 835* / 756*, BF16 and FP16 1,979* / 1,671* / 1,513*, FP8 3,958* / 3,341* /
//         3,026*)
//  A100:  https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
//         (FP64 Tensor Core 19.5, FP32 19.5, TF32 156 | 312*, BF16 and FP16 312 | 624*)
//  L40S:  https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413
//         (FP32 91.6, TF32 183 | 366*, BF16 and FP16 362.05 | 733*, FP8 733 | 1,466*)
//  L4:    https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet
//         (FP32 30.3, TF32 120*, FP16 and BF16 242*, FP8 485*)
//  T4:    https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf
//         (FP32 8.1, mixed FP16/FP32 65; no BF16, TF32 or FP8)
//  B200:  https://www.nvidia.com/en-us/data-center/hgx/ (HGX B200, per GPU: FP64 and FP64 Tensor
//         Core 37, FP32 75, TF32 2.2 P*, FP16/BF16 4.5 P*, FP8 9 P*)
// The Hopper whitepaper (https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper)
// derives the same H100 SXM figures from 132 SMs: dense FP16 4096 FLOP/clock/SM at 1.83 GHz.
const std::vector<PeakRow>& Rows() {
  static const std::vector<PeakRow>* rows = new std::vector<PeakRow>{
      {"H200 NVL", {"H200", "NVL"}, 90, 132, 835.5, 835.5, 417.5, 60, 60, 1670.5, true,
       "tensor core", "https://www.nvidia.com/en-us/data-center/h200/"},
      {"H200 SXM", {"H200"}, 90, 132, 989.5, 989.5, 494.5, 67, 67, 1979, true, "tensor core",
       "https://www.nvidia.com/en-us/data-center/h200/"},
      {"H100 NVL", {"H100", "NVL"}, 90, 132, 835.5, 835.5, 417.5, 60, 60, 1670.5, true,
       "tensor core", "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"},
      {"H100 PCIe", {"H100", "PCIe"}, 90, 114, 756.5, 756.5, 378, 51, 51, 1513, true,
       "tensor core", "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"},
      {"H100 SXM", {"H100"}, 90, 132, 989.5, 989.5, 494.5, 67, 67, 1979, true, "tensor core",
       "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"},
      {"A100", {"A100"}, 80, 108, 312, 312, 156, 19.5, 19.5, 0, true, "tensor core",
       "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
       "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"},
      {"L40S", {"L40S"}, 89, 142, 362.05, 362.05, 183, 91.6, 0, 733, true, "",
       "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"},
      {"L4", {"L4"}, 89, 58, 121, 121, 60, 30.3, 0, 242.5, true, "",
       "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet"},
      {"T4", {"T4"}, 75, 40, 65, 0, 0, 8.1, 0, 0, false, "",
       "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
       "t4-tensor-core-datasheet-951643.pdf"},
      {"B200", {"B200"}, 100, 148, 2250, 2250, 1100, 75, 37, 4500, true, "tensor core",
       "https://www.nvidia.com/en-us/data-center/hgx/"},
  };
  return *rows;
}

double Figure(const PeakRow& row, GemmPrecision p) {
  switch (p) {
    case GemmPrecision::kF16:
      return row.f16;
    case GemmPrecision::kBF16:
      return row.bf16;
    case GemmPrecision::kTF32:
      return row.tf32;
    case GemmPrecision::kF32:
      return row.f32;
    case GemmPrecision::kF64:
      return row.f64;
    case GemmPrecision::kF8E4M3:
      return row.fp8;
  }
  return 0;
}

const char* Unit(GemmPrecision p, const PeakRow& row) {
  switch (p) {
    case GemmPrecision::kF32:
      return "FP32 (CUDA cores)";
    case GemmPrecision::kF64:
      return *row.f64_kind ? "FP64 tensor core" : "FP64";
    case GemmPrecision::kF16:
      return "FP16 tensor core";
    case GemmPrecision::kBF16:
      return "BF16 tensor core";
    case GemmPrecision::kTF32:
      return "TF32 tensor core";
    case GemmPrecision::kF8E4M3:
      return "FP8 tensor core";
  }
  return "";
}

}  // namespace

absl::StatusOr<GemmPeak> GemmDensePeak(absl::string_view device_name, int cc_major, int cc_minor,
                                       int multiprocessors, GemmPrecision precision) {
  const std::vector<absl::string_view> tokens =
      absl::StrSplit(device_name, absl::ByAnyChar(" -"), absl::SkipEmpty());
  const int cc = cc_major * 10 + cc_minor;
  for (const PeakRow& row : Rows()) {
    if (row.cc != cc) continue;
    const bool match = std::all_of(row.name_tokens.begin(), row.name_tokens.end(),
                                   [&](absl::string_view t) {
                                     return std::find(tokens.begin(), tokens.end(), t) !=
                                            tokens.end();
                                   });
    if (!match) continue;
    const double tflops = Figure(row, precision);
    if (tflops <= 0) {
      return absl::NotFoundError(absl::StrCat("the ", row.model, " datasheet (", row.url,
                                              ") gives no ", GemmInfo(precision).name,
                                              " figure"));
    }
    GemmPeak peak;
    peak.model = row.model;
    peak.source_url = row.url;
    const bool halved = row.sparse_halved && precision != GemmPrecision::kF32 &&
                        precision != GemmPrecision::kF64;
    peak.basis = absl::StrFormat("NVIDIA %s datasheet: dense %s %g TFLOP/s%s", row.model,
                                 Unit(precision, row), tflops,
                                 halved ? " (the printed with-sparsity figure / 2)" : "");
    double share = 1.0;
    if (multiprocessors > 0 && multiprocessors < row.multiprocessors) {
      share = static_cast<double>(multiprocessors) / row.multiprocessors;
      absl::StrAppendFormat(&peak.basis, ", x %d/%d SMs of this device", multiprocessors,
                            row.multiprocessors);
    }
    peak.flops_per_second = tflops * 1e12 * share;
    return peak;
  }
  return absl::NotFoundError(absl::StrFormat(
      "no datasheet peak for \"%s\" (compute capability %d.%d) in kernels/gemm_peak.cc",
      device_name, cc_major, cc_minor));
}

}  // namespace gpubench
