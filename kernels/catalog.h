// The kernel catalog: every benchmarkable variant is one entry of data. Adding a variant is one
// kernel (CPU emulation in kernels/cpu_kernels.cc, device code in kernels/cuda/) plus one entry in
// kernels/catalog.cc.
#ifndef GPUBENCH_KERNELS_CATALOG_H_
#define GPUBENCH_KERNELS_CATALOG_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/launch.h"
#include "kernels/numeric.h"

namespace gpubench {

enum class KernelFamily { kElementwiseAdd, kSaxpy, kCopy };
// "elementwise_add", "saxpy", "copy".
const char* KernelFamilyName(KernelFamily family);

struct LaunchPolicy {
  int block_size = 256;           // threads per block when the request names none
  int items_per_thread = 1;       // elements each thread owns
  bool block_size_tunable = true; // false: the library (CUB, cudaMemcpy) picks its configuration
  // true: grid = min(ceil(n / (block x items)), SMs x resident blocks per SM) and the kernel
  // loops grid-stride; false: grid = ceil(n / (block x items)), one pass.
  bool grid_stride = false;
  // > 0: a request may choose items_per_thread, up to this many, as items_any_count says;
  // 0: the kernel's code fixes it.
  int max_items_per_thread = 0;
  // Dynamic shared memory the launch needs per element of a block's tile:
  // dynamic_shared_bytes = block_size x items_per_thread x this (the bulk-copy kernels stage both
  // operands: 2 x sizeof(dtype)).
  int dynamic_shared_bytes_per_item = 0;
  // true: any items_per_thread in [1, max_items_per_thread] (the kernel loops over its tile at run
  // time); false: whole 16-byte packets, a power of two of them (unrolled into registers).
  bool items_any_count = false;
  // > 0: the block size used instead of block_size when the request names none and block_size
  // would give the launch fewer than kSmallGridWaves waves (resident blocks by the thread limit)
  // on the device: a large block's partial last wave costs more than it gains at small N.
  int small_grid_block_size = 0;
  // grid_stride only: > 0 caps the resident grid at this many blocks per SM (below what the
  // occupancy API allows); 0: every SM full.
  int max_resident_blocks_per_sm = 0;
};

// See LaunchPolicy::small_grid_block_size. H200, 2026-11-29: 768-thread tuned blocks at 1Mi
// elements ran 1.3 waves and lost 6-9% hot to 256-thread blocks; at 16Mi (20 waves) they won.
inline constexpr int kSmallGridWaves = 8;

struct KernelVariant {
  absl::string_view name;
  KernelFamily family;
  DType dtype;
  // Bytes that must cross device memory per element: add reads a and b and writes c (3 x size),
  // SAXPY reads x and y and writes y (3 x 4), copy reads and writes once (2 x size).
  int bytes_per_element;
  LaunchPolicy default_policy;
  int static_shared_bytes;  // per block, as the source declares it
  absl::string_view description;
  absl::string_view provenance;
  // Verification bound: |out - ref| <= atol + rtol * |ref| for every element.
  double rtol;
  double atol;
  CpuKernelFn cpu;    // host emulation of the device kernel, never null
  CudaLaunchFn cuda;  // null when the build has no CUDA backend
  // Lowest compute capability (major x 10 + minor) whose devices can run the CUDA kernel; 0 = any.
  // The CPU backend emulates every variant.
  int min_compute_capability = 0;
};

// Whether `variant` takes items_per_thread from a request (LaunchPolicy::max_items_per_thread),
// and whether `items` is one of the values it accepts.
bool ItemsPerThreadTunable(const KernelVariant& variant);
bool ItemsPerThreadAllowed(const KernelVariant& variant, int items);
// What a request may set, in words, for error messages ("4 (one 16-byte packet) times ...").
std::string ItemsPerThreadRule(const KernelVariant& variant);
// The values Autotune tries when a request names none: the allowed powers of two (the catalog's
// value alone when items are fixed). Ascending.
std::vector<int> ItemsPerThreadCandidates(const KernelVariant& variant);

// Dynamic shared memory one block of `variant` needs at this geometry, in bytes.
int64_t DynamicSharedBytes(const KernelVariant& variant, int block_size, int items_per_thread);

// All variants, in a stable order. Thread-safe (immutable).
std::span<const KernelVariant> AllKernels();

// The variant called `name`; NOT_FOUND naming the valid names otherwise. Thread-safe.
absl::StatusOr<const KernelVariant*> FindKernel(absl::string_view name);

// Number of n-element buffers a run allocates: 3 for add (a, b, c), 2 for SAXPY (x, y) and copy.
int BuffersPerRun(const KernelVariant& variant);

// Comma-separated list of every variant name, for error messages and --help.
std::string KernelNamesForHelp();

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_CATALOG_H_
