#include "kernels/catalog.h"

#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/echo.h"
#include "kernels/families/families.h"

namespace gpubench {
namespace {

// Every built-in family's registration list, in catalog order.
std::vector<std::span<const KernelVariant>> BuiltinVariantLists() {
  return {ElementwiseAddVariants(), SaxpyVariants(), CopyVariants(), LatencyVariants(),
          GemmVariants(), CopiesVariants()};
}

class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry();  // never destroyed: used until exit
    return *registry;
  }

  absl::Status Add(std::span<const KernelVariant> variants) {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<absl::string_view> names;
    for (const KernelVariant* k : variants_) names.insert(k->name);
    for (const KernelVariant& k : variants) {
      if (k.family == nullptr || k.cpu == nullptr || k.name.empty() ||
          ReferenceOf(k) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "variant '", k.name, "' needs a name, a family, a CPU emulation and a reference"));
      }
      if (k.family->buffers.size() > kMaxBuffers) {
        return absl::InvalidArgumentError(absl::StrCat("family ", k.family->name, " declares ",
                                                       k.family->buffers.size(),
                                                       " buffers; at most ", kMaxBuffers));
      }
      if (!names.insert(k.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("a variant named '", k.name, "' is already registered"));
      }
    }
    for (const KernelVariant& k : variants) variants_.push_back(&k);
    return absl::OkStatus();
  }

  std::vector<const KernelVariant*> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return variants_;
  }

 private:
  Registry() {
    for (std::span<const KernelVariant> list : BuiltinVariantLists()) {
      for (const KernelVariant& k : list) variants_.push_back(&k);
    }
  }

  mutable std::mutex mu_;
  std::vector<const KernelVariant*> variants_;
};

}  // namespace

absl::Status RegisterVariants(std::span<const KernelVariant> variants) {
  return Registry::Get().Add(variants);
}

KernelList AllKernels() { return KernelList(Registry::Get().Snapshot()); }

int64_t BytesMoved(const KernelVariant& variant, const RunShape& shape) {
  const KernelFamily& f = *variant.family;
  if (f.bytes_moved != nullptr) return f.bytes_moved(shape, variant.dtype);
  int64_t bytes = 0;
  for (const BufferSpec& b : f.buffers) {
    const int accesses = b.accesses >= 0 ? b.accesses : b.role == BufferRole::kInOut ? 2 : 1;
    bytes += BufferElements(b, shape) * DTypeSize(BufferDType(b, variant.dtype)) * accesses;
  }
  return bytes;
}

int BytesPerElement(const KernelVariant& variant) {
  return static_cast<int>(BytesMoved(variant, ShapeOfElements(*variant.family, 1)));
}

int64_t OperationsOf(const KernelVariant& variant, const RunShape& shape) {
  return variant.family->operations != nullptr ? variant.family->operations(shape) : 0;
}

int64_t LaunchItems(const KernelVariant& variant, const RunShape& shape) {
  return variant.family->launch_items != nullptr ? variant.family->launch_items(shape)
                                                 : shape.elements;
}

ReferenceFn ReferenceOf(const KernelVariant& variant) {
  return variant.reference != nullptr ? variant.reference : variant.family->reference;
}

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
  const KernelList all = AllKernels();
  for (const KernelVariant& k : all) {
    if (k.name == name) return &k;
  }
  std::vector<std::string> names;
  for (const KernelVariant& k : all) names.emplace_back(k.name);
  const std::vector<std::string> closest = ClosestNames(name, names, 3);
  return absl::NotFoundError(absl::StrCat(
      "unknown kernel '", EchoForMessage(name), "'",
      closest.empty() ? "" : absl::StrCat("; did you mean ", absl::StrJoin(closest, ", "), "?"),
      "; valid kernels: ", KernelNamesForHelp()));
}

}  // namespace gpubench
