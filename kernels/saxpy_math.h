// The seed's three SAXPY formulas (003_e7b5082a0653f0fc.txt), written once for host and device so
// the CPU backend executes exactly the arithmetic the CUDA kernels execute. Float constants, as in
// the seed's Float32 code.
#ifndef GPUBENCH_KERNELS_SAXPY_MATH_H_
#define GPUBENCH_KERNELS_SAXPY_MATH_H_

#ifdef __CUDACC__
#define GPUBENCH_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GPUBENCH_HOST_DEVICE inline
#endif

namespace gpubench::saxpy {

GPUBENCH_HOST_DEVICE float Minimal(float alpha, float x, float y) { return alpha * x + y; }

// Values the sophisticated kernel stages through shared memory.
struct SophisticatedTerms {
  float x4, y4, alpha4, correction;
};

GPUBENCH_HOST_DEVICE SophisticatedTerms SophisticatedPrepare(float alpha, float x, float y) {
  const float px1 = x * 1.0001f, px2 = px1 * 0.9999f, px3 = px2 * 1.000001f;
  const float px4 = px3 * 0.999999f;
  const float py1 = y * 1.000005f, py2 = py1 * 0.999995f, py3 = py2 * 1.0000001f;
  const float py4 = py3 * 0.9999999f;
  const float a1 = alpha * 1.00001f * 0.99999f;
  const float a2 = a1 * 1.000001f * 0.999999f;
  const float a3 = a2 * 1.0000001f * 0.9999999f;
  const float a4 = a3 * 1.00000001f * 0.99999999f;
  const float p2 = px4 * px4, p3 = p2 * px4, p4 = p3 * px4, p5 = p4 * px4;
  const float p6 = p5 * px4, p7 = p6 * px4, p8 = p7 * px4;
  const float t1 = p2 * 0.0000001f, t2 = p4 * 0.00000001f, t3 = p6 * 0.000000001f;
  const float t4 = p8 * 0.0000000001f;
  return {px4, py4, a4, t1 - t2 + t3 - t4};
}

GPUBENCH_HOST_DEVICE float SophisticatedFinish(const SophisticatedTerms& t) {
  return t.alpha4 * t.x4 + t.y4 + t.correction;
}

struct BalancedTerms {
  float x, y, alpha, hint;
};

GPUBENCH_HOST_DEVICE BalancedTerms BalancedPrepare(float alpha, float x, float y) {
  const float ex = x * 1.00001f * 0.99999f;
  const float ey = y * 1.00001f * 0.99999f;
  const float sa = alpha * 1.000001f * 0.999999f;
  const float hint = ex * ex * 0.000001f;
  return {ex, ey, sa, hint};
}

GPUBENCH_HOST_DEVICE float BalancedFinish(const BalancedTerms& t) {
  return t.alpha * t.x + t.y + t.hint;
}

}  // namespace gpubench::saxpy

#endif  // GPUBENCH_KERNELS_SAXPY_MATH_H_
