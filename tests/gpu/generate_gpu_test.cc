// Inputs generated on the device (kernels/cuda/generate.h) against the host generator
// (GenerateUniform): bit for bit, for every dtype, at several sizes, seeds and streams. The
// formula test runs the device code's own __host__ __device__ function on the host, so it needs
// no GPU; the device test skips with the reason where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/parallel.h"
#include "kernels/cuda/generate.h"
#include "kernels/family.h"

namespace gpubench {
namespace {

constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,  DType::kF64,
                                DType::kU32, DType::kU64, DType::kF8E4M3};

std::vector<std::byte> HostFill(DType dtype, uint64_t seed, uint64_t stream, int64_t n,
                                ParallelPool* pool) {
  std::vector<std::byte> bytes(static_cast<size_t>(n * DTypeSize(dtype)));
  GenerateUniform({.seed = seed, .stream = stream, .dtype = dtype, .pool = pool}, bytes);
  return bytes;
}

uint64_t ElementBits(const std::vector<std::byte>& bytes, DType dtype, int64_t i) {
  uint64_t bits = 0;
  std::memcpy(&bits, bytes.data() + i * DTypeSize(dtype), DTypeSize(dtype));
  return bits;
}

TEST(DeviceGeneratorFormula, HostRunOfTheDeviceCodeMatchesGenerateUniform) {
  ParallelPool pool(2);
  for (DType dtype : kAllDTypes) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{0x9e3779b97f4a7c15}}) {
      for (uint64_t stream : {0, 1, 2}) {
        constexpr int64_t kN = 20000;
        const std::vector<std::byte> host = HostFill(dtype, seed, stream, kN, &pool);
        int64_t mismatches = 0;
        for (int64_t i = 0; i < kN; ++i) {
          const uint64_t want = ElementBits(host, dtype, i);
          const uint64_t got = cuda::GeneratedElementBitsOnHost(dtype, seed, stream, i);
          if (want != got && ++mismatches <= 3) {
            ADD_FAILURE() << DTypeName(dtype) << " seed " << seed << " stream " << stream << " i "
                          << i << ": host " << std::hex << want << " device code " << got;
          }
        }
        EXPECT_EQ(mismatches, 0) << DTypeName(dtype) << " seed " << seed << " stream " << stream;
      }
    }
  }
}

class DeviceGeneratorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      cudaGetLastError();
      GTEST_SKIP() << "no usable CUDA GPU: "
                   << (e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device visible");
    }
  }
};

TEST_F(DeviceGeneratorGpu, DeviceFillIsBitIdenticalToTheHostGenerator) {
  ParallelPool pool(0);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{4099}, (int64_t{1} << 20) + 3, int64_t{1} << 24,
                    (int64_t{1} << 28) + 5}) {
    for (DType dtype : kAllDTypes) {
      // 2^28 elements only for the 16-bit types (512 MiB): the index math past 2^24 threads.
      if (n > (int64_t{1} << 24) && DTypeSize(dtype) != 2) continue;
      for (uint64_t seed : {uint64_t{42}, uint64_t{0xfeedface12345678}}) {
        const uint64_t stream = seed == 42 ? 0 : 2;
        const std::vector<std::byte> host = HostFill(dtype, seed, stream, n, &pool);
        void* device = nullptr;
        ASSERT_EQ(cudaMalloc(&device, host.size()), cudaSuccess);
        std::vector<std::byte> back(host.size());
        ASSERT_EQ(cuda::LaunchGenerateUniform(dtype, seed, stream, n, device, nullptr),
                  cudaSuccess);
        ASSERT_EQ(cudaMemcpy(back.data(), device, host.size(), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        cudaFree(device);
        if (back != host) {
          int64_t first = 0;
          while (ElementBits(back, dtype, first) == ElementBits(host, dtype, first)) ++first;
          ADD_FAILURE() << DTypeName(dtype) << " n " << n << " seed " << seed << ": first "
                        << "difference at " << first << ": host " << std::hex
                        << ElementBits(host, dtype, first) << " device "
                        << ElementBits(back, dtype, first);
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpubench
