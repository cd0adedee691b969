#include "kernels/cuda/describe_device.h"

#include <cuda_runtime_api.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"

namespace gpubench::cuda {
namespace {

std::string FormatUuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return absl::StrFormat("GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                         b[12], b[13], b[14], b[15]);
}

std::string FormatCudaVersion(int v) { return absl::StrCat(v / 1000, ".", (v % 1000) / 10); }

}  // namespace

absl::StatusOr<DeviceInfo> DescribeDevice(int device) {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  cudaDeviceProp p{};
  CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&p, device));
  DeviceInfo d;
  d.index = device;
  d.backend = "cuda";  // BackendKindName(kCuda); the kernels library links above this one
  d.name = p.name;
  d.uuid = FormatUuid(p.uuid);
  char bus_id[32] = {0};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) == cudaSuccess) d.pci_bus_id = bus_id;
  d.compute_capability_major = p.major;
  d.compute_capability_minor = p.minor;
  d.multiprocessor_count = p.multiProcessorCount;
  d.max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
  d.max_blocks_per_multiprocessor = p.maxBlocksPerMultiProcessor;
  d.registers_per_multiprocessor = p.regsPerMultiprocessor;
  d.shared_memory_per_multiprocessor_bytes = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.registers_per_block = p.regsPerBlock;
  d.shared_memory_per_block_bytes = static_cast<int64_t>(p.sharedMemPerBlock);
  d.shared_memory_per_block_optin_bytes = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  d.warp_size = p.warpSize;
  d.l2_cache_bytes = p.l2CacheSize;
  int reserved = 0;
  if (cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) ==
      cudaSuccess) {
    d.reserved_shared_memory_per_block_bytes = reserved;
  }
  d.memory_bus_width_bits = p.memoryBusWidth;
  int clock_khz = 0, memory_clock_khz = 0;
  CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  d.sm_clock_hz = clock_khz * 1e3;
  d.memory_clock_hz = memory_clock_khz * 1e3;
  // Double data rate: two transfers per memory clock over the whole bus.
  d.peak_bandwidth_bytes_per_second = 2.0 * d.memory_clock_hz * d.memory_bus_width_bits / 8.0;
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  d.free_memory_bytes = static_cast<int64_t>(free_bytes);
  d.total_memory_bytes = static_cast<int64_t>(total_bytes);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  d.driver_version = absl::StrCat("CUDA ", FormatCudaVersion(driver));
  d.runtime_version = absl::StrCat("CUDA runtime ", FormatCudaVersion(runtime));
  return d;
}

}  // namespace gpubench::cuda
