// The host<->device and peer copy families and their variants: what a GPU's PCIe link
// and NVLink deliver, as DCGM's diagnostics and nvbandwidth measure them.
//   h2d_* / d2h_*: cudaMemcpyAsync between host memory (pinned: cudaHostAlloc; pageable: malloc,
//     staged by the driver) and the device, judged against the PCIe link's theoretical rate of
//     one direction (kernels/pcie.h, from NVML through DeviceInfo).
//   bidirectional_pinned: half the elements host -> device on the session's stream while the
//     other half goes device -> host on a second stream, so both copy engines run; bytes count
//     both directions, judged against twice the link's rate.
//   peer_push / peer_pull: between the run's device and its peer (another GPU), by the copy
//     engine (cudaMemcpyPeerAsync) or by the device's SMs reading (pull) or writing (push) the
//     peer's memory; the path (NVLink or PCIe) is reported in the run's launch_report.
// Cold and hot: cold flushes the run's device L2 before one copy (the device side starts from
// DRAM); hot times back-to-back copies of the same buffers. Over PCIe the link is the limit, so
// the two differ by one copy's queueing only.
#include <optional>

#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/families/families.h"

namespace gpubench {

namespace cpu {
GPUBENCH_CPU_KERNEL(CopyF32);  // kernels/cpu_kernels.cc: dst = src, items_per_thread per thread
GPUBENCH_CPU_KERNEL(CopyBidirectional);  // kernels/cpu_copies.cc
GPUBENCH_CPU_KERNEL(CopyGridStride);     // kernels/cpu_copies.cc
void SetupPeerCopy(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                   std::unique_ptr<LaunchState>* state, std::string* report);
}  // namespace cpu

#if GPUBENCH_HAVE_CUDA
namespace cuda {
// kernels/cuda/copy_kernels.cu
GPUBENCH_CUDA_LAUNCHER(LaunchCopyDefault);
GPUBENCH_CUDA_LAUNCHER(LaunchCopyBidirectional);
GPUBENCH_CUDA_LAUNCHER(LaunchCopyPeerEngine);
GPUBENCH_CUDA_LAUNCHER(LaunchCopySm);
// The source, element for element (kernels/cuda/reference_kernels.cu). Only the families whose
// destination is in the run's device memory are checked on the device (h2d_*, peer_pull).
GPUBENCH_DEVICE_CHECK(CheckSource);
int SetupBidirectional(const KernelBuffers& buffers, const LaunchGeometry& geometry, void* stream,
                       std::unique_ptr<LaunchState>* state, std::string* report);
int SetupPeer(const KernelBuffers& buffers, const LaunchGeometry& geometry, void* stream,
              std::unique_ptr<LaunchState>* state, std::string* report);
}  // namespace cuda
#define GPUBENCH_CUDA_SETUP(fn) (&::gpubench::cuda::fn)
#else
#define GPUBENCH_CUDA_SETUP(fn) nullptr
#endif

namespace {

// One copy: bytes that cross the link = the elements once (not read + write as in device memory).
int64_t OneCopyBytes(const RunShape& shape, DType dtype) {
  return shape.elements * DTypeSize(dtype);
}

double SourceReference(const KernelVariant&, const HostData& data, int buffer, int64_t i) {
  // Every family here copies buffer 0 into buffer 1; bidirectional also buffer 2 into buffer 3.
  return LoadAsDouble(data.dtype, data.buffers[buffer - 1].data(), i);
}

std::optional<double> PcieOneDirection(const DeviceInfo& device, const KernelVariant&) {
  if (device.pcie_link_bytes_per_second <= 0) return std::nullopt;
  return device.pcie_link_bytes_per_second;
}

std::optional<double> PcieBothDirections(const DeviceInfo& device, const KernelVariant&) {
  if (device.pcie_link_bytes_per_second <= 0) return std::nullopt;
  return 2 * device.pcie_link_bytes_per_second;
}

// The peer link's rate is not in the device snapshot (NVLink generations and link counts vary by
// board): no percentage; the launch report names the path.
std::optional<double> NoPeak(const DeviceInfo&, const KernelVariant&) { return std::nullopt; }

int64_t FirstHalf(const RunShape& shape) { return shape.elements / 2; }
int64_t SecondHalf(const RunShape& shape) { return shape.elements - shape.elements / 2; }

constexpr BufferSpec kH2DPinned[] = {
    {.name = "src", .role = BufferRole::kInput, .placement = Placement::kHostPinned},
    {.name = "dst", .role = BufferRole::kOutput, .placement = Placement::kDevice}};
constexpr BufferSpec kH2DPageable[] = {
    {.name = "src", .role = BufferRole::kInput, .placement = Placement::kHostPageable},
    {.name = "dst", .role = BufferRole::kOutput, .placement = Placement::kDevice}};
constexpr BufferSpec kD2HPinned[] = {
    {.name = "src", .role = BufferRole::kInput, .placement = Placement::kDevice},
    {.name = "dst", .role = BufferRole::kOutput, .placement = Placement::kHostPinned}};
constexpr BufferSpec kD2HPageable[] = {
    {.name = "src", .role = BufferRole::kInput, .placement = Placement::kDevice},
    {.name = "dst", .role = BufferRole::kOutput, .placement = Placement::kHostPageable}};
constexpr BufferSpec kBidirectional[] = {
    {.name = "h2d_src", .role = BufferRole::kInput, .elements = &FirstHalf,
     .placement = Placement::kHostPinned, .seed_stream = 0},
    {.name = "h2d_dst", .role = BufferRole::kOutput, .elements = &FirstHalf,
     .placement = Placement::kDevice},
    {.name = "d2h_src", .role = BufferRole::kInput, .elements = &SecondHalf,
     .placement = Placement::kDevice, .seed_stream = 1},
    {.name = "d2h_dst", .role = BufferRole::kOutput, .elements = &SecondHalf,
     .placement = Placement::kHostPinned}};
constexpr BufferSpec kPeerPush[] = {
    {.name = "src", .role = BufferRole::kInput, .placement = Placement::kDevice},
    {.name = "dst", .role = BufferRole::kOutput, .placement = Placement::kPeerDevice}};
constexpr BufferSpec kPeerPull[] = {
    {.name = "src", .role = BufferRole::kInput, .placement = Placement::kPeerDevice},
    {.name = "dst", .role = BufferRole::kOutput, .placement = Placement::kDevice}};

// Pageable copies synchronize with the host (cudaMemcpyAsync stages pageable memory through a
// driver buffer and waits for the stream first), so they cannot queue behind the blocking kernel.
constexpr KernelFamily kH2DPinnedFamily{.name = "h2d_pinned", .buffers = kH2DPinned,
                                        .bytes_moved = &OneCopyBytes,
                                        .reference = &SourceReference,
    .device_check = GPUBENCH_CUDA(CheckSource),
                                        .peak = &PcieOneDirection};
constexpr KernelFamily kH2DPageableFamily{.name = "h2d_pageable", .buffers = kH2DPageable,
                                          .bytes_moved = &OneCopyBytes,
                                          .reference = &SourceReference,
    .device_check = GPUBENCH_CUDA(CheckSource),
                                          .peak = &PcieOneDirection, .blocking_kernel = false};
constexpr KernelFamily kD2HPinnedFamily{.name = "d2h_pinned", .buffers = kD2HPinned,
                                        .bytes_moved = &OneCopyBytes,
                                        .reference = &SourceReference,
    .device_check = GPUBENCH_CUDA(CheckSource),
                                        .peak = &PcieOneDirection};
constexpr KernelFamily kD2HPageableFamily{.name = "d2h_pageable", .buffers = kD2HPageable,
                                          .bytes_moved = &OneCopyBytes,
                                          .reference = &SourceReference,
    .device_check = GPUBENCH_CUDA(CheckSource),
                                          .peak = &PcieOneDirection, .blocking_kernel = false};
constexpr KernelFamily kBidirectionalFamily{.name = "bidirectional_pinned",
                                            .buffers = kBidirectional,
                                            .bytes_moved = &OneCopyBytes,
                                            .reference = &SourceReference,
    .device_check = GPUBENCH_CUDA(CheckSource),
                                            .peak = &PcieBothDirections};
constexpr KernelFamily kPeerPushFamily{.name = "peer_push", .buffers = kPeerPush,
                                       .bytes_moved = &OneCopyBytes,
                                       .reference = &SourceReference,
    .device_check = GPUBENCH_CUDA(CheckSource), .peak = &NoPeak};
constexpr KernelFamily kPeerPullFamily{.name = "peer_pull", .buffers = kPeerPull,
                                       .bytes_moved = &OneCopyBytes,
                                       .reference = &SourceReference,
    .device_check = GPUBENCH_CUDA(CheckSource), .peak = &NoPeak};

// Copy-engine transfers: the driver picks everything; the CPU emulation copies 16 elements per
// "thread" (as copy_d2d).
constexpr LaunchPolicy kEnginePolicy{.block_size = 256, .items_per_thread = 16,
                                     .block_size_tunable = false};
// The SM copy: 512 threads, one 16-byte packet (4 floats) per thread per step, grid-stride over
// every SM's resident blocks (four packets in flight per thread inside the kernel).
constexpr LaunchPolicy kSmPolicy{.block_size = 512, .items_per_thread = 4, .grid_stride = true};

constexpr absl::string_view kCopyProvenance =
    "copy engines through cudaMemcpyAsync (CUDA runtime), as DCGM diagnostics and nvbandwidth's "
    "CE tests drive them";
constexpr absl::string_view kSmProvenance =
    "SM-driven peer copy, after NVIDIA nvbandwidth's SM copy kernels";

constexpr KernelVariant kVariants[] = {
    {.name = "copy_h2d_pinned", .family = &kH2DPinnedFamily, .dtype = DType::kF32,
     .default_policy = kEnginePolicy,
     .description = "cudaMemcpyAsync from pinned host memory (cudaHostAlloc) to the device",
     .provenance = kCopyProvenance, .cpu = &cpu::CopyF32, .cuda = GPUBENCH_CUDA(LaunchCopyDefault)},
    {.name = "copy_d2h_pinned", .family = &kD2HPinnedFamily, .dtype = DType::kF32,
     .default_policy = kEnginePolicy,
     .description = "cudaMemcpyAsync from the device to pinned host memory",
     .provenance = kCopyProvenance, .cpu = &cpu::CopyF32, .cuda = GPUBENCH_CUDA(LaunchCopyDefault)},
    {.name = "copy_h2d_pageable", .family = &kH2DPageableFamily, .dtype = DType::kF32,
     .default_policy = kEnginePolicy,
     .description = "cudaMemcpyAsync from pageable host memory (malloc; staged by the driver) to "
                    "the device, timed without the blocking kernel",
     .provenance = kCopyProvenance, .cpu = &cpu::CopyF32, .cuda = GPUBENCH_CUDA(LaunchCopyDefault)},
    {.name = "copy_d2h_pageable", .family = &kD2HPageableFamily, .dtype = DType::kF32,
     .default_policy = kEnginePolicy,
     .description = "cudaMemcpyAsync from the device to pageable host memory, timed without the "
                    "blocking kernel",
     .provenance = kCopyProvenance, .cpu = &cpu::CopyF32, .cuda = GPUBENCH_CUDA(LaunchCopyDefault)},
    {.name = "copy_bidir_pinned", .family = &kBidirectionalFamily, .dtype = DType::kF32,
     .default_policy = kEnginePolicy,
     .description = "half the elements host -> device and the other half device -> host at once "
                    "on two streams (both copy engines), pinned host memory",
     .provenance = kCopyProvenance, .cpu = &cpu::CopyBidirectional,
     .cuda = GPUBENCH_CUDA(LaunchCopyBidirectional),
     .cuda_setup = GPUBENCH_CUDA_SETUP(SetupBidirectional)},
    {.name = "copy_peer_ce", .family = &kPeerPushFamily, .dtype = DType::kF32,
     .default_policy = kEnginePolicy,
     .description = "device -> peer device by the copy engine (cudaMemcpyPeerAsync)",
     .provenance = kCopyProvenance, .cpu = &cpu::CopyF32,
     .cuda = GPUBENCH_CUDA(LaunchCopyPeerEngine), .cpu_setup = &cpu::SetupPeerCopy,
     .cuda_setup = GPUBENCH_CUDA_SETUP(SetupPeer)},
    {.name = "copy_peer_sm_push", .family = &kPeerPushFamily, .dtype = DType::kF32,
     .default_policy = kSmPolicy,
     .description = "a kernel on the device writes its memory into the peer's (16-byte stores "
                    "over NVLink or PCIe)",
     .provenance = kSmProvenance, .cpu = &cpu::CopyGridStride, .cuda = GPUBENCH_CUDA(LaunchCopySm),
     .cpu_setup = &cpu::SetupPeerCopy, .cuda_setup = GPUBENCH_CUDA_SETUP(SetupPeer)},
    {.name = "copy_peer_sm_pull", .family = &kPeerPullFamily, .dtype = DType::kF32,
     .default_policy = kSmPolicy,
     .description = "a kernel on the device reads the peer's memory into its own (16-byte loads, "
                    "four in flight per thread)",
     .provenance = kSmProvenance, .cpu = &cpu::CopyGridStride, .cuda = GPUBENCH_CUDA(LaunchCopySm),
     .cpu_setup = &cpu::SetupPeerCopy, .cuda_setup = GPUBENCH_CUDA_SETUP(SetupPeer)},
};

}  // namespace

std::span<const KernelVariant> CopiesVariants() { return kVariants; }

}  // namespace gpubench
