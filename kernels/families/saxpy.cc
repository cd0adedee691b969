// The SAXPY family (y = alpha x + y in place) with the seed's three kernels of Puzzle 31, whose
// arithmetic differs (kernels/saxpy_math.h), so each variant brings its own reference.
#include <cmath>

#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/families/families.h"

namespace gpubench {

namespace cpu {
GPUBENCH_CPU_KERNEL(SaxpyMinimal);
GPUBENCH_CPU_KERNEL(SaxpySophisticated);
GPUBENCH_CPU_KERNEL(SaxpyBalanced);
}  // namespace cpu

#if GPUBENCH_HAVE_CUDA
namespace cuda {
GPUBENCH_CUDA_LAUNCHER(LaunchSaxpyMinimal);
GPUBENCH_CUDA_LAUNCHER(LaunchSaxpySophisticated);
GPUBENCH_CUDA_LAUNCHER(LaunchSaxpyBalanced);
// The device references of the three formulas (kernels/cuda/reference_kernels.cu).
GPUBENCH_DEVICE_CHECK(CheckSaxpyMinimal);
GPUBENCH_DEVICE_CHECK(CheckSaxpySophisticated);
GPUBENCH_DEVICE_CHECK(CheckSaxpyBalanced);
}  // namespace cuda
#endif

namespace {

constexpr BufferSpec kSaxpyBuffers[] = {
    {.name = "x", .role = BufferRole::kInput, .seed_stream = 0},
    {.name = "y", .role = BufferRole::kInOut, .seed_stream = 2},  // read and written: 2 accesses
};

constexpr double kAlpha = 2.5;  // KernelBuffers::alpha, the seed's ALPHA

double X(const HostData& data, int64_t i) {
  return LoadAsDouble(data.dtype, data.buffers[0].data(), i);
}
double Y(const HostData& data, int64_t i) {
  return LoadAsDouble(data.dtype, data.buffers[1].data(), i);
}
double F(float c) { return static_cast<double>(c); }

// The seed's formulas evaluated in double with the seed's float constants.
double MinimalReference(const KernelVariant&, const HostData& data, int, int64_t i) {
  return kAlpha * X(data, i) + Y(data, i);
}

double SophisticatedReference(const KernelVariant&, const HostData& data, int, int64_t i) {
  const double px4 = X(data, i) * F(1.0001f) * F(0.9999f) * F(1.000001f) * F(0.999999f);
  const double py4 = Y(data, i) * F(1.000005f) * F(0.999995f) * F(1.0000001f) * F(0.9999999f);
  const double a4 = kAlpha * F(1.00001f) * F(0.99999f) * F(1.000001f) * F(0.999999f) *
                    F(1.0000001f) * F(0.9999999f) * F(1.00000001f) * F(0.99999999f);
  const double correction = std::pow(px4, 2) * F(0.0000001f) - std::pow(px4, 4) * F(0.00000001f) +
                            std::pow(px4, 6) * F(0.000000001f) -
                            std::pow(px4, 8) * F(0.0000000001f);
  return a4 * px4 + py4 + correction;
}

double BalancedReference(const KernelVariant&, const HostData& data, int, int64_t i) {
  const double ex = X(data, i) * F(1.00001f) * F(0.99999f);
  const double ey = Y(data, i) * F(1.00001f) * F(0.99999f);
  const double sa = kAlpha * F(1.000001f) * F(0.999999f);
  return sa * ex + ey + ex * ex * F(0.000001f);
}

constexpr absl::string_view kSeedSaxpy = "seed 003_e7b5082a0653f0fc (Puzzle 31 occupancy, A10G)";
// Float rounding differences from FMA contraction against the double reference.
constexpr double kSaxpyRtol = 1e-5;
constexpr double kSaxpyAtol = 1e-6;
// 1024 threads per block, as the puzzle.
constexpr LaunchPolicy kPuzzle{.block_size = 1024, .items_per_thread = 1};

constexpr KernelVariant kVariants[] = {
    {.name = "saxpy_minimal",
     .family = &kSaxpy,
     .dtype = DType::kF32,
     .default_policy = kPuzzle,
     .description = "y = alpha * x + y, register-light, no shared memory",
     .provenance = kSeedSaxpy,
     .rtol = kSaxpyRtol,
     .atol = kSaxpyAtol,
     .cpu = &cpu::SaxpyMinimal,
     .cuda = GPUBENCH_CUDA(LaunchSaxpyMinimal),
     .reference = &MinimalReference,
     .device_check = GPUBENCH_CUDA(CheckSaxpyMinimal)},
    {.name = "saxpy_sophisticated",
     .family = &kSaxpy,
     .dtype = DType::kF32,
     .default_policy = kPuzzle,
     .static_shared_bytes = 48 * 1024,  // as the seed declares
     .description =
         "y ~= alpha * x + y with extra register pressure and 48 KiB static shared memory",
     .provenance = kSeedSaxpy,
     .rtol = kSaxpyRtol,
     .atol = kSaxpyAtol,
     .cpu = &cpu::SaxpySophisticated,
     .cuda = GPUBENCH_CUDA(LaunchSaxpySophisticated),
     .reference = &SophisticatedReference,
     .device_check = GPUBENCH_CUDA(CheckSaxpySophisticated)},
    {.name = "saxpy_balanced",
     .family = &kSaxpy,
     .dtype = DType::kF32,
     .default_policy = kPuzzle,
     .static_shared_bytes = 16 * 1024,  // as the seed declares
     .description = "y ~= alpha * x + y with moderate registers and 16 KiB static shared memory",
     .provenance = kSeedSaxpy,
     .rtol = kSaxpyRtol,
     .atol = kSaxpyAtol,
     .cpu = &cpu::SaxpyBalanced,
     .cuda = GPUBENCH_CUDA(LaunchSaxpyBalanced),
     .reference = &BalancedReference,
     .device_check = GPUBENCH_CUDA(CheckSaxpyBalanced)},
};

}  // namespace

constexpr KernelFamily kSaxpy{
    .name = "saxpy",
    .buffers = kSaxpyBuffers,  // bytes per launch: 3 x 4 x elements (read x, read and write y)
    .reference = &MinimalReference,
    .device_check = GPUBENCH_CUDA(CheckSaxpyMinimal),
    .alpha_argument = true,
    .user_example = "y[i] = alpha * x[i] + y[i];",
};

std::span<const KernelVariant> SaxpyVariants() { return kVariants; }

}  // namespace gpubench
