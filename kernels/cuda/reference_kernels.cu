// The families' device references and the compare kernels (kernels/device_check.h): plain,
// one-element-per-iteration code, written apart from every variant under test. Each reference
// recomputes its inputs from the run's seed (kernels/uniform.h's formula, rounded to the dtype
// in double as GenerateUniform does on the host) and evaluates the host reference's formula in
// double; the compare applies the host's rule, |out - ref| <= atol + rtol |ref| with NaN failing,
// and keeps the same maxima (NaN errors count as infinite).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/device_check.h"
#include "kernels/uniform.h"

namespace gpubench::cuda {
namespace {

constexpr int kCheckBlock = 256;
constexpr int64_t kMaxCheckBlocks = 8192;

// GenerateUniform's element i of a buffer of `dtype`, as a double: the exact value in [-1, 1),
// then one round-to-nearest-even to the storage type (kernels/family.cc's StoreUniform).
__host__ __device__ inline double InputValue(DType dtype, uint64_t seed, uint64_t stream,
                                             int64_t i) {
  const double v = static_cast<double>(UniformBits24(seed, stream, i)) / 8388608.0 - 1.0;
  switch (dtype) {
    case DType::kF32:
      return static_cast<double>(static_cast<float>(v));
    case DType::kF16:
      return static_cast<double>(__half2float(__double2half(v)));
    case DType::kBF16:
      return static_cast<double>(__bfloat162float(__double2bfloat16(v)));
    case DType::kF64:
      return v;
    case DType::kU32:
    case DType::kU64:
      return static_cast<double>(UniformBits24(seed, stream, i));
    case DType::kF8E4M3: {
      const __nv_fp8_storage_t s = __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
      return static_cast<double>(__half2float(__half(__nv_cvt_fp8_to_halfraw(s, __NV_E4M3))));
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// Element i of a buffer of `dtype` as a double (LoadAsDouble).
__device__ inline double LoadValue(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(data)[i];
    case DType::kF16:
      return __half2float(static_cast<const __half*>(data)[i]);
    case DType::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    case DType::kF64:
      return static_cast<const double*>(data)[i];
    case DType::kU32:
      return static_cast<double>(static_cast<const uint32_t*>(data)[i]);
    case DType::kU64:
      return static_cast<double>(static_cast<const unsigned long long*>(data)[i]);
    case DType::kF8E4M3: {
      const auto s = static_cast<const __nv_fp8_storage_t*>(data)[i];
      return __half2float(__half(__nv_cvt_fp8_to_halfraw(s, __NV_E4M3)));
    }
  }
  return nan("");
}

// ---- the references: the host references' formulas (kernels/families/*.cc) ----------------

// elementwise_add: one correctly rounded addition in the storage type (AddReference).
struct AddRef {
  DType dtype;
  uint64_t seed, stream_a, stream_b;
  __host__ __device__ double operator()(int64_t i) const {
    const double a = InputValue(dtype, seed, stream_a, i);
    const double b = InputValue(dtype, seed, stream_b, i);
    switch (dtype) {
      case DType::kF16:
        return static_cast<double>(__half2float(__double2half(a + b)));
      case DType::kBF16:
        return static_cast<double>(__bfloat162float(__double2bfloat16(a + b)));
      default:  // the float sum, rounded once
#ifdef __CUDA_ARCH__
        return static_cast<double>(__fadd_rn(static_cast<float>(a), static_cast<float>(b)));
#else
        return static_cast<double>(static_cast<float>(a) + static_cast<float>(b));
#endif
    }
  }
};

// SAXPY: the seed's three formulas in double with the seed's float constants (saxpy.cc).
constexpr double kSaxpyAlpha = 2.5;
__host__ __device__ inline double F(float c) { return static_cast<double>(c); }

struct SaxpyMinimalRef {
  uint64_t seed, stream_x, stream_y;
  __host__ __device__ double operator()(int64_t i) const {
    return kSaxpyAlpha * InputValue(DType::kF32, seed, stream_x, i) +
           InputValue(DType::kF32, seed, stream_y, i);
  }
};

struct SaxpySophisticatedRef {
  uint64_t seed, stream_x, stream_y;
  __host__ __device__ double operator()(int64_t i) const {
    const double x = InputValue(DType::kF32, seed, stream_x, i);
    const double y = InputValue(DType::kF32, seed, stream_y, i);
    const double px4 = x * F(1.0001f) * F(0.9999f) * F(1.000001f) * F(0.999999f);
    const double py4 = y * F(1.000005f) * F(0.999995f) * F(1.0000001f) * F(0.9999999f);
    const double a4 = kSaxpyAlpha * F(1.00001f) * F(0.99999f) * F(1.000001f) * F(0.999999f) *
                      F(1.0000001f) * F(0.9999999f) * F(1.00000001f) * F(0.99999999f);
    const double p2 = px4 * px4, p4 = p2 * p2, p6 = p4 * p2, p8 = p4 * p4;
    const double correction =
        p2 * F(0.0000001f) - p4 * F(0.00000001f) + p6 * F(0.000000001f) - p8 * F(0.0000000001f);
    return a4 * px4 + py4 + correction;
  }
};

struct SaxpyBalancedRef {
  uint64_t seed, stream_x, stream_y;
  __host__ __device__ double operator()(int64_t i) const {
    const double ex = InputValue(DType::kF32, seed, stream_x, i) * F(1.00001f) * F(0.99999f);
    const double ey = InputValue(DType::kF32, seed, stream_y, i) * F(1.00001f) * F(0.99999f);
    const double sa = kSaxpyAlpha * F(1.000001f) * F(0.999999f);
    return sa * ex + ey + ex * ex * F(0.000001f);
  }
};

// copy and the copies families: the buffer before the checked one, element for element
// (CopyReference, SourceReference).
struct SourceRef {
  DType dtype;
  uint64_t seed, stream_src;
  __host__ __device__ double operator()(int64_t i) const {
    return InputValue(dtype, seed, stream_src, i);
  }
};

// ---- the compare ------------------------------------------------------------------------------

__device__ inline unsigned long long WarpSum(unsigned long long v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline unsigned long long WarpMin(unsigned long long v) {
  for (int o = 16; o > 0; o /= 2) v = min(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline double WarpMax(double v) {
  for (int o = 16; o > 0; o /= 2) v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

struct Rule {
  double rtol, atol;
  // The host's test (kernels/reference.cc VerifyBuffer): false for NaN. The bound rounded as the
  // host rounds it (a multiply, then an add: no fused multiply-add).
  __device__ bool Ok(double expected, double actual) const {
    return fabs(actual - expected) <= __dadd_rn(atol, __dmul_rn(rtol, fabs(expected)));
  }
};

template <typename Ref>
__global__ void CountKernel(Ref ref, const void* __restrict__ out, DType out_dtype, int64_t n,
                            Rule rule, DeviceCheckCounters* counters) {
  unsigned long long mismatches = 0, first = ~0ull;
  double max_abs = 0, max_rel = 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    const double expected = ref(i);
    const double actual = LoadValue(out_dtype, out, i);
    const double abs_error = fabs(actual - expected);
    if (!rule.Ok(expected, actual)) {
      ++mismatches;
      first = min(first, static_cast<unsigned long long>(i));
    }
    if (isnan(abs_error)) {
      max_abs = max_rel = INFINITY;
    } else {
      max_abs = fmax(max_abs, abs_error);
      max_rel = fmax(max_rel, abs_error / fmax(fabs(expected), 1e-30));
    }
  }
  mismatches = WarpSum(mismatches);
  first = WarpMin(first);
  max_abs = WarpMax(max_abs);
  max_rel = WarpMax(max_rel);
  if ((threadIdx.x & 31) != 0) return;
  if (mismatches > 0) {
    atomicAdd(&counters->mismatches, mismatches);
    atomicMin(&counters->first_index, first);
  }
  // Non-negative doubles (and +inf) order as their bit patterns.
  if (max_abs > 0) {
    atomicMax(&counters->max_abs_error_bits,
              static_cast<unsigned long long>(__double_as_longlong(max_abs)));
  }
  if (max_rel > 0) {
    atomicMax(&counters->max_rel_error_bits,
              static_cast<unsigned long long>(__double_as_longlong(max_rel)));
  }
}

template <typename Ref>
__global__ void FindAfterKernel(Ref ref, const void* __restrict__ out, DType out_dtype, int64_t n,
                                Rule rule, int64_t after, DeviceCheckCounters* counters) {
  unsigned long long first = ~0ull;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = after + 1 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += step) {
    if (!rule.Ok(ref(i), LoadValue(out_dtype, out, i))) {
      first = static_cast<unsigned long long>(i);
      break;  // this thread's later indices are larger
    }
  }
  first = WarpMin(first);
  if ((threadIdx.x & 31) == 0 && first != ~0ull) atomicMin(&counters->first_index, first);
}

template <typename Ref>
__global__ void EvaluateKernel(Ref ref, const void* __restrict__ out, DType out_dtype, int count,
                               DeviceCheckCounters* counters) {
  const int j = static_cast<int>(threadIdx.x);
  if (j >= count) return;
  const int64_t i = counters->at[j];
  counters->expected[j] = ref(i);
  counters->actual[j] = LoadValue(out_dtype, out, i);
}

int Blocks(int64_t n) {
  return static_cast<int>(
      std::clamp<int64_t>((n + kCheckBlock - 1) / kCheckBlock, 1, kMaxCheckBlocks));
}

template <typename Ref>
int Run(const DeviceCheckArgs& a, const Ref& ref) {
  if (a.mode == DeviceCheckMode::kOnHost) {
    *a.host_value = ref(a.after);
    return cudaSuccess;
  }
  auto* s = static_cast<cudaStream_t>(a.stream);
  const Rule rule{a.rtol, a.atol};
  switch (a.mode) {
    case DeviceCheckMode::kCount:
      if (a.n <= 0) return cudaSuccess;
      CountKernel<<<Blocks(a.n), kCheckBlock, 0, s>>>(ref, a.out, a.out_dtype, a.n, rule,
                                                      a.counters);
      break;
    case DeviceCheckMode::kFindAfter:
      if (a.n - a.after - 1 <= 0) return cudaSuccess;
      FindAfterKernel<<<Blocks(a.n - a.after - 1), kCheckBlock, 0, s>>>(
          ref, a.out, a.out_dtype, a.n, rule, a.after, a.counters);
      break;
    case DeviceCheckMode::kEvaluate:
      if (a.evaluate_count <= 0) return cudaSuccess;
      EvaluateKernel<<<1, 32, 0, s>>>(ref, a.out, a.out_dtype, a.evaluate_count, a.counters);
      break;
    case DeviceCheckMode::kOnHost:
      break;
  }
  return cudaGetLastError();
}

}  // namespace

GPUBENCH_DEVICE_CHECK(CheckAdd) {
  return Run(args, AddRef{args.dtype, args.seed, args.streams[0], args.streams[1]});
}
GPUBENCH_DEVICE_CHECK(CheckSaxpyMinimal) {
  return Run(args, SaxpyMinimalRef{args.seed, args.streams[0], args.streams[1]});
}
GPUBENCH_DEVICE_CHECK(CheckSaxpySophisticated) {
  return Run(args, SaxpySophisticatedRef{args.seed, args.streams[0], args.streams[1]});
}
GPUBENCH_DEVICE_CHECK(CheckSaxpyBalanced) {
  return Run(args, SaxpyBalancedRef{args.seed, args.streams[0], args.streams[1]});
}
GPUBENCH_DEVICE_CHECK(CheckSource) {
  if (args.buffer < 1) return cudaErrorInvalidValue;
  return Run(args, SourceRef{args.dtype, args.seed, args.streams[args.buffer - 1]});
}

}  // namespace gpubench::cuda
