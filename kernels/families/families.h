// The built-in kernel families and their registration lists, one per file in kernels/families/.
// kernels/catalog.cc registers every list here, in this order. A new family adds its two lines
// here and one line to BuiltinVariantLists() in kernels/catalog.cc (README: "Adding a family").
#ifndef GPUBENCH_KERNELS_FAMILIES_FAMILIES_H_
#define GPUBENCH_KERNELS_FAMILIES_FAMILIES_H_

#include <span>

#include "kernels/catalog.h"
#include "kernels/family.h"

// Binds a registration entry to its CUDA launcher, or to nothing in a build without CUDA (the
// launcher is then neither declared nor compiled).
#if GPUBENCH_HAVE_CUDA
#define GPUBENCH_CUDA(fn) (&::gpubench::cuda::fn)
#else
#define GPUBENCH_CUDA(fn) nullptr
#endif

namespace gpubench {

extern const KernelFamily kElementwiseAdd;  // c = a + b (families/elementwise_add.cc)
std::span<const KernelVariant> ElementwiseAddVariants();

extern const KernelFamily kSaxpy;  // y = alpha x + y in place (families/saxpy.cc)
std::span<const KernelVariant> SaxpyVariants();

extern const KernelFamily kCopy;  // dst = src on one device (families/copy.cc)
std::span<const KernelVariant> CopyVariants();

extern const KernelFamily kLatency;  // dependent-load pointer chase (families/latency.cc)
std::span<const KernelVariant> LatencyVariants();

extern const KernelFamily kGemm;  // D = A . B^T through cuBLASLt (families/gemm.cc)
std::span<const KernelVariant> GemmVariants();

// Host<->device (pinned, pageable, both directions) and peer copies (families/copies.cc).
std::span<const KernelVariant> CopiesVariants();

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_FAMILIES_FAMILIES_H_
