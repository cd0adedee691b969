// The three SAXPY kernels of seed 003_e7b5082a0653f0fc (Puzzle 31), y = alpha * x + y in place,
// with the seed's arithmetic (kernels/saxpy_math.h) and shared-memory footprints (48 KiB and
// 16 KiB static). One fix: the seed's barrier sits inside `if i < size`, undefined behaviour for
// a partial last block; here every thread reaches __syncthreads().
#include "kernels/cuda/launch_helpers.cuh"
#include "kernels/saxpy_math.h"

namespace gpubench::cuda {
namespace {

constexpr int kMaxBlock = 1024;

__global__ void SaxpyMinimalKernel(float* y, const float* x, float alpha, int64_t n) {
  const int64_t i = GlobalThreadIndex();
  if (i < n) y[i] = saxpy::Minimal(alpha, x[i], y[i]);
}

__global__ void SaxpySophisticatedKernel(float* y, const float* x, float alpha, int64_t n) {
  __shared__ float shared_cache[kMaxBlock * 12];  // 48 KiB, as the seed declares
  const int64_t i = GlobalThreadIndex();
  const int local = threadIdx.x;
  const bool active = i < n;
  if (active) {
    const saxpy::SophisticatedTerms t = saxpy::SophisticatedPrepare(alpha, x[i], y[i]);
    shared_cache[local] = t.x4;
    shared_cache[local + 1024] = t.y4;
    shared_cache[local + 2048] = t.alpha4;
    shared_cache[local + 3072] = t.correction;
  }
  __syncthreads();
  if (active) {
    const saxpy::SophisticatedTerms cached{shared_cache[local], shared_cache[local + 1024],
                                           shared_cache[local + 2048],
                                           shared_cache[local + 3072]};
    y[i] = saxpy::SophisticatedFinish(cached);
  }
}

__global__ void SaxpyBalancedKernel(float* y, const float* x, float alpha, int64_t n) {
  __shared__ float shared_cache[kMaxBlock * 4];  // 16 KiB, as the seed declares
  const int64_t i = GlobalThreadIndex();
  const int local = threadIdx.x;
  const bool active = i < n;
  saxpy::BalancedTerms t{};
  if (active) {
    t = saxpy::BalancedPrepare(alpha, x[i], y[i]);
    shared_cache[local] = t.x;
    shared_cache[local + 1024] = t.y;
  }
  __syncthreads();
  if (active) {
    t.x = shared_cache[local];
    t.y = shared_cache[local + 1024];
    y[i] = saxpy::BalancedFinish(t);
  }
}

int LaunchSaxpy(void (*kernel)(float*, const float*, float, int64_t), const KernelBuffers& b,
                const LaunchGeometry& g, void* stream, const void** symbol) {
  return LaunchOrReport(kernel, g, stream, symbol, b.at<float>(1), b.at<const float>(0), b.alpha,
                        b.n);
}

}  // namespace

int LaunchSaxpyMinimal(const KernelBuffers& b, const LaunchGeometry& g, void* s,
                       const void** sym) {
  return LaunchSaxpy(SaxpyMinimalKernel, b, g, s, sym);
}
int LaunchSaxpySophisticated(const KernelBuffers& b, const LaunchGeometry& g, void* s,
                             const void** sym) {
  return LaunchSaxpy(SaxpySophisticatedKernel, b, g, s, sym);
}
int LaunchSaxpyBalanced(const KernelBuffers& b, const LaunchGeometry& g, void* s,
                        const void** sym) {
  return LaunchSaxpy(SaxpyBalancedKernel, b, g, s, sym);
}

}  // namespace gpubench::cuda
