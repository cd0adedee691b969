#include "kernels/catalog.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/echo.h"
#include "kernels/cpu_kernels.h"

#if GPUBENCH_HAVE_CUDA
#include "kernels/cuda/launchers.h"
#define GPUBENCH_CUDA(fn) (&::gpubench::cuda::fn)
#else
#define GPUBENCH_CUDA(fn) nullptr
#endif

namespace gpubench {
namespace {

constexpr absl::string_view kSeedAdd = "seed 000_90ef8f88548fa484 (elementwise add, RTX 5090)";
constexpr absl::string_view kSeedSaxpy = "seed 003_e7b5082a0653f0fc (Puzzle 31 occupancy, A10G)";

// Tolerances: IEEE adds are correctly rounded on host and device, so add results must match the
// reference bit for bit. bf16 allows one bf16 ulp because pre-sm_90 devices add bf16 through
// float with a second rounding. SAXPY allows float rounding differences from FMA contraction.
constexpr double kExact = 0.0;
constexpr double kBf16Ulp = 1.0 / 128;
constexpr double kSaxpyRtol = 1e-5;
constexpr double kSaxpyAtol = 1e-6;

// Seed launch policies: 256 threads per block; the x4 variant launches 256 / 4 = 64 threads over
// ceil(N / 256) blocks and the x8 variants 256 / 8 = 32 threads, which grid = ceil(N / (block *
// items)) reproduces exactly. SAXPY: 1024 threads per block, as the puzzle.
constexpr KernelVariant kKernels[] = {
    {"add_f32", KernelFamily::kElementwiseAdd, DType::kF32, 12, {256, 1, true}, 0,
     "c = a + b, one float per thread (scalar 32-bit loads)", kSeedAdd, kExact, kExact,
     &cpu::AddF32, GPUBENCH_CUDA(LaunchAddF32)},
    {"add_f32x4", KernelFamily::kElementwiseAdd, DType::kF32, 12, {64, 4, true}, 0,
     "c = a + b, four floats per thread through float4 (128-bit loads), scalar tail",
     kSeedAdd, kExact, kExact, &cpu::AddF32x4, GPUBENCH_CUDA(LaunchAddF32x4)},
    {"add_f16", KernelFamily::kElementwiseAdd, DType::kF16, 6, {256, 1, true}, 0,
     "c = a + b in fp16, one half per thread (__hadd)", kSeedAdd, kExact, kExact, &cpu::AddF16,
     GPUBENCH_CUDA(LaunchAddF16)},
    {"add_f16x2", KernelFamily::kElementwiseAdd, DType::kF16, 6, {256, 2, true}, 0,
     "c = a + b in fp16, one half2 per thread (__hadd2, 32-bit loads)", kSeedAdd, kExact, kExact,
     &cpu::AddF16x2, GPUBENCH_CUDA(LaunchAddF16x2)},
    {"add_f16x8", KernelFamily::kElementwiseAdd, DType::kF16, 6, {32, 8, true}, 0,
     "c = a + b in fp16, eight halves per thread as four unrolled half2 loads", kSeedAdd, kExact,
     kExact, &cpu::AddF16x8, GPUBENCH_CUDA(LaunchAddF16x8)},
    {"add_f16x8_pack", KernelFamily::kElementwiseAdd, DType::kF16, 6, {32, 8, true}, 0,
     "c = a + b in fp16, eight halves per thread packed in one 128-bit load/store", kSeedAdd,
     kExact, kExact, &cpu::AddF16x8Pack, GPUBENCH_CUDA(LaunchAddF16x8Pack)},
    // bf16 versions of the seed's patterns, so all three dtypes compare.
    {"add_bf16", KernelFamily::kElementwiseAdd, DType::kBF16, 6, {256, 1, true}, 0,
     "c = a + b in bf16, one value per thread (the seed's scalar pattern)", kSeedAdd, kBf16Ulp,
     kExact, &cpu::AddBF16, GPUBENCH_CUDA(LaunchAddBF16)},
    {"add_bf16x2", KernelFamily::kElementwiseAdd, DType::kBF16, 6, {256, 2, true}, 0,
     "c = a + b in bf16, one bf16x2 per thread (32-bit loads)", kSeedAdd, kBf16Ulp, kExact,
     &cpu::AddBF16x2, GPUBENCH_CUDA(LaunchAddBF16x2)},
    {"add_bf16x8_pack", KernelFamily::kElementwiseAdd, DType::kBF16, 6, {32, 8, true}, 0,
     "c = a + b in bf16, eight values per thread packed in one 128-bit load/store", kSeedAdd,
     kBf16Ulp, kExact, &cpu::AddBF16x8, GPUBENCH_CUDA(LaunchAddBF16x8Pack)},
    // Tuned: one pass, 16-byte read-only loads (1, 2, 4 or 8 per operand per thread by request
    // or Autotune), default 768 threads x one 16-byte packet (12 KiB tiles per operand).
    // H200, 2026-11-29 (bench/results/2026-11-29-h200-add.md): the first try (4 streaming loads,
    // grid-stride over a resident grid, kept below as add_f32_gridstride) reached only
    // 4.07-4.11 TB/s hot at 256Mi against CUB's 4.41; 256 threads x 2 packets reached 4.39; the
    // tile-shape sweep (bench/run_device_shapes.sh) found 768 x 1 packet best for f32: 4.43 TB/s
    // at 256Mi and 48.8 us at 16Mi hot (CUB 4.42, 49.0-49.3 us). f16/bf16 use the same bytes.
    // Grids under 8 waves (1Mi: 1.3 waves of 768-thread blocks) use 256 threads instead:
    // 1Mi hot 3.15 us (f32) and 2.66 us (f16) against 3.35 and 2.89 us at 768
    // (bench/run_device_small.sh).
    {"add_f32_tuned", KernelFamily::kElementwiseAdd, DType::kF32, 12, {768, 4, true, false, 32, 0, false, 256}, 0,
     "c = a + b, 16-byte read-only loads (items / 4 per operand per thread), one pass",
     "gpubench tuned (Hopper habits: wide loads, ILP)", kExact, kExact, &cpu::AddF32Tuned,
     GPUBENCH_CUDA(LaunchAddF32Tuned)},
    {"add_f16_tuned", KernelFamily::kElementwiseAdd, DType::kF16, 6, {768, 8, true, false, 64, 0, false, 256}, 0,
     "c = a + b in fp16, 16-byte read-only loads (items / 8 per operand per thread), one pass",
     "gpubench tuned (Hopper habits: wide loads, ILP)", kExact, kExact, &cpu::AddF16Tuned,
     GPUBENCH_CUDA(LaunchAddF16Tuned)},
    {"add_bf16_tuned", KernelFamily::kElementwiseAdd, DType::kBF16, 6, {768, 8, true, false, 64, 0, false, 256},
     0,
     "c = a + b in bf16, 16-byte read-only loads (items / 8 per operand per thread), one pass",
     "gpubench tuned (Hopper habits: wide loads, ILP)", kBf16Ulp, kExact, &cpu::AddBF16Tuned,
     GPUBENCH_CUDA(LaunchAddBF16Tuned)},
    {"add_f32_gridstride", KernelFamily::kElementwiseAdd, DType::kF32, 12, {256, 16, true, true}, 0,
     "c = a + b, four 16-byte streaming loads per operand per thread, grid-stride over the "
     "resident grid (occupancy API)",
     "gpubench experiment (persistent grid + streaming hints)", kExact, kExact,
     &cpu::AddF32GridStride, GPUBENCH_CUDA(LaunchAddF32GridStride)},
    // Bulk copy (sm_90+): one block per tile of block x items elements; one thread has the copy
    // engine (cp.async.bulk) fetch both input tiles into shared memory, completing on an
    // mbarrier, as CUB's sm_90 DeviceTransform policy does; 16-byte stores. Default tile: 3 KiB
    // per operand (256 threads x 3 floats, the tile CUB's 48-KiB-in-flight rule picks for f32 on
    // an H200). H200, 2026-11-29: 256 x 3 reached 4.44 TB/s at 256Mi hot (CUB 4.42); power-of-two
    // tiles of 2-16 KiB 4.29-4.40; 1 item per thread 2.9 (bench/results/2026-11-29-h200-add.md).
    // f16/bf16 use the same bytes (256 x 6).
    {"add_f32_bulk", KernelFamily::kElementwiseAdd, DType::kF32, 12, {256, 3, true, false, 64, 8, true},
     0, "c = a + b, tiles fetched by the bulk-copy engine (cp.async.bulk) into shared memory",
     "gpubench tuned (Hopper bulk copy, after CUB's sm_90 policy)", kExact, kExact,
     &cpu::AddF32Bulk, GPUBENCH_CUDA(LaunchAddF32Bulk), 90},
    {"add_f16_bulk", KernelFamily::kElementwiseAdd, DType::kF16, 6, {256, 6, true, false, 128, 4, true},
     0, "c = a + b in fp16, tiles fetched by the bulk-copy engine (cp.async.bulk)",
     "gpubench tuned (Hopper bulk copy, after CUB's sm_90 policy)", kExact, kExact,
     &cpu::AddF16Bulk, GPUBENCH_CUDA(LaunchAddF16Bulk), 90},
    {"add_bf16_bulk", KernelFamily::kElementwiseAdd, DType::kBF16, 6,
     {256, 6, true, false, 128, 4, true}, 0,
     "c = a + b in bf16, tiles fetched by the bulk-copy engine (cp.async.bulk)",
     "gpubench tuned (Hopper bulk copy, after CUB's sm_90 policy)", kBf16Ulp, kExact,
     &cpu::AddBF16Bulk, GPUBENCH_CUDA(LaunchAddBF16Bulk), 90},
    // L2-aware variants (issue #19). At 16Mi elements of fp16 the add moves 96 MiB, more than
    // the H200's 60 MB L2 but not by much, so in a loop over the same buffers (hot mode) the
    // cache policy decides how much of the inputs is still in L2 at the next launch.
    // add_*_stream: the tuned one-pass kernel with streaming loads and stores (__ldcs/__stcs,
    // evict-first), same tile rules as add_*_tuned.
    {"add_f32_stream", KernelFamily::kElementwiseAdd, DType::kF32, 12,
     {768, 4, true, false, 32, 0, false, 256}, 0,
     "c = a + b, 16-byte streaming loads and stores (__ldcs/__stcs: evict-first), one pass",
     "gpubench tuned (L2 policy: streaming)", kExact, kExact, &cpu::AddF32Tuned,
     GPUBENCH_CUDA(LaunchAddF32Stream)},
    {"add_f16_stream", KernelFamily::kElementwiseAdd, DType::kF16, 6,
     {768, 8, true, false, 64, 0, false, 256}, 0,
     "c = a + b in fp16, 16-byte streaming loads and stores (__ldcs/__stcs), one pass",
     "gpubench tuned (L2 policy: streaming)", kExact, kExact, &cpu::AddF16Tuned,
     GPUBENCH_CUDA(LaunchAddF16Stream)},
    {"add_bf16_stream", KernelFamily::kElementwiseAdd, DType::kBF16, 6,
     {768, 8, true, false, 64, 0, false, 256}, 0,
     "c = a + b in bf16, 16-byte streaming loads and stores (__ldcs/__stcs), one pass",
     "gpubench tuned (L2 policy: streaming)", kBf16Ulp, kExact, &cpu::AddBF16Tuned,
     GPUBENCH_CUDA(LaunchAddBF16Stream)},
    // add_*_l2keep: the one-pass kernel with L2 cache-policy hints: the first eighth of the L2 of
    // each input evict_last, the rest of the inputs and the output evict_first, while a + b + c
    // is at most 2 x L2; larger launches run add_*_tuned's read-only policy (add_kernels.cu).
    // H200, 2026-11-30 (bench/results/2026-11-30-h200-add-round2.md, bench/l2_probe.cu, fp16,
    // 768 threads x 1 packet): 16Mi hot 24.13 us with an eighth per input kept, 26.33 with a
    // quarter, 25.26 all evict_first, 25.46 __ldcs/__stcs, 26.32 read-only; 16Mi cold 28.5 vs
    // 29.0 read-only; 256Mi hot 399.8 vs 367.6 read-only (hence the 2 x L2 limit); an L2
    // set-aside for persisting lines (cudaLimitPersistingL2CacheSize) made it 2.2x slower, so the
    // kernel relies on the eviction priority alone. ncu: every policy reads all 64 MiB of inputs
    // from DRAM inside one launch (L2 read hit rate 0.03%), but the hinted/streaming ones write
    // 7-8 MB of the 33.5 MB output back during the launch against 18 MB (read-only) and 36 MB
    // (torch.add): less write-back of the previous launch's output competes with the reads.
    {"add_f32_l2keep", KernelFamily::kElementwiseAdd, DType::kF32, 12,
     {768, 4, true, false, 32, 0, false, 256}, 0,
     "c = a + b, 16-byte loads/stores with L2 hints: an eighth of L2 of each input evict_last, "
     "the rest evict_first (working sets up to 2 x L2)",
     "gpubench tuned (L2 policy: keep part of the inputs)", kExact, kExact, &cpu::AddF32Tuned,
     GPUBENCH_CUDA(LaunchAddF32L2Keep), 80},
    {"add_f16_l2keep", KernelFamily::kElementwiseAdd, DType::kF16, 6,
     {768, 8, true, false, 64, 0, false, 256}, 0,
     "c = a + b in fp16, 16-byte loads/stores with L2 evict_last/evict_first hints",
     "gpubench tuned (L2 policy: keep part of the inputs)", kExact, kExact, &cpu::AddF16Tuned,
     GPUBENCH_CUDA(LaunchAddF16L2Keep), 80},
    {"add_bf16_l2keep", KernelFamily::kElementwiseAdd, DType::kBF16, 6,
     {768, 8, true, false, 64, 0, false, 256}, 0,
     "c = a + b in bf16, 16-byte loads/stores with L2 evict_last/evict_first hints",
     "gpubench tuned (L2 policy: keep part of the inputs)", kBf16Ulp, kExact, &cpu::AddBF16Tuned,
     GPUBENCH_CUDA(LaunchAddBF16L2Keep), 80},
    // add_{f16,bf16}_gridstride: the grid-stride streaming kernel of add_f32_gridstride, 256
    // threads x 4 packets, capped at 4 resident blocks per SM. Issue #19 (H200, 2026-11-30):
    // this shape took 24.0 us at 16Mi fp16 hot against add_f16_tuned's 26.1 us.
    {"add_f16_gridstride", KernelFamily::kElementwiseAdd, DType::kF16, 6,
     {256, 32, true, true, 0, 0, false, 0, 4}, 0,
     "c = a + b in fp16, four 16-byte streaming loads per operand per thread, grid-stride over "
     "4 resident blocks per SM",
     "gpubench tuned (persistent grid + streaming hints)", kExact, kExact, &cpu::AddF16GridStride,
     GPUBENCH_CUDA(LaunchAddF16GridStride)},
    {"add_bf16_gridstride", KernelFamily::kElementwiseAdd, DType::kBF16, 6,
     {256, 32, true, true, 0, 0, false, 0, 4}, 0,
     "c = a + b in bf16, four 16-byte streaming loads per operand per thread, grid-stride over "
     "4 resident blocks per SM",
     "gpubench tuned (persistent grid + streaming hints)", kBf16Ulp, kExact,
     &cpu::AddBF16GridStride, GPUBENCH_CUDA(LaunchAddBF16GridStride)},
    {"saxpy_minimal", KernelFamily::kSaxpy, DType::kF32, 12, {1024, 1, true}, 0,
     "y = alpha * x + y, register-light, no shared memory", kSeedSaxpy, kSaxpyRtol, kSaxpyAtol,
     &cpu::SaxpyMinimal, GPUBENCH_CUDA(LaunchSaxpyMinimal)},
    {"saxpy_sophisticated", KernelFamily::kSaxpy, DType::kF32, 12, {1024, 1, true}, 48 * 1024,
     "y ~= alpha * x + y with extra register pressure and 48 KiB static shared memory",
     kSeedSaxpy, kSaxpyRtol, kSaxpyAtol, &cpu::SaxpySophisticated,
     GPUBENCH_CUDA(LaunchSaxpySophisticated)},
    {"saxpy_balanced", KernelFamily::kSaxpy, DType::kF32, 12, {1024, 1, true}, 16 * 1024,
     "y ~= alpha * x + y with moderate registers and 16 KiB static shared memory", kSeedSaxpy,
     kSaxpyRtol, kSaxpyAtol, &cpu::SaxpyBalanced, GPUBENCH_CUDA(LaunchSaxpyBalanced)},
    {"cub_add_f32", KernelFamily::kElementwiseAdd, DType::kF32, 12, {256, 1, false}, 0,
     "c = a + b through cub::DeviceTransform, the vendor's elementwise path",
     "baseline: CUB (CCCL) DeviceTransform", kExact, kExact, &cpu::AddF32,
     GPUBENCH_CUDA(LaunchCubAddF32)},
    {"cub_add_f16", KernelFamily::kElementwiseAdd, DType::kF16, 6, {256, 1, false}, 0,
     "c = a + b in fp16 through cub::DeviceTransform", "baseline: CUB (CCCL) DeviceTransform",
     kExact, kExact, &cpu::AddF16, GPUBENCH_CUDA(LaunchCubAddF16)},
    {"cub_add_bf16", KernelFamily::kElementwiseAdd, DType::kBF16, 6, {256, 1, false}, 0,
     "c = a + b in bf16 through cub::DeviceTransform", "baseline: CUB (CCCL) DeviceTransform",
     kBf16Ulp, kExact, &cpu::AddBF16, GPUBENCH_CUDA(LaunchCubAddBF16)},
    {"copy_d2d", KernelFamily::kCopy, DType::kF32, 8, {256, 16, false}, 0,
     "out = in through cudaMemcpyAsync device to device: the practical bandwidth ceiling",
     "baseline: CUDA runtime cudaMemcpyAsync", kExact, kExact, &cpu::CopyF32,
     GPUBENCH_CUDA(LaunchCopyD2D)},
};

}  // namespace

const char* KernelFamilyName(KernelFamily family) {
  switch (family) {
    case KernelFamily::kElementwiseAdd:
      return "elementwise_add";
    case KernelFamily::kSaxpy:
      return "saxpy";
    case KernelFamily::kCopy:
      return "copy";
  }
  return "unknown";
}

int BuffersPerRun(const KernelVariant& variant) {
  return variant.family == KernelFamily::kElementwiseAdd ? 3 : 2;
}

std::span<const KernelVariant> AllKernels() { return kKernels; }

bool ItemsPerThreadTunable(const KernelVariant& variant) {
  return variant.default_policy.max_items_per_thread > 0;
}

bool ItemsPerThreadAllowed(const KernelVariant& variant, int items) {
  const int width = 16 / DTypeSize(variant.dtype);
  if (ItemsPerThreadTunable(variant) && variant.default_policy.items_any_count) {
    return items >= 1 && items <= variant.default_policy.max_items_per_thread;
  }
  if (!ItemsPerThreadTunable(variant) || items < width ||
      items > variant.default_policy.max_items_per_thread || items % width != 0) {
    return false;
  }
  const int packets = items / width;
  return (packets & (packets - 1)) == 0;
}

std::string ItemsPerThreadRule(const KernelVariant& variant) {
  const LaunchPolicy& p = variant.default_policy;
  if (!ItemsPerThreadTunable(variant)) {
    return absl::StrCat("fixed at ", p.items_per_thread, " by the kernel's code");
  }
  if (p.items_any_count) return absl::StrCat("1 to ", p.max_items_per_thread);
  return absl::StrCat(16 / DTypeSize(variant.dtype),
                      " (one 16-byte packet) times a power of two, at most ",
                      p.max_items_per_thread);
}

std::vector<int> ItemsPerThreadCandidates(const KernelVariant& variant) {
  if (!ItemsPerThreadTunable(variant)) return {variant.default_policy.items_per_thread};
  std::vector<int> out;
  for (int items = 1; items <= variant.default_policy.max_items_per_thread; items *= 2) {
    if (ItemsPerThreadAllowed(variant, items)) out.push_back(items);
  }
  return out;
}

int64_t DynamicSharedBytes(const KernelVariant& variant, int block_size, int items_per_thread) {
  return int64_t{block_size} * items_per_thread *
         variant.default_policy.dynamic_shared_bytes_per_item;
}

std::string KernelNamesForHelp() {
  return absl::StrJoin(AllKernels(), ", ",
                       [](std::string* out, const KernelVariant& k) { absl::StrAppend(out, k.name); });
}

absl::StatusOr<const KernelVariant*> FindKernel(absl::string_view name) {
  for (const KernelVariant& k : AllKernels()) {
    if (k.name == name) return &k;
  }
  std::vector<std::string> names;
  for (const KernelVariant& k : AllKernels()) names.emplace_back(k.name);
  const std::vector<std::string> closest = ClosestNames(name, names, 3);
  return absl::NotFoundError(absl::StrCat(
      "unknown kernel '", EchoForMessage(name), "'",
      closest.empty() ? "" : absl::StrCat("; did you mean ", absl::StrJoin(closest, ", "), "?"),
      "; valid kernels: ", KernelNamesForHelp()));
}

}  // namespace gpubench
