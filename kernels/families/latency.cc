// The memory-latency family: a dependent-load pointer chase over one random cycle through a
// footprint (kernels/latency_layout.h), one thread, reported as seconds per load. A sweep over
// footprints from L1 size to far beyond L2 shows the L1, L2 and DRAM (HBM) plateaus.
//
// The request's `elements` is the footprint in BYTES (a multiple of 128, at least 256): a chase
// over 1Gi "elements" walks a cycle through 8 Mi nodes spread over 1 GiB. Hot: the warm-up
// launches walk the cycle first (each launch makes ChaseLoadsPerLaunch loads, at least the whole
// cycle up to 32 MiB), so every footprint a cache can hold is resident when timing starts (L1
// excepted: the GPU invalidates it at each launch, and a launch at an L1-sized footprint makes
// 1024 loads per node so that its reload from L2 stays under 1%). Cold: L2 (the CPU backend: its
// caches) is flushed before the one timed launch, so each node's first load of the launch comes
// from DRAM (from 8 to 32 MiB a launch loads each node exactly once: cold is DRAM latency there).
// gpubench cannot flush L1 (there is no API for it); the GPU invalidates it at every launch. Verification: after sampling, one
// launch from node 0 must end on the node the host's walk of the same cycle reaches.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/splitmix64.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/families/families.h"
#include "kernels/latency_chase.h"

namespace gpubench {

namespace cpu {
GPUBENCH_CPU_KERNEL(LatencyChase);
void LatencyChaseSetup(const KernelBuffers& buffers, const LaunchGeometry& geometry,
                       std::unique_ptr<LaunchState>* state, std::string* report);
}  // namespace cpu

#if GPUBENCH_HAVE_CUDA
namespace cuda {
GPUBENCH_CUDA_LAUNCHER(LaunchLatencyChase);
int LatencyChaseSetup(const KernelBuffers& buffers, const LaunchGeometry& geometry, void* stream,
                      std::unique_ptr<LaunchState>* state, std::string* report);
}  // namespace cuda
#endif

namespace {

// The chase buffer: the footprint as 8-byte words; node i's first word holds its successor's
// byte offset (a random single cycle from the run's seed).
int64_t ChaseWords(const RunShape& shape) { return shape.elements / 8; }
int64_t OneWord(const RunShape&) { return 1; }

void GenerateChase(const GenerateContext& context, std::span<std::byte> out) {
  const int64_t nodes = ChaseNodes(context.shape.elements);
  if (nodes < 2) return;  // a footprint the family refuses: nothing to lay out
  LayOutChase(RandomCycle(nodes, context.seed ^ (context.stream * kSplitMix64Gamma)), 0,
              out.data());
}

void GenerateStart(const GenerateContext&, std::span<std::byte> out) {
  std::memset(out.data(), 0, out.size());  // the chase starts at node 0
}

constexpr BufferSpec kLatencyBuffers[] = {
    // accesses 0: a chase reports no bandwidth (its loads are one 8-byte pointer at a time).
    {.name = "chase", .role = BufferRole::kInput, .dtype = DType::kU64, .elements = &ChaseWords,
     .generate = &GenerateChase, .seed_stream = 0, .accesses = 0},
    {.name = "position", .role = BufferRole::kInOut, .dtype = DType::kU64, .elements = &OneWord,
     .generate = &GenerateStart, .accesses = 0},
};

int64_t ChaseLoads(const RunShape& shape) { return ChaseLoadsPerLaunch(shape.elements); }
int64_t OneThread(const RunShape&) { return 1; }

absl::StatusOr<RunShape> ResolveFootprint(int64_t footprint_bytes, const RunShape& requested) {
  if (requested.m != 0 || requested.n != 0 || requested.k != 0) {
    return absl::InvalidArgumentError("the latency family takes a footprint (elements = bytes), "
                                      "not m, n or k");
  }
  if (footprint_bytes < kChaseMinFootprintBytes || footprint_bytes % kChaseStrideBytes != 0 ||
      ChaseNodes(footprint_bytes) > kChaseMaxNodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a latency footprint (elements, in bytes) must be a multiple of ", kChaseStrideBytes,
        " from ", kChaseMinFootprintBytes, " to ", kChaseMaxNodes * kChaseStrideBytes,
        " bytes; got ", footprint_bytes));
  }
  return RunShape{.elements = footprint_bytes};
}

// The node a chase of one launch from node 0 ends on: the host's walk of the generated cycle.
double LatencyReference(const KernelVariant&, const HostData& data, int, int64_t) {
  const std::byte* chase = data.buffers[0].data();
  uint64_t node = 0;
  if (ChaseNodes(data.shape.elements) < 2) return 0;  // nothing to walk: the chase stays at 0
  for (int64_t i = ChaseLoadsPerLaunch(data.shape.elements); i > 0; --i) {
    uint64_t offset;
    std::memcpy(&offset, chase + node * kChaseStrideBytes, sizeof(offset));
    node = offset / kChaseStrideBytes;
  }
  return static_cast<double>(node);
}

constexpr KernelVariant kVariants[] = {
    {.name = "latency_chase",
     .family = &kLatency,
     .dtype = DType::kU64,
     // One thread of one block: a single dependent chain (more threads would overlap loads).
     .default_policy = {.block_size = 1, .items_per_thread = 1, .block_size_tunable = false},
     .description = "pointer chase: one thread, each 8-byte load's address from the previous "
                    "load, over a random single cycle at a 128-byte stride through a footprint "
                    "of `elements` BYTES; seconds per load",
     .provenance = "the dependent-load chase of Saavedra & Smith (1995) and "
                   "Mei & Chu, 'Dissecting GPU Memory Hierarchy through Microbenchmarking' "
                   "(IEEE TPDS 2017); cross-checked by bench/pchase.cu",
     .cpu = &cpu::LatencyChase,
     .cuda = GPUBENCH_CUDA(LaunchLatencyChase),
     .cpu_setup = &cpu::LatencyChaseSetup,
     .cuda_setup = GPUBENCH_CUDA(LatencyChaseSetup)},
};

}  // namespace

constexpr KernelFamily kLatency{
    .name = "latency",
    .buffers = kLatencyBuffers,
    .metric = Metric::kSecondsPerOperation,
    .operation_unit = "load",
    .operations = &ChaseLoads,
    .reference = &LatencyReference,
    .resolve_shape = &ResolveFootprint,
    .launch_items = &OneThread,
    .cpu_chunk_threads = 1,
};

std::span<const KernelVariant> LatencyVariants() { return kVariants; }

}  // namespace gpubench
