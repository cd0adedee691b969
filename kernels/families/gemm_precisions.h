// The gemm family's six precisions, once (an X-macro): X(Name, name, dtype,
// min_compute_capability, description) is the kernel "gemm_" #name of storage type DType::dtype
// and precision GemmPrecision::k##Name (kernels/gemm.h), set up by cpu::GemmSetup##Name
// (kernels/cpu_gemm.cc) and cuda::GemmSetup##Name (kernels/cuda/gemm_cuda.cc).
// kernels/families/gemm.cc declares the setups and the variants from it (in this order, the
// catalog's); a binding defines its setups from it.
#ifndef GPUBENCH_KERNELS_FAMILIES_GEMM_PRECISIONS_H_
#define GPUBENCH_KERNELS_FAMILIES_GEMM_PRECISIONS_H_

#define GPUBENCH_GEMM_PRECISIONS(X)                                                        \
  X(F16, f16, kF16, 70,                                                                    \
    "cuBLASLt GEMM, f16 in and out, f32 accumulate (tensor cores)")                        \
  X(BF16, bf16, kBF16, 80,                                                                 \
    "cuBLASLt GEMM, bf16 in and out, f32 accumulate (tensor cores)")                       \
  X(TF32, tf32, kF32, 80,                                                                  \
    "cuBLASLt GEMM, f32 in and out on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)")   \
  X(F32, f32, kF32, 0,                                                                     \
    "cuBLASLt GEMM, f32 FMA on CUDA cores (CUBLAS_COMPUTE_32F: no tensor path)")           \
  X(F64, f64, kF64, 0,                                                                     \
    "cuBLASLt GEMM, f64 (DMMA tensor cores where the GPU has them)")                       \
  X(F8E4M3, f8e4m3, kF8E4M3, 89,                                                           \
    "cuBLASLt GEMM, fp8 e4m3 in with per-tensor scales 1/8, bf16 out, f32 accumulate (as " \
    "torch._scaled_mm); compute capability 8.9+")

#endif  // GPUBENCH_KERNELS_FAMILIES_GEMM_PRECISIONS_H_
