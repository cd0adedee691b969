// The gemm family's CPU binding (kernels/families/gemm.cc): per-session setup converts A and B to
// the compute type once (kernels/gemm.h's GemmOperands, as a tensor core converts its operands on
// load); each launch computes D with the blocked GEMM, the pool's threads taking row ranges.
#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/parallel.h"
#include "kernels/families/gemm_precisions.h"
#include "kernels/gemm.h"
#include "kernels/launch.h"

namespace gpubench::cpu {
namespace {

constexpr int kA = 0, kB = 1, kD = 2;  // buffer indices of the gemm family

class GemmState final : public LaunchState {
 public:
  GemmOperands operands;
};

void Setup(GemmPrecision precision, const KernelBuffers& buffers,
           std::unique_ptr<LaunchState>* state, std::string* report) {
  const GemmPrecisionInfo& info = GemmInfo(precision);
  GemmHostData data;  // views of the session's A and B (copied once here, outside timing)
  data.precision = precision;
  data.shape = {buffers.shape.m, buffers.shape.n, buffers.shape.k};
  const auto* a = static_cast<const std::byte*>(buffers.data[kA]);
  const auto* b = static_cast<const std::byte*>(buffers.data[kB]);
  data.a.assign(a, a + data.shape.m * data.shape.k * info.input_bytes);
  data.b.assign(b, b + data.shape.n * data.shape.k * info.input_bytes);
  data.scale_a = data.scale_b = precision == GemmPrecision::kF8E4M3 ? kGemmFp8Scale : 1.0f;
  ParallelPool pool(1);
  auto s = std::make_unique<GemmState>();
  s->operands = ConvertGemmOperands(data, &pool);
  *report = absl::StrCat("CPU blocked GEMM (", info.compute,
                         " emulated): 64 x 64 tiles of D, K in slices of 256, 4 x 4 register "
                         "blocks, rows spread over the backend's threads");
  *state = std::move(s);
}

}  // namespace

#define GPUBENCH_GEMM_CPU_SETUP(Name, ...)                                                \
  void GemmSetup##Name(const KernelBuffers& buffers, const LaunchGeometry&,               \
                       std::unique_ptr<LaunchState>* state, std::string* report) {        \
    Setup(GemmPrecision::k##Name, buffers, state, report);                                \
  }
GPUBENCH_GEMM_PRECISIONS(GPUBENCH_GEMM_CPU_SETUP)
#undef GPUBENCH_GEMM_CPU_SETUP

// "Threads" are rows of D (the family's launch_items is M; the last block may overhang).
void GemmRows(const KernelBuffers& buffers, const LaunchGeometry&, int64_t row_begin,
              int64_t row_end) {
  const auto* s = static_cast<const GemmState*>(buffers.state);
  row_end = std::min(row_end, s->operands.shape.m);
  if (row_begin < row_end) CpuGemmRows(s->operands, buffers.data[kD], row_begin, row_end);
}

}  // namespace gpubench::cpu
