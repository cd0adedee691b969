// The kernel catalog: every benchmarkable variant is one KernelVariant of data, registered once
// in its family's list (kernels/families/<family>.cc), which binds the CPU emulation and the CUDA
// launcher. Adding a variant of an existing family touches three files: the device code
// (kernels/cuda/*.cu), the CPU emulation (kernels/cpu_*.cc) and the family's registration list.
#ifndef GPUBENCH_KERNELS_CATALOG_H_
#define GPUBENCH_KERNELS_CATALOG_H_

#include <cstddef>
#include <iterator>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/family.h"
#include "kernels/launch.h"
#include "kernels/numeric.h"

namespace gpubench {

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

// One benchmarkable variant. Written with designated initializers in its family's registration
// list; fields left out keep the defaults below.
struct KernelVariant {
  absl::string_view name = {};
  const KernelFamily* family = nullptr;
  DType dtype = DType::kF32;
  LaunchPolicy default_policy = {};
  int static_shared_bytes = 0;  // per block, as the source declares it
  absl::string_view description = {};
  absl::string_view provenance = {};
  // Verification bound: |out - ref| <= atol + rtol * |ref| for every checked element (the
  // family's tolerance function, where it has one, decides instead).
  double rtol = 0;
  double atol = 0;
  CpuKernelFn cpu = nullptr;    // host emulation of the device kernel, never null
  CudaLaunchFn cuda = nullptr;  // null when the build has no CUDA backend
  // Lowest compute capability (major x 10 + minor) whose devices can run the CUDA kernel; 0 = any.
  // The CPU backend emulates every variant.
  int min_compute_capability = 0;
  // The CUDA kernel loads with an L2 evict_last cache policy (add_*_l2keep): such lines can
  // outlive a cold sample's flush, so the backend returns them to normal
  // (cudaCtxResetPersistingL2Cache) before every flush. Only for these: on the H200 the reset
  // itself slowed the next launch by 0.1-0.2 us at 1Mi (bench/results/2026-11-30-h200-session4.md).
  bool l2_evict_last = false;
  ReferenceFn reference = nullptr;  // null: the family's reference
  // The device check matching `reference` (KernelFamily::device_check); null: the family's,
  // unless `reference` is set (then none).
  DeviceCheckFn device_check = nullptr;
  CpuSetupFn cpu_setup = nullptr;   // per-session state (kernels/launch.h); null: none
  CudaSetupFn cuda_setup = nullptr;
};

// ---- what the engine derives from a variant's family declaration ----------------------------

// Bytes of buffer `buffer` (an index into the family's buffers) in a run at `shape`. Inline: the
// CUDA backend (a library below this one) uses it too.
inline int64_t BufferBytes(const KernelVariant& variant, const RunShape& shape, int buffer) {
  const BufferSpec& b = variant.family->buffers[buffer];
  return BufferElements(b, shape) * DTypeSize(BufferDType(b, variant.dtype));
}
// Bytes that cross memory in one launch of `variant` at `shape`.
int64_t BytesMoved(const KernelVariant& variant, const RunShape& shape);
// Bytes per element at elements = 1 (ListKernels' bytes_per_element): add 3 x size, SAXPY 3 x 4,
// copy 2 x size. Families not sized by elements alone report their 1-element figure.
int BytesPerElement(const KernelVariant& variant);
// Operations (the family's operation_unit) in one launch; 0 where the family counts none.
int64_t OperationsOf(const KernelVariant& variant, const RunShape& shape);
// Work items the launch grid covers at `shape` (KernelFamily::launch_items).
int64_t LaunchItems(const KernelVariant& variant, const RunShape& shape);
// The run's verification bound (KernelFamily::tolerance, else the variant's rtol and atol).
// Inline: the CUDA backend uses it.
inline Tolerance ToleranceOf(const KernelVariant& variant, const RunShape& shape) {
  if (variant.family->tolerance != nullptr) return variant.family->tolerance(variant, shape);
  return Tolerance{.rtol = variant.rtol, .atol = variant.atol};
}
ReferenceFn ReferenceOf(const KernelVariant& variant);
// The variant's device check (KernelVariant::device_check), or null where it has none. Inline:
// the CUDA backend uses it.
inline DeviceCheckFn DeviceCheckOf(const KernelVariant& variant) {
  if (variant.device_check != nullptr) return variant.device_check;
  return variant.reference != nullptr ? nullptr : variant.family->device_check;
}

// Whether runs of `variant` can be verified on the device (Session::CanVerifyOnDevice on the CUDA
// backend): it has a device check and a CUDA launcher, every input and in-out uses the default
// generator (the check regenerates them from the seed) and every output and in-out lives in the
// run's device memory. Inline: the CUDA backend uses it.
inline bool VerifiableOnDevice(const KernelVariant& variant) {
  if (DeviceCheckOf(variant) == nullptr || variant.cuda == nullptr) return false;
  for (const BufferSpec& b : variant.family->buffers) {
    if (b.role != BufferRole::kOutput && b.generate != nullptr) return false;
    if (IsVerified(b) && b.placement != Placement::kDevice) return false;
  }
  return true;
}

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

// Adds `variants` to the catalog, after the built-in families (kernels/families/families.h).
// The objects (and their families) must outlive every use (static storage). Call before the
// catalog is read concurrently (start of main, or a test's setup); names must be new:
// INVALID_ARGUMENT naming the duplicate or a variant without a family, CPU emulation or
// reference (nothing is added then).
absl::Status RegisterVariants(std::span<const KernelVariant> variants);

// A snapshot of the registered variants, in registration order: iterate it, index it, ask its
// size. Elements are references to the registered objects (their addresses are stable).
class KernelList {
 public:
  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = KernelVariant;
    using difference_type = std::ptrdiff_t;
    using pointer = const KernelVariant*;
    using reference = const KernelVariant&;
    explicit Iterator(const KernelVariant* const* p) : p_(p) {}
    const KernelVariant& operator*() const { return **p_; }
    const KernelVariant* operator->() const { return *p_; }
    Iterator& operator++() {
      ++p_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return p_ == other.p_; }
    bool operator!=(const Iterator& other) const { return p_ != other.p_; }

   private:
    const KernelVariant* const* p_;
  };
  explicit KernelList(std::vector<const KernelVariant*> variants)
      : variants_(std::move(variants)) {}
  Iterator begin() const { return Iterator(variants_.data()); }
  Iterator end() const { return Iterator(variants_.data() + variants_.size()); }
  size_t size() const { return variants_.size(); }
  bool empty() const { return variants_.empty(); }
  const KernelVariant& operator[](size_t i) const { return *variants_[i]; }
  const KernelVariant& front() const { return *variants_.front(); }

 private:
  std::vector<const KernelVariant*> variants_;
};

// All variants, in a stable order (built-in families first). Thread-safe.
KernelList AllKernels();

// The variant called `name`; NOT_FOUND naming the valid names otherwise. Thread-safe.
absl::StatusOr<const KernelVariant*> FindKernel(absl::string_view name);

// Comma-separated list of every variant name, for error messages and --help.
std::string KernelNamesForHelp();

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_CATALOG_H_
