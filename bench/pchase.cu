// pchase: an independent pointer-chase latency probe, the cross-check of gpubench's latency
// family. Shares no code with gpubench: its own cycle generator (a shuffled visiting
// order linked into a ring, not Sattolo's algorithm), its own host-built layout copied to the
// device (gpubench lays the cycle out with a device kernel), and in-kernel timing (clock64 cycles
// and %globaltimer nanoseconds around the timed walk, not CUDA events around launches).
//
//   pchase [--stride=128] [--loads=65536] [--reps=5] [--seed=1] [--device=0] FOOTPRINT...
//   FOOTPRINT: bytes, with an optional Ki / Mi / Gi suffix (16Ki, 1Gi).
//
// Per footprint and repetition, one single-thread kernel first walks the cycle (warm-up:
// min(nodes, 2 x L2 / stride) loads, so every footprint that fits in L2 is resident), then reads
// the clocks, makes `loads` dependent loads, and reads the clocks again. The median over the
// repetitions is printed as CSV; `verified` says the chase ended on the node the host's walk of
// the same cycle reaches.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "pchase: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), \
                   __FILE__, __LINE__);                                               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

struct Timing {
  unsigned long long end;  // device address the walk ended on
  long long cycles;        // clock64 over the timed loads
  unsigned long long ns;   // %globaltimer over the same window
};

__device__ __forceinline__ unsigned long long GlobalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned long long LoadNext(unsigned long long address) {
  unsigned long long v;
  asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(address) : "memory");
  return v;
}

__global__ void Walk(unsigned long long start, long long warm, long long loads, Timing* out) {
  unsigned long long p = start;
  for (long long i = 0; i < warm; ++i) p = LoadNext(p);
  // The clocks are read without waiting for the load in flight (the last warm one at the start,
  // the last timed one at the end): the window is off by at most one load, 1 / loads.
  const unsigned long long t0 = GlobalTimer();
  const long long c0 = clock64();
  for (long long i = 0; i < loads; ++i) p = LoadNext(p);
  const long long c1 = clock64();
  const unsigned long long t1 = GlobalTimer();
  out->end = p;
  out->cycles = c1 - c0;
  out->ns = t1 - t0;
}

long long ParseBytes(const std::string& s) {
  char* rest = nullptr;
  const long long v = std::strtoll(s.c_str(), &rest, 10);
  const std::string suffix(rest);
  if (suffix.empty()) return v;
  if (suffix == "Ki") return v << 10;
  if (suffix == "Mi") return v << 20;
  if (suffix == "Gi") return v << 30;
  std::fprintf(stderr, "pchase: bad size %s (bytes, optionally Ki, Mi or Gi)\n", s.c_str());
  std::exit(2);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  long long stride = 128, loads = 65536;
  int reps = 5, device = 0;
  unsigned long long seed = 1;
  std::vector<long long> footprints;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 ? a.c_str() + n : nullptr;
    };
    if (const char* v = value("--stride=")) stride = std::atoll(v);
    else if (const char* v = value("--loads=")) loads = std::atoll(v);
    else if (const char* v = value("--reps=")) reps = std::atoi(v);
    else if (const char* v = value("--seed=")) seed = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--device=")) device = std::atoi(v);
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "pchase: unknown flag %s\n", a.c_str());
      return 2;
    } else footprints.push_back(ParseBytes(a));
  }
  if (footprints.empty() || stride < 8 || stride % 8 != 0 || loads < 1 || reps < 1) {
    std::fprintf(stderr, "usage: pchase [--stride=128] [--loads=65536] [--reps=5] [--seed=1] "
                         "[--device=0] FOOTPRINT...\n");
    return 2;
  }
  CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("# pchase on %s (L2 %d bytes), stride %lld, %lld loads, %d reps\n", prop.name,
              prop.l2CacheSize, stride, loads, reps);
  std::printf("footprint_bytes,nodes,loads,cycles_per_load,ns_per_load,clock_mhz,end_node,"
              "host_end_node,verified\n");
  Timing* out = nullptr;
  CHECK(cudaMallocManaged(&out, sizeof(Timing)));
  bool all_verified = true;
  for (const long long footprint : footprints) {
    const long long nodes = footprint / stride;
    if (nodes < 2) {
      std::fprintf(stderr, "pchase: footprint %lld holds fewer than 2 nodes\n", footprint);
      return 2;
    }
    // The ring: node 0 first, the others in a shuffled order, each linked to the one after it
    // and the last back to node 0 (one cycle through every node by construction).
    std::vector<long long> order(nodes);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(seed + footprint);
    std::shuffle(order.begin() + 1, order.end(), rng);
    std::vector<long long> next(nodes);
    for (long long k = 0; k < nodes; ++k) next[order[k]] = order[(k + 1) % nodes];

    char* buffer = nullptr;
    CHECK(cudaMalloc(&buffer, nodes * stride));
    const unsigned long long base = reinterpret_cast<unsigned long long>(buffer);
    std::vector<unsigned long long> host(nodes * stride / 8, 0);
    for (long long i = 0; i < nodes; ++i) host[i * stride / 8] = base + next[i] * stride;
    CHECK(cudaMemcpy(buffer, host.data(), nodes * stride, cudaMemcpyHostToDevice));

    const long long warm = std::min<long long>(nodes, 2LL * prop.l2CacheSize / stride);
    std::vector<double> cycles, ns;
    unsigned long long position = base;
    long long host_node = 0;
    bool verified = true;
    for (int r = 0; r < reps; ++r) {
      Walk<<<1, 1>>>(position, warm, loads, out);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      for (long long i = 0; i < warm + loads; ++i) host_node = next[host_node];
      verified = verified && out->end == base + host_node * stride;
      position = out->end;
      cycles.push_back(static_cast<double>(out->cycles) / loads);
      ns.push_back(static_cast<double>(out->ns) / loads);
    }
    const double c = Median(cycles), t = Median(ns);
    std::printf("%lld,%lld,%lld,%.2f,%.3f,%.0f,%llu,%lld,%s\n", footprint, nodes, loads, c, t,
                1e3 * c / t, (position - base) / stride, host_node, verified ? "pass" : "FAIL");
    std::fflush(stdout);
    all_verified = all_verified && verified;
    CHECK(cudaFree(buffer));
  }
  CHECK(cudaFree(out));
  return all_verified ? 0 : 1;
}
