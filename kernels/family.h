// A kernel family as data: what every variant of the family operates on (its buffers: role,
// element type, count as a function of the run's shape, where the memory lives), the work one
// launch does (bytes moved, operations), the metric it is judged by, its host reference, its
// verification rule and how its inputs are generated from the seed. The engine derives bandwidth,
// FLOP/s, seconds per operation, buffer sizes and verification from this declaration alone.
//
// A family lives in one file, kernels/families/<family>.cc, together with the registration list
// of its variants; see the README's "Adding a family" recipe.
#ifndef GPUBENCH_KERNELS_FAMILY_H_
#define GPUBENCH_KERNELS_FAMILY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/device_check.h"
#include "kernels/launch.h"
#include "kernels/numeric.h"

namespace gpubench {

class ParallelPool;
struct DeviceInfo;
struct HostData;
struct KernelVariant;

enum class BufferRole {
  kInput,   // generated from the seed, uploaded once, read by the kernel
  kOutput,  // poisoned (all-ones bytes) before the verified launch, then read back and verified
  kInOut,   // generated initial contents, restored before the verified launch, then verified
};

enum class Placement {
  kDevice,        // device memory of the run's device (cudaMalloc)
  kHostPinned,    // page-locked host memory (cudaHostAlloc)
  kHostPageable,  // ordinary host memory (aligned malloc)
  kPeerDevice,    // device memory of the run's peer device (a second GPU); peer access enabled
                  // where the devices allow it
};
// The CPU backend keeps every placement in host memory (its "devices" share the host).

// What a generator gets: the run's seed and the buffer's stream id (BufferSpec::seed_stream),
// its element type and the run's shape. `out` is the buffer (elements x dtype size bytes).
struct GenerateContext {
  uint64_t seed = 0;
  uint64_t stream = 0;
  DType dtype = DType::kF32;
  RunShape shape = {};
  ParallelPool* pool = nullptr;
};
using GenerateFn = void (*)(const GenerateContext& context, std::span<std::byte> out);

// Uniform values in [-1, 1) with 24 random bits, rounded to the dtype (floating types only).
// Element i depends only on (seed, stream, i): the data is the same for any thread count. The
// default generator of every input.
void GenerateUniform(const GenerateContext& context, std::span<std::byte> out);
// GenerateUniform's values at `indices` only: element j of `out` is element indices[j] of the
// full buffer (for a host cross-check of a few positions of a buffer generated on the device).
void GenerateUniformAt(const GenerateContext& context, std::span<const int64_t> indices,
                       std::span<std::byte> out);

struct BufferSpec {
  absl::string_view name = {};  // "a", "b", "c", "x", "y", "src", "dst", ...
  BufferRole role = BufferRole::kInput;
  std::optional<DType> dtype = {};  // nullopt: the variant's dtype
  // Where the type depends on the variant's in another way (fp8 inputs -> bf16 output): wins
  // over `dtype` when set.
  DType (*dtype_of)(DType variant_dtype) = nullptr;
  int64_t (*elements)(const RunShape&) = nullptr;  // nullptr: shape.elements
  Placement placement = Placement::kDevice;
  GenerateFn generate = nullptr;  // inputs and in-outs; nullptr: GenerateUniform
  uint64_t seed_stream = 0;       // mixed with the seed so that buffers differ
  // Times each element crosses memory per launch, for the default byte count; -1: input and
  // output 1, in-out 2 (read and written).
  int accesses = -1;
};

enum class Metric {
  kBytesPerSecond,       // bandwidth families: the result's headline is bytes / median time
  kOperationsPerSecond,  // compute families: operations / median time (operation_unit "FLOP")
  kSecondsPerOperation,  // latency families: median time / operations (e.g. seconds per load)
};
// "bytes_per_second", "operations_per_second", "seconds_per_operation".
const char* MetricName(Metric metric);

struct Tolerance {
  double rtol = 0;  // |out - ref| <= atol + rtol * |ref|
  double atol = 0;
};

// The expected value of element `i` of buffer `buffer` (an output or in-out) of a run, in double
// precision, computed from the generated host data. Thread-safe (called concurrently).
using ReferenceFn = double (*)(const KernelVariant& variant, const HostData& data, int buffer,
                               int64_t i);

struct KernelFamily {
  absl::string_view name = {};               // "elementwise_add", "saxpy", "copy", ...
  std::span<const BufferSpec> buffers = {};  // KernelBuffers index = position here
  Metric metric = Metric::kBytesPerSecond;
  absl::string_view operation_unit = {};  // what `operations` counts ("FLOP", "load"), if any
  // Bytes that cross memory in one launch; nullptr: the sum over buffers of elements x element
  // size x accesses.
  int64_t (*bytes_moved)(const RunShape& shape, DType dtype) = nullptr;
  // Operations in one launch (FLOP for GEMM: 2 M N K; dependent loads for a pointer chase);
  // nullptr: none.
  int64_t (*operations)(const RunShape& shape) = nullptr;
  ReferenceFn reference = nullptr;  // a variant may override it (KernelVariant::reference)
  // The device reference and compare kernel (kernels/device_check.h) that lets the CUDA backend
  // check every element on the device; nullptr: host verification (GEMM: sampled; latency: its
  // one word). A variant that overrides `reference` must override this too, else it has none.
  DeviceCheckFn device_check = nullptr;
  // 0: verify every element of every output; > 0: this many elements per output, spread over the
  // buffer (both ends included), for outputs too costly to check whole (GEMM).
  int64_t verify_samples = 0;
  // The tolerance for this run; nullptr: the variant's rtol and atol.
  Tolerance (*tolerance)(const KernelVariant& variant, const RunShape& shape) = nullptr;
  // The request's element count and dimensions -> the run's shape; INVALID_ARGUMENT for a shape
  // the family cannot run. nullptr: {elements}, and any m, n or k is refused.
  absl::StatusOr<RunShape> (*resolve_shape)(int64_t elements, const RunShape& requested) = nullptr;
  // Work items the launch grid covers: grid = ceil(items / (block x items_per_thread)).
  // nullptr: shape.elements.
  int64_t (*launch_items)(const RunShape& shape) = nullptr;
  // The peak of the family's metric on `device` for `variant` (tf32 and f32 GEMMs store the same
  // dtype but peak differently), for percent_of_peak; nullopt where unknown. nullptr: the
  // device's theoretical DRAM bandwidth for kBytesPerSecond families, unknown otherwise.
  std::optional<double> (*peak)(const DeviceInfo& device, const KernelVariant& variant) = nullptr;
  // true: a large enough run of this family sets the device's practical bandwidth ceiling
  // (percent_of_copy_ceiling of other runs).
  bool copy_ceiling = false;
  // false: the CUDA backend times this family without the blocking kernel that holds the stream
  // while the timed launches are queued (an operation that synchronizes with the host, such as a
  // copy from pageable memory, would wait for it forever). Times then include launch latency.
  bool blocking_kernel = true;
  // CPU backend: emulated threads per task of the thread pool.
  int64_t cpu_chunk_threads = 1 << 14;
  // User kernels (kernels/user_kernel.h): true when the kernel takes KernelBuffers::alpha as a
  // `float alpha` after its buffers (SAXPY); and the statement of an example user kernel's body
  // for element `i` ("c[i] = a[i] + b[i];"), empty where the family has none.
  bool alpha_argument = false;
  absl::string_view user_example = {};
};

// ---- derived from the declaration ------------------------------------------------------------

// Inline: the CUDA backend (a library below this one) uses them too.

// The element type of `buffer` in a run of a variant of dtype `variant_dtype`.
inline DType BufferDType(const BufferSpec& buffer, DType variant_dtype) {
  return buffer.dtype_of != nullptr ? buffer.dtype_of(variant_dtype)
                                    : buffer.dtype.value_or(variant_dtype);
}
// Elements of `buffer` in a run of `shape`.
inline int64_t BufferElements(const BufferSpec& buffer, const RunShape& shape) {
  return buffer.elements != nullptr ? buffer.elements(shape) : shape.elements;
}
// Whether a backend with a device generator (the CUDA backend, kernels/cuda/generate.h) fills
// `buffer` on the device instead of uploading the host's copy: an input or in-out with the
// default generator (GenerateUniform, the same bits on both) in the run's device memory.
inline bool GeneratedOnDevice(const BufferSpec& buffer) {
  return buffer.role != BufferRole::kOutput && buffer.generate == nullptr &&
         buffer.placement == Placement::kDevice;
}
// An output or in-out: read back and verified.
inline bool IsVerified(const BufferSpec& buffer) { return buffer.role != BufferRole::kInput; }
// Whether any buffer lives on a peer device (the run needs two devices).
inline bool NeedsPeerDevice(const KernelFamily& family) {
  for (const BufferSpec& b : family.buffers) {
    if (b.placement == Placement::kPeerDevice) return true;
  }
  return false;
}
// The shape of a request: resolve_shape, or {elements} with m, n and k refused.
absl::StatusOr<RunShape> ResolveShape(const KernelFamily& family, int64_t elements,
                                      const RunShape& requested);
// The shape of a plain element count (no m, n, k), through the family's rule where it has one;
// {elements} where that fails.
RunShape ShapeOfElements(const KernelFamily& family, int64_t elements);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_FAMILY_H_
