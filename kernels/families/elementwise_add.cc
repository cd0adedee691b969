// The elementwise-add family (c = a + b) and the registration list of its variants: the seed's
// patterns, the tuned one-pass, L2-aware, grid-stride and bulk-copy kernels, and CUB's
// DeviceTransform as the vendor baseline. Each entry binds its CPU emulation
// (kernels/cpu_kernels.cc) and CUDA launcher (kernels/cuda/add_kernels.cu,
// add_bulk_kernels.cu, cub_kernels.cu); the evidence for each tuned value sits beside it.
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/families/families.h"

namespace gpubench {

namespace cpu {
GPUBENCH_CPU_KERNEL(AddF32);
GPUBENCH_CPU_KERNEL(AddF32x4);
GPUBENCH_CPU_KERNEL(AddF16);
GPUBENCH_CPU_KERNEL(AddF16x2);
GPUBENCH_CPU_KERNEL(AddF16x8);
GPUBENCH_CPU_KERNEL(AddF16x8Pack);
GPUBENCH_CPU_KERNEL(AddBF16);
GPUBENCH_CPU_KERNEL(AddBF16x2);
GPUBENCH_CPU_KERNEL(AddBF16x8Pack);
GPUBENCH_CPU_KERNEL(AddF32OnePass);
GPUBENCH_CPU_KERNEL(AddF16OnePass);
GPUBENCH_CPU_KERNEL(AddBF16OnePass);
GPUBENCH_CPU_KERNEL(AddF32GridStride);
GPUBENCH_CPU_KERNEL(AddF16GridStride);
GPUBENCH_CPU_KERNEL(AddBF16GridStride);
GPUBENCH_CPU_KERNEL(AddF32Bulk);
GPUBENCH_CPU_KERNEL(AddF16Bulk);
GPUBENCH_CPU_KERNEL(AddBF16Bulk);
}  // namespace cpu

#if GPUBENCH_HAVE_CUDA
namespace cuda {
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32x4);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16x2);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16x8);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16x8Pack);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16x2);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16x8Pack);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32Tuned);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16Tuned);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16Tuned);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32GridStride);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16GridStride);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16GridStride);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32Stream);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16Stream);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16Stream);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32L2Keep);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16L2Keep);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16L2Keep);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32L2KeepPdl);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16L2KeepPdl);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16L2KeepPdl);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32Bulk);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16Bulk);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16Bulk);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF32BulkPdl);
GPUBENCH_CUDA_LAUNCHER(LaunchAddF16BulkPdl);
GPUBENCH_CUDA_LAUNCHER(LaunchAddBF16BulkPdl);
GPUBENCH_CUDA_LAUNCHER(LaunchCubAddF32);
GPUBENCH_CUDA_LAUNCHER(LaunchCubAddF16);
GPUBENCH_CUDA_LAUNCHER(LaunchCubAddBF16);
GPUBENCH_DEVICE_CHECK(CheckAdd);  // kernels/cuda/reference_kernels.cu
}  // namespace cuda
#endif

namespace {

// ---- the family ------------------------------------------------------------------------------

constexpr BufferSpec kAddBuffers[] = {
    {.name = "a", .role = BufferRole::kInput, .seed_stream = 0},
    {.name = "b", .role = BufferRole::kInput, .seed_stream = 1},
    {.name = "c", .role = BufferRole::kOutput},
};

// One correctly rounded addition in the storage type, as IEEE 754 specifies.
double AddReference(const KernelVariant&, const HostData& data, int, int64_t i) {
  const double a = LoadAsDouble(data.dtype, data.buffers[0].data(), i);
  const double b = LoadAsDouble(data.dtype, data.buffers[1].data(), i);
  switch (data.dtype) {
    case DType::kF16:
      return HalfToFloat(DoubleToHalf(a + b));
    case DType::kBF16:
      return BFloat16ToFloat(DoubleToBFloat16(a + b));
    default:
      return static_cast<float>(a) + static_cast<float>(b);
  }
}

// ---- the variants ----------------------------------------------------------------------------

constexpr absl::string_view kSeedAdd = "seed 000_90ef8f88548fa484 (elementwise add, RTX 5090)";
constexpr absl::string_view kTuned = "gpubench tuned (Hopper habits: wide loads, ILP)";
constexpr absl::string_view kCub = "baseline: CUB (CCCL) DeviceTransform";

// Tolerances: IEEE adds are correctly rounded on host and device, so add results must match the
// reference bit for bit. bf16 allows one bf16 ulp because pre-sm_90 devices add bf16 through
// float with a second rounding.
constexpr double kBf16Ulp = 1.0 / 128;

// Seed launch policies: 256 threads per block; the x4 variant launches 256 / 4 = 64 threads over
// ceil(N / 256) blocks and the x8 variants 256 / 8 = 32 threads, which grid = ceil(N / (block x
// items)) reproduces exactly.
constexpr LaunchPolicy kSeedScalar{.block_size = 256, .items_per_thread = 1};
constexpr LaunchPolicy kSeedPair{.block_size = 256, .items_per_thread = 2};
constexpr LaunchPolicy kSeedX4{.block_size = 64, .items_per_thread = 4};
constexpr LaunchPolicy kSeedX8{.block_size = 32, .items_per_thread = 8};

// The one-pass 16-byte kernels (add_*_tuned, add_*_stream, add_*_l2keep): 1, 2, 4 or 8 packets
// per operand per thread by request or Autotune. H200, 2026-11-29
// (bench/results/2026-11-29-h200-add.md): the first try (4 streaming loads grid-stride, kept as
// add_f32_gridstride) reached only 4.07-4.11 TB/s hot at 256Mi against CUB's 4.41.
template <int kElementsPerPacket>
constexpr LaunchPolicy OnePassPolicy() {
  return {
      // Tile-shape sweep (bench/results/2026-11-29-h200-add.md, call 2): 768 threads x 1
      // packet best for f32, 4.43 TB/s at 256Mi and 48.8 us at 16Mi hot (CUB 4.42, 49.0-49.3
      // us); 256 x 2 packets 4.39. f16/bf16 move the same bytes per packet.
      .block_size = 768,
      .items_per_thread = kElementsPerPacket,          // one 16-byte packet
      .max_items_per_thread = 8 * kElementsPerPacket,  // 8 packets, the largest unrolled form
      // Under 8 waves (1Mi: 1.3 waves of 768-thread blocks) 256 threads win: 1Mi hot 3.15 us
      // (f32) and 2.66 us (f16) against 3.35 and 2.89 us at 768
      // (bench/results/2026-11-29-h200-add.md, call 5).
      .small_grid_block_size = 256,
  };
}
constexpr LaunchPolicy kOnePassF32 = OnePassPolicy<4>();
constexpr LaunchPolicy kOnePass16 = OnePassPolicy<8>();

// Bulk copy (cp.async.bulk, sm_90+): one block per tile of block x items elements, both input
// tiles fetched by the copy engine into shared memory, as CUB's sm_90 DeviceTransform policy.
template <int kSize>
constexpr LaunchPolicy BulkPolicy() {
  return {
      // 3 KiB per operand (256 x 3 floats), the tile CUB's 48-KiB-in-flight rule picks for f32 on
      // an H200: 4.44 TB/s at 256Mi hot (CUB 4.42); power-of-two tiles of 2-16 KiB 4.29-4.40;
      // 1 item per thread 2.9 (bench/results/2026-11-29-h200-add.md). f16/bf16: same bytes.
      .block_size = 256,
      .items_per_thread = 12 / kSize,
      .max_items_per_thread = 256 / kSize,  // 256 x 256 bytes x 2 operands: 128 KiB of shared
      .dynamic_shared_bytes_per_item = 2 * kSize,  // both operands staged
      .items_any_count = true,                     // the kernel loops over its tile at run time
  };
}

// The grid-stride streaming kernel: 4 packets per thread over a resident grid.
constexpr LaunchPolicy kGridStrideF32{
    .block_size = 256, .items_per_thread = 16, .grid_stride = true};
// 256 threads x 4 packets capped at 4 resident blocks per SM: a proposed shape (reported at 24.0 us
// at 16Mi fp16 hot vs add_f16_tuned's 26.1 us); measured here 26.50 us through the server and
// 23.87 us under ncu (bench/results/2026-11-30-h200-add-round2.md).
constexpr LaunchPolicy kGridStride16{.block_size = 256,
                                     .items_per_thread = 32,
                                     .grid_stride = true,
                                     .max_resident_blocks_per_sm = 4};

constexpr LaunchPolicy kLibrary{
    .block_size = 256, .items_per_thread = 1, .block_size_tunable = false};

constexpr KernelVariant kVariants[] = {
    // ---- the seed's patterns (bit-exact, one element or one vector per thread) ----
    {.name = "add_f32",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kSeedScalar,
     .description = "c = a + b, one float per thread (scalar 32-bit loads)",
     .provenance = kSeedAdd,
     .cpu = &cpu::AddF32,
     .cuda = GPUBENCH_CUDA(LaunchAddF32)},
    {.name = "add_f32x4",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kSeedX4,
     .description = "c = a + b, four floats per thread through float4 (128-bit loads), scalar tail",
     .provenance = kSeedAdd,
     .cpu = &cpu::AddF32x4,
     .cuda = GPUBENCH_CUDA(LaunchAddF32x4)},
    {.name = "add_f16",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kSeedScalar,
     .description = "c = a + b in fp16, one half per thread (__hadd)",
     .provenance = kSeedAdd,
     .cpu = &cpu::AddF16,
     .cuda = GPUBENCH_CUDA(LaunchAddF16)},
    {.name = "add_f16x2",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kSeedPair,
     .description = "c = a + b in fp16, one half2 per thread (__hadd2, 32-bit loads)",
     .provenance = kSeedAdd,
     .cpu = &cpu::AddF16x2,
     .cuda = GPUBENCH_CUDA(LaunchAddF16x2)},
    {.name = "add_f16x8",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kSeedX8,
     .description = "c = a + b in fp16, eight halves per thread as four unrolled half2 loads",
     .provenance = kSeedAdd,
     .cpu = &cpu::AddF16x8,
     .cuda = GPUBENCH_CUDA(LaunchAddF16x8)},
    {.name = "add_f16x8_pack",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kSeedX8,
     .description = "c = a + b in fp16, eight halves per thread packed in one 128-bit load/store",
     .provenance = kSeedAdd,
     .cpu = &cpu::AddF16x8Pack,
     .cuda = GPUBENCH_CUDA(LaunchAddF16x8Pack)},
    // bf16 versions of the seed's patterns, so all three dtypes compare.
    {.name = "add_bf16",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kSeedScalar,
     .description = "c = a + b in bf16, one value per thread (the seed's scalar pattern)",
     .provenance = kSeedAdd,
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16)},
    {.name = "add_bf16x2",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kSeedPair,
     .description = "c = a + b in bf16, one bf16x2 per thread (32-bit loads)",
     .provenance = kSeedAdd,
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16x2,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16x2)},
    {.name = "add_bf16x8_pack",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kSeedX8,
     .description = "c = a + b in bf16, eight values per thread packed in one 128-bit load/store",
     .provenance = kSeedAdd,
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16x8Pack,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16x8Pack)},

    // ---- tuned one pass: 16-byte read-only loads ----
    {.name = "add_f32_tuned",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kOnePassF32,
     .description =
         "c = a + b, 16-byte read-only loads (items / 4 per operand per thread), one pass",
     .provenance = kTuned,
     .cpu = &cpu::AddF32OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF32Tuned)},
    {.name = "add_f16_tuned",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kOnePass16,
     .description =
         "c = a + b in fp16, 16-byte read-only loads (items / 8 per operand per thread), one pass",
     .provenance = kTuned,
     .cpu = &cpu::AddF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF16Tuned)},
    {.name = "add_bf16_tuned",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kOnePass16,
     .description =
         "c = a + b in bf16, 16-byte read-only loads (items / 8 per operand per thread), one pass",
     .provenance = kTuned,
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16Tuned)},
    {.name = "add_f32_gridstride",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kGridStrideF32,
     .description = "c = a + b, four 16-byte streaming loads per operand per thread, grid-stride "
                    "over the resident grid (occupancy API)",
     .provenance = "gpubench experiment (persistent grid + streaming hints)",
     .cpu = &cpu::AddF32GridStride,
     .cuda = GPUBENCH_CUDA(LaunchAddF32GridStride)},

    // ---- bulk copy (sm_90+) ----
    {.name = "add_f32_bulk",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = BulkPolicy<4>(),
     .description = "c = a + b, tiles fetched by the bulk-copy engine (cp.async.bulk) into shared "
                    "memory",
     .provenance = "gpubench tuned (Hopper bulk copy, after CUB's sm_90 policy)",
     .cpu = &cpu::AddF32Bulk,
     .cuda = GPUBENCH_CUDA(LaunchAddF32Bulk),
     .min_compute_capability = 90},  // cp.async.bulk
    {.name = "add_f16_bulk",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = BulkPolicy<2>(),
     .description = "c = a + b in fp16, tiles fetched by the bulk-copy engine (cp.async.bulk)",
     .provenance = "gpubench tuned (Hopper bulk copy, after CUB's sm_90 policy)",
     .cpu = &cpu::AddF16Bulk,
     .cuda = GPUBENCH_CUDA(LaunchAddF16Bulk),
     .min_compute_capability = 90},
    {.name = "add_bf16_bulk",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = BulkPolicy<2>(),
     .description = "c = a + b in bf16, tiles fetched by the bulk-copy engine (cp.async.bulk)",
     .provenance = "gpubench tuned (Hopper bulk copy, after CUB's sm_90 policy)",
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16Bulk,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16Bulk),
     .min_compute_capability = 90},
    // add_*_bulk_pdl: add_*_bulk launched with programmatic dependent launch (as add_*_l2keep_pdl
    // below): each block waits for the previous kernel of the stream to complete before its bulk
    // copies, then lets the next launch be scheduled. Why: at 256Mi hot cub_add_f32 took
    // 728.2-728.3 us (4.423 TB/s) against add_f32_bulk's 730.4-730.8 us (4.409 TB/s), the only
    // 256Mi row CUB led, in all 3 rounds of session 6's goal call (H200, 2026-11-30,
    // bench/results/2026-11-30-h200-session6.md). (CUB 3.0's DeviceTransform itself launches
    // without PDL: its launcher's dependent_launch defaults to false.) With the bulk kernel's
    // streaming stores (session 7) add_f32_bulk_pdl took 722.7 us hot against CUB's 728.1 in one
    // process on the same buffers, 5 rounds x 3 streams (bench/add_same_process.py large,
    // bench/results/2026-11-30-h200-session7.md).
    {.name = "add_f32_bulk_pdl",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = BulkPolicy<4>(),
     .description = "add_f32_bulk launched with programmatic dependent launch: back-to-back "
                    "launches overlap the next grid's start with the previous grid's end",
     .provenance = "gpubench tuned (Hopper bulk copy; PDL)",
     .cpu = &cpu::AddF32Bulk,
     .cuda = GPUBENCH_CUDA(LaunchAddF32BulkPdl),
     .min_compute_capability = 90},  // cp.async.bulk, griddepcontrol
    {.name = "add_f16_bulk_pdl",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = BulkPolicy<2>(),
     .description = "add_f16_bulk launched with programmatic dependent launch: back-to-back "
                    "launches overlap the next grid's start with the previous grid's end",
     .provenance = "gpubench tuned (Hopper bulk copy; PDL)",
     .cpu = &cpu::AddF16Bulk,
     .cuda = GPUBENCH_CUDA(LaunchAddF16BulkPdl),
     .min_compute_capability = 90},
    {.name = "add_bf16_bulk_pdl",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = BulkPolicy<2>(),
     .description = "add_bf16_bulk launched with programmatic dependent launch: back-to-back "
                    "launches overlap the next grid's start with the previous grid's end",
     .provenance = "gpubench tuned (Hopper bulk copy; PDL)",
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16Bulk,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16BulkPdl),
     .min_compute_capability = 90},

    // ---- L2-aware variants (bench/results/2026-11-30-h200-add-round2.md) ----
    // At 16Mi elements of fp16 the add moves 96 MiB, more than the H200's 60 MB L2 but not by
    // much, so in a loop over the same buffers (hot mode) the cache policy decides how much of
    // the inputs is still in L2 at the next launch. add_*_stream: the one-pass kernel with
    // streaming loads and stores (__ldcs/__stcs, evict-first), same tile rules as add_*_tuned.
    // The emulation is add_*_tuned's: cache hints change no result.
    {.name = "add_f32_stream",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kOnePassF32,
     .description =
         "c = a + b, 16-byte streaming loads and stores (__ldcs/__stcs: evict-first), one pass",
     .provenance = "gpubench tuned (L2 policy: streaming)",
     .cpu = &cpu::AddF32OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF32Stream)},
    {.name = "add_f16_stream",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kOnePass16,
     .description =
         "c = a + b in fp16, 16-byte streaming loads and stores (__ldcs/__stcs), one pass",
     .provenance = "gpubench tuned (L2 policy: streaming)",
     .cpu = &cpu::AddF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF16Stream)},
    {.name = "add_bf16_stream",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kOnePass16,
     .description =
         "c = a + b in bf16, 16-byte streaming loads and stores (__ldcs/__stcs), one pass",
     .provenance = "gpubench tuned (L2 policy: streaming)",
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16Stream)},
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
    // Round 3 (bench/results/2026-11-30-h200-measure-round3.md): this kernel took 24.5-24.8 us at
    // 16Mi fp16 hot (4.09-4.11 TB/s, goal 4.15) against 23.84-24.01 us for the probe's copy of it
    // in the same call. Since 2026-11-30 (session 4) a launch whose n is a multiple of the
    // 16-byte packet runs a kernel without the element count's division and the scalar tail: its
    // sm_90 code is the probe's, byte for byte (86 instructions and 18 registers, was 114 and 22;
    // bench/results/2026-11-30-l2keep-codegen.md, guarded by the l2keep_codegen test); other n run
    // the old code. Measured with it (bench/results/2026-11-30-h200-session4.md, call A): 16Mi
    // fp16 hot 24.72 us through the server, 24.33 us for the probe with exact-size buffers as the
    // server's, 23.98 us for the probe with its own 64 MiB + 64 B buffers: the rest is placement.
    {.name = "add_f32_l2keep",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kOnePassF32,
     .description = "c = a + b, 16-byte loads/stores with L2 hints: an eighth of L2 of each input "
                    "evict_last, the rest evict_first (working sets up to 2 x L2)",
     .provenance = "gpubench tuned (L2 policy: keep part of the inputs)",
     .cpu = &cpu::AddF32OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF32L2Keep),
     .min_compute_capability = 80,  // createpolicy / .L2::cache_hint
     .l2_evict_last = true},
    {.name = "add_f16_l2keep",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kOnePass16,
     .description = "c = a + b in fp16, 16-byte loads/stores with L2 evict_last/evict_first hints",
     .provenance = "gpubench tuned (L2 policy: keep part of the inputs)",
     .cpu = &cpu::AddF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF16L2Keep),
     .min_compute_capability = 80,  // createpolicy / .L2::cache_hint
     .l2_evict_last = true},
    {.name = "add_bf16_l2keep",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kOnePass16,
     .description = "c = a + b in bf16, 16-byte loads/stores with L2 evict_last/evict_first hints",
     .provenance = "gpubench tuned (L2 policy: keep part of the inputs)",
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16L2Keep),
     .min_compute_capability = 80,  // createpolicy / .L2::cache_hint
     .l2_evict_last = true},
    // add_*_l2keep_pdl: add_*_l2keep's work launched with programmatic dependent launch (sm_90):
    // each block waits for the previous kernel of the stream to complete before any memory access
    // (stream order kept), then lets the next launch be scheduled, so back-to-back launches
    // overlap one grid's launch and block placement with the previous grid's last wave. Why: at
    // 16Mi hot the l2keep kernel moves its ~85 MB of DRAM traffic per launch at only ~3.5 TB/s
    // (H200, 2026-11-30, bench/results/2026-11-30-h200-session5.md, ncu single pass), against
    // 4.4 TB/s at 256Mi: a 24 us launch spends a fixed part of it starting and draining.
    // Cold samples (one launch behind an event) and single launches gain nothing. Measured, H200,
    // 2026-11-30 (session 5, call 6; 4 alternating rounds): 16Mi hot fp16 23.00 us (4.377 TB/s)
    // vs 24.76 us for add_f16_l2keep, bf16 22.98 vs 24.73; 1Mi hot fp16 1.47 vs 2.73 us, fp32
    // 2.01 vs 3.29; 16Mi cold 24.51 vs 24.51 (fp16), 46.46 vs 46.43 (fp32); 256Mi hot 366.0 vs
    // 367.1 us (fp16, both on the read-only policy there).
    {.name = "add_f32_l2keep_pdl",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kOnePassF32,
     .description = "add_f32_l2keep launched with programmatic dependent launch: back-to-back "
                    "launches overlap the next grid's start with the previous grid's end",
     .provenance = "gpubench tuned (L2 policy: keep part of the inputs; PDL)",
     .cpu = &cpu::AddF32OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF32L2KeepPdl),
     .min_compute_capability = 90,  // griddepcontrol (programmatic dependent launch)
     .l2_evict_last = true},
    {.name = "add_f16_l2keep_pdl",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kOnePass16,
     .description = "add_f16_l2keep launched with programmatic dependent launch: back-to-back "
                    "launches overlap the next grid's start with the previous grid's end",
     .provenance = "gpubench tuned (L2 policy: keep part of the inputs; PDL)",
     .cpu = &cpu::AddF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddF16L2KeepPdl),
     .min_compute_capability = 90,  // griddepcontrol (programmatic dependent launch)
     .l2_evict_last = true},
    {.name = "add_bf16_l2keep_pdl",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kOnePass16,
     .description = "add_bf16_l2keep launched with programmatic dependent launch: back-to-back "
                    "launches overlap the next grid's start with the previous grid's end",
     .provenance = "gpubench tuned (L2 policy: keep part of the inputs; PDL)",
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16OnePass,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16L2KeepPdl),
     .min_compute_capability = 90,  // griddepcontrol (programmatic dependent launch)
     .l2_evict_last = true},
    {.name = "add_f16_gridstride",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kGridStride16,
     .description = "c = a + b in fp16, four 16-byte streaming loads per operand per thread, "
                    "grid-stride over 4 resident blocks per SM",
     .provenance = "gpubench tuned (persistent grid + streaming hints)",
     .cpu = &cpu::AddF16GridStride,
     .cuda = GPUBENCH_CUDA(LaunchAddF16GridStride)},
    {.name = "add_bf16_gridstride",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kGridStride16,
     .description = "c = a + b in bf16, four 16-byte streaming loads per operand per thread, "
                    "grid-stride over 4 resident blocks per SM",
     .provenance = "gpubench tuned (persistent grid + streaming hints)",
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16GridStride,
     .cuda = GPUBENCH_CUDA(LaunchAddBF16GridStride)},

    // ---- the vendor baseline ----
    {.name = "cub_add_f32",
     .family = &kElementwiseAdd,
     .dtype = DType::kF32,
     .default_policy = kLibrary,
     .description = "c = a + b through cub::DeviceTransform, the vendor's elementwise path",
     .provenance = kCub,
     .cpu = &cpu::AddF32,
     .cuda = GPUBENCH_CUDA(LaunchCubAddF32)},
    {.name = "cub_add_f16",
     .family = &kElementwiseAdd,
     .dtype = DType::kF16,
     .default_policy = kLibrary,
     .description = "c = a + b in fp16 through cub::DeviceTransform",
     .provenance = kCub,
     .cpu = &cpu::AddF16,
     .cuda = GPUBENCH_CUDA(LaunchCubAddF16)},
    {.name = "cub_add_bf16",
     .family = &kElementwiseAdd,
     .dtype = DType::kBF16,
     .default_policy = kLibrary,
     .description = "c = a + b in bf16 through cub::DeviceTransform",
     .provenance = kCub,
     .rtol = kBf16Ulp,
     .cpu = &cpu::AddBF16,
     .cuda = GPUBENCH_CUDA(LaunchCubAddBF16)},
};

}  // namespace

constexpr KernelFamily kElementwiseAdd{
    .name = "elementwise_add",
    .buffers = kAddBuffers,  // bytes per launch: 3 x elements x size (read a, b; write c)
    .reference = &AddReference,
    .device_check = GPUBENCH_CUDA(CheckAdd),
    .user_example = "c[i] = a[i] + b[i];",
};

std::span<const KernelVariant> ElementwiseAddVariants() { return kVariants; }

}  // namespace gpubench
