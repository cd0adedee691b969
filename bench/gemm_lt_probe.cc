// Exploration probe for the gemm family (issue #17), independent of gpubench's own code: links only
// cudart and cuBLASLt (the device's toolkit copy, found through LD_LIBRARY_PATH).
//   fp8   : which descriptor choices cuBLASLt accepts for an e4m3 "TN" GEMM with a bf16 output
//           (scale pointers' alignment, set before or after the heuristic, workspace passed),
//           each checked on a few output elements against a host reference.
//   topn  : every candidate the heuristic returns (up to 16) for f16, bf16, tf32 and fp8 at the
//           given sizes, timed round-robin (3 rounds of a short event-timed batch).
//   hot   : the heuristic's first and the fastest candidate under gpubench's hot discipline for
//           SECONDS (11-launch batches back to back), median TFLOP/s.
// Built by CMake in CUDA builds (target gemm_lt_probe; libcublasLt.so.13 is found at run time
// through LD_LIBRARY_PATH, which bench/device_lib.sh sets; make_bundle.sh never packs it).
// Run:   gemm_lt_probe [SIZES=4096,8192] [WORKSPACE_MIB=32] [HOT_SECONDS=2]
//   PROBE_ONLY=bf16 limits the top-N part to one precision (and skips the fp8 variants);
//   PROBE_CANDIDATE=k launches only the heuristic's candidate k there (for ncu).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

struct Types {
  const char* name;
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  int in_bytes, out_bytes;
};
const Types kTypes[] = {
    {"f16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2},
    {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2},
    {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4},
    {"f8e4m3", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2},
};

struct Problem {
  const Types* t;
  int64_t m, n, k;
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
};

void Describe(const cublasLtMatmulAlgo_t& algo, char* out, size_t n) {
  int32_t id = 0;
  uint32_t tile = 0, stages = 0, split = 0, swz = 0, custom = 0, red = 0;
  uint16_t inner = 0, cluster = 0;
  size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof(red), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof(custom), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof(inner), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster), &w);
  std::snprintf(out, n, "algo %d tile %u stages %u splitk %u red %u swizzle %u custom %u inner %u cluster %u",
                id, tile, stages, split, red, swz, custom, inner, cluster);
}

// Creates descriptors; scales set on op when `scales` is non-null (fp8).
cublasStatus_t Make(Problem& p, const float* scale_a, const float* scale_b, int fast_accum) {
  cublasStatus_t s = cublasLtCreate(&p.h);
  if (s) return s;
  if ((s = cublasLtMatmulDescCreate(&p.op, p.t->compute, CUDA_R_32F))) return s;
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  if (fast_accum >= 0) {
    int8_t fa = static_cast<int8_t>(fast_accum);
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof(fa));
  }
  if (scale_a) {
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof(scale_a));
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof(scale_b));
  }
  cublasLtMatrixLayoutCreate(&p.a, p.t->ab, p.k, p.m, p.k);
  cublasLtMatrixLayoutCreate(&p.b, p.t->ab, p.k, p.n, p.k);
  cublasLtMatrixLayoutCreate(&p.c, p.t->cd, p.m, p.n, p.m);
  cublasLtMatrixLayoutCreate(&p.d, p.t->cd, p.m, p.n, p.m);
  return CUBLAS_STATUS_SUCCESS;
}

void Free(Problem& p) {
  cublasLtMatrixLayoutDestroy(p.a);
  cublasLtMatrixLayoutDestroy(p.b);
  cublasLtMatrixLayoutDestroy(p.c);
  cublasLtMatrixLayoutDestroy(p.d);
  cublasLtMatmulDescDestroy(p.op);
  cublasLtDestroy(p.h);
}

int Heuristic(Problem& p, size_t workspace, std::vector<cublasLtMatmulHeuristicResult_t>* out,
              cublasStatus_t* status) {
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof(workspace));
  out->assign(16, {});
  int n = 0;
  *status = cublasLtMatmulAlgoGetHeuristic(p.h, p.op, p.a, p.b, p.c, p.d, pref, 16, out->data(), &n);
  cublasLtMatmulPreferenceDestroy(pref);
  out->resize(n);
  return n;
}

// Host data: uniform [-1, 1) (fp8: [-8, 8) with scale 1/8), as gpubench generates.
void Fill(const Types& t, std::vector<unsigned char>* buf, int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  buf->resize(static_cast<size_t>(count) * t.in_bytes);
  for (int64_t i = 0; i < count; ++i) {
    float v = u(rng);
    if (t.ab == CUDA_R_16F) reinterpret_cast<__half*>(buf->data())[i] = __float2half(v);
    else if (t.ab == CUDA_R_16BF) reinterpret_cast<__nv_bfloat16*>(buf->data())[i] = __float2bfloat16(v);
    else if (t.ab == CUDA_R_32F) reinterpret_cast<float*>(buf->data())[i] = v;
    else reinterpret_cast<__nv_fp8_e4m3*>(buf->data())[i] = __nv_fp8_e4m3(v * 8);
  }
}
double In(const Types& t, const std::vector<unsigned char>& b, int64_t i) {
  if (t.ab == CUDA_R_16F) return __half2float(reinterpret_cast<const __half*>(b.data())[i]);
  if (t.ab == CUDA_R_16BF) return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(b.data())[i]);
  if (t.ab == CUDA_R_32F) return reinterpret_cast<const float*>(b.data())[i];
  return static_cast<float>(reinterpret_cast<const __nv_fp8_e4m3*>(b.data())[i]);
}
double Out(const Types& t, const std::vector<unsigned char>& d, int64_t i) {
  if (t.cd == CUDA_R_16F) return __half2float(reinterpret_cast<const __half*>(d.data())[i]);
  if (t.cd == CUDA_R_16BF) return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(d.data())[i]);
  return reinterpret_cast<const float*>(d.data())[i];
}

struct Buffers {
  void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr, *ws = nullptr;
  float* scales = nullptr;
  std::vector<unsigned char> ha, hb;
};

Buffers Alloc(const Types& t, int64_t m, int64_t n, int64_t k, size_t ws) {
  Buffers B;
  Fill(t, &B.ha, m * k, 1);
  Fill(t, &B.hb, n * k, 2);
  CK(cudaMalloc(&B.a, B.ha.size()));
  CK(cudaMalloc(&B.b, B.hb.size()));
  CK(cudaMalloc(&B.c, m * n * t.out_bytes));
  CK(cudaMalloc(&B.d, m * n * t.out_bytes));
  CK(cudaMalloc(&B.ws, std::max<size_t>(ws, 256)));
  // scale_a at [0], scale_b at [1] (4-byte aligned) and again at [64] (256-byte aligned).
  CK(cudaMalloc(reinterpret_cast<void**>(&B.scales), 512));
  float s[128] = {};
  s[0] = s[1] = s[64] = t.ab == CUDA_R_8F_E4M3 ? 0.125f : 1.f;
  CK(cudaMemcpy(B.scales, s, sizeof(s), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B.a, B.ha.data(), B.ha.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B.b, B.hb.data(), B.hb.size(), cudaMemcpyHostToDevice));
  CK(cudaMemset(B.c, 0, m * n * t.out_bytes));
  return B;
}
void FreeB(Buffers& B) {
  cudaFree(B.a); cudaFree(B.b); cudaFree(B.c); cudaFree(B.d); cudaFree(B.ws); cudaFree(B.scales);
}

cublasStatus_t Launch(Problem& p, Buffers& B, const cublasLtMatmulAlgo_t* algo, size_t ws,
                      bool c_is_d, cudaStream_t st) {
  float alpha = 1, beta = 0;
  return cublasLtMatmul(p.h, p.op, &alpha, B.a, p.a, B.b, p.b, &beta, c_is_d ? B.d : B.c, p.c, B.d,
                        p.d, algo, B.ws, ws, st);
}

// Worst |error| / (tolerance) over 64 sampled elements.
double Check(Problem& p, Buffers& B) {
  const Types& t = *p.t;
  std::vector<unsigned char> d(static_cast<size_t>(p.m * p.n * t.out_bytes));
  CK(cudaMemcpy(d.data(), B.d, d.size(), cudaMemcpyDeviceToHost));
  double scale = t.ab == CUDA_R_8F_E4M3 ? 1.0 / 64 : 1.0;
  double worst = 0;
  std::mt19937_64 rng(7);
  for (int s = 0; s < 64; ++s) {
    int64_t r = rng() % p.m, c = rng() % p.n;
    double ref = 0, abs_sum = 0;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      double x = In(t, B.ha, r * p.k + kk) * In(t, B.hb, c * p.k + kk);
      ref += x;
      abs_sum += std::fabs(x);
    }
    ref *= scale;
    abs_sum *= scale;
    double tol = 0.02 * std::fabs(ref) + 1e-3 * abs_sum + 1e-2;  // loose: catches garbage only
    double got = Out(t, d, r + c * p.m);
    worst = std::max(worst, std::isfinite(got) ? std::fabs(got - ref) / tol : 1e9);
  }
  return worst;
}

void Fp8Variants() {
  const Types& t = kTypes[3];
  const int64_t m = 528, n = 400, k = 272;
  std::printf("== fp8 variants (%lldx%lldx%lld, TN, D bf16, C bf16, fast accumulation off)\n",
              (long long)m, (long long)n, (long long)k);
  const size_t ws = 32u << 20;
  struct Variant {
    const char* name;
    int scale_b_offset;  // floats after scale_a: 1 = 4-byte aligned, 64 = 256-byte aligned
    bool before;         // scale pointers set before the heuristic
    bool full_workspace; // pass 1 MiB (else the heuristic's workspaceSize)
  };
  const Variant variants[] = {
      {"scale_b 4-byte aligned, set before heuristic, heuristic's workspace", 1, true, false},
      {"scale_b 4-byte aligned, set after heuristic, heuristic's workspace", 1, false, false},
      {"scale_b 256-byte aligned, set before heuristic, heuristic's workspace", 64, true, false},
      {"scale_b 4-byte aligned, set before heuristic, 1 MiB workspace", 1, true, true},
      {"scale_b 256-byte aligned, set before heuristic, 1 MiB workspace", 64, true, true},
      {"scale_b 256-byte aligned, set after heuristic, 1 MiB workspace", 64, false, true},
  };
  for (const Variant& v : variants) {
    Problem p{&t, m, n, k};
    Buffers B = Alloc(t, m, n, k, ws);
    const float* sa = B.scales;
    const float* sb = B.scales + v.scale_b_offset;
    Make(p, v.before ? sa : nullptr, v.before ? sb : nullptr, 0);
    std::vector<cublasLtMatmulHeuristicResult_t> r;
    cublasStatus_t hs;
    int count = Heuristic(p, ws, &r, &hs);
    if (!v.before) {
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa));
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb));
    }
    int ok = 0;
    cublasStatus_t fail_status = CUBLAS_STATUS_SUCCESS;
    double worst = -1;
    for (int i = 0; i < count; ++i) {
      cublasStatus_t s = Launch(p, B, &r[i].algo, v.full_workspace ? (1u << 20) : r[i].workspaceSize,
                                true, nullptr);
      if (s == CUBLAS_STATUS_SUCCESS) {
        ++ok;
        CK(cudaDeviceSynchronize());
        worst = std::max(worst, Check(p, B));
      } else if (fail_status == CUBLAS_STATUS_SUCCESS) {
        fail_status = s;
      }
    }
    std::printf("fp8 %s: heuristic %s, %d candidates; cublasLtMatmul ok for %d of %d%s%s; worst err/tol %.3g\n",
                v.name, cublasLtGetStatusString(hs), count, ok, count,
                fail_status != CUBLAS_STATUS_SUCCESS ? "; refused: " : "",
                fail_status != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(fail_status) : "",
                worst);
    FreeB(B);
    Free(p);
  }
}

double TimeBatch(Problem& p, Buffers& B, const cublasLtMatmulAlgo_t& algo, size_t ws, int batch,
                 cudaEvent_t e0, cudaEvent_t e1) {
  cudaEventRecord(e0);
  for (int i = 0; i < batch; ++i) Launch(p, B, &algo, ws, true, nullptr);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  return ms * 1e-3 / batch;
}

void TopN(int64_t size, size_t ws, double hot_seconds) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const char* only = std::getenv("PROBE_ONLY");  // one precision (for ncu)
  for (const Types& t : kTypes) {
    if (only != nullptr && std::string(only) != t.name) continue;
    const bool fp8 = t.ab == CUDA_R_8F_E4M3;
    Problem p{&t, size, size, size};
    Buffers B = Alloc(t, size, size, size, ws);
    Make(p, fp8 ? B.scales : nullptr, fp8 ? B.scales + 64 : nullptr, fp8 ? 0 : -1);
    std::vector<cublasLtMatmulHeuristicResult_t> r;
    cublasStatus_t hs;
    int count = Heuristic(p, ws, &r, &hs);
    const double flops = 2.0 * size * size * size;
    const int batch = size <= 4096 ? 20 : 5;
    std::vector<std::vector<double>> times(count);
    std::vector<bool> ok(count, true);
    // PROBE_CANDIDATE=k: only candidate k (its 2 warm-up launches, then its trials), for ncu.
    const char* only_candidate = std::getenv("PROBE_CANDIDATE");
    if (only_candidate != nullptr) {
      for (int i = 0; i < count; ++i) ok[i] = i == std::atoi(only_candidate);
      hot_seconds = 0;
    }
    for (int i = 0; i < count; ++i) {
      for (int w = 0; w < 2 && ok[i]; ++w)
        ok[i] = Launch(p, B, &r[i].algo, ws, true, nullptr) == CUBLAS_STATUS_SUCCESS;
    }
    CK(cudaDeviceSynchronize());
    for (int round = 0; round < 3; ++round)
      for (int i = 0; i < count; ++i)
        if (ok[i]) times[i].push_back(TimeBatch(p, B, r[i].algo, ws, batch, e0, e1));
    int best = -1;
    double best_t = 1e30;
    std::printf("== topn %s %lld^3 workspace %zu MiB: heuristic %s, %d candidates\n", t.name,
                (long long)size, ws >> 20, cublasLtGetStatusString(hs), count);
    for (int i = 0; i < count; ++i) {
      char desc[256];
      Describe(r[i].algo, desc, sizeof(desc));
      if (!ok[i]) {
        std::printf("  #%2d %s ws %zu waves %.2f: FAILED to launch\n", i, desc, r[i].workspaceSize, r[i].wavesCount);
        continue;
      }
      std::sort(times[i].begin(), times[i].end());
      double med = times[i][1];
      if (med < best_t) best_t = med, best = i;
      std::printf("  #%2d %s ws %zu waves %.2f: %.1f TFLOP/s (min %.1f)\n", i, desc,
                  r[i].workspaceSize, r[i].wavesCount, flops / med / 1e12, flops / times[i][0] / 1e12);
    }
    if (count > 0 && only_candidate == nullptr) {
      std::printf("  check first: err/tol %.3g\n", (Launch(p, B, &r[0].algo, ws, true, nullptr), cudaDeviceSynchronize(), Check(p, B)));
    }
    // Hot discipline: 11-launch batches back to back for hot_seconds; first vs fastest, twice, alternating.
    if (best >= 0 && hot_seconds > 0) {
      for (int rep = 0; rep < 2; ++rep)
        for (int which : {0, best}) {
          if (!ok[which]) continue;
          std::vector<double> s;
          auto t0 = std::chrono::steady_clock::now();
          while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < hot_seconds)
            s.push_back(TimeBatch(p, B, r[which].algo, ws, 11, e0, e1));
          std::sort(s.begin(), s.end());
          std::printf("  hot %s #%d: %zu batches of 11, median %.1f TFLOP/s, p5 %.1f p95 %.1f\n",
                      which == 0 ? "first  " : "fastest", which, s.size(),
                      flops / s[s.size() / 2] / 1e12, flops / s[s.size() * 95 / 100] / 1e12,
                      flops / s[s.size() * 5 / 100] / 1e12);
        }
    }
    std::fflush(stdout);
    FreeB(B);
    Free(p);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = argc > 1 ? argv[1] : "4096,8192";
  size_t ws = (argc > 2 ? std::atoll(argv[2]) : 32) << 20;
  double hot = argc > 3 ? std::atof(argv[3]) : 2.0;
  std::printf("cuBLASLt version %zu\n", cublasLtGetVersion());
  if (std::getenv("PROBE_ONLY") == nullptr) Fp8Variants();
  std::fflush(stdout);
  for (size_t pos = 0; pos < sizes.size();) {
    size_t comma = sizes.find(',', pos);
    if (comma == std::string::npos) comma = sizes.size();
    TopN(std::atoll(sizes.substr(pos, comma - pos).c_str()), ws, hot);
    pos = comma + 1;
  }
  return 0;
}
