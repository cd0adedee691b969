// The device-to-device copy family: cudaMemcpyAsync between two buffers of one device, the
// practical bandwidth ceiling other runs are compared with (percent_of_copy_ceiling).
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/families/families.h"

namespace gpubench {

namespace cpu {
GPUBENCH_CPU_KERNEL(CopyF32);
}  // namespace cpu

#if GPUBENCH_HAVE_CUDA
namespace cuda {
GPUBENCH_CUDA_LAUNCHER(LaunchCopyD2D);
GPUBENCH_DEVICE_CHECK(CheckSource);  // kernels/cuda/reference_kernels.cu
}  // namespace cuda
#endif

namespace {

constexpr BufferSpec kCopyBuffers[] = {
    {.name = "src", .role = BufferRole::kInput, .seed_stream = 0},
    {.name = "dst", .role = BufferRole::kOutput},
};

double CopyReference(const KernelVariant&, const HostData& data, int, int64_t i) {
  return LoadAsDouble(data.dtype, data.buffers[0].data(), i);
}

constexpr KernelVariant kVariants[] = {
    {.name = "copy_d2d",
     .family = &kCopy,
     .dtype = DType::kF32,
     // The CPU emulation copies items_per_thread elements per "thread"; the runtime picks the
     // device's configuration.
     .default_policy = {.block_size = 256, .items_per_thread = 16, .block_size_tunable = false},
     .description =
         "out = in through cudaMemcpyAsync device to device: the practical bandwidth ceiling",
     .provenance = "baseline: CUDA runtime cudaMemcpyAsync",
     .cpu = &cpu::CopyF32,
     .cuda = GPUBENCH_CUDA(LaunchCopyD2D)},
};

}  // namespace

constexpr KernelFamily kCopy{
    .name = "copy",
    .buffers = kCopyBuffers,  // bytes per launch: 2 x elements x size (read src, write dst)
    .reference = &CopyReference,
    .device_check = GPUBENCH_CUDA(CheckSource),
    .copy_ceiling = true,
    .user_example = "dst[i] = src[i];",
};

std::span<const KernelVariant> CopyVariants() { return kVariants; }

}  // namespace gpubench
