#include "kernels/family.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/parallel.h"
#include "kernels/uniform.h"

namespace gpubench {
namespace {

// Uniform in [-1, 1) with 24 random bits: exactly representable in float.
double UniformValue(uint64_t seed, uint64_t stream, int64_t i) {
  return static_cast<double>(UniformBits24(seed, stream, i)) / static_cast<double>(1 << 23) - 1.0;
}

// Element `i` of a buffer of `dtype` at `data` set to `v` (GenerateUniform's value), rounded.
void StoreUniform(DType dtype, void* data, int64_t i, double v) {
  switch (dtype) {
    case DType::kF32:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      break;
    case DType::kF16:
      static_cast<Half*>(data)[i] = DoubleToHalf(v);
      break;
    case DType::kBF16:
      static_cast<BFloat16*>(data)[i] = DoubleToBFloat16(v);
      break;
    case DType::kF64:
      static_cast<double*>(data)[i] = v;
      break;
    case DType::kU32:  // the 24 random bits as an integer
      static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>((v + 1.0) * (1 << 23));
      break;
    case DType::kU64:
      static_cast<uint64_t*>(data)[i] = static_cast<uint64_t>((v + 1.0) * (1 << 23));
      break;
    case DType::kF8E4M3:
      static_cast<Fp8E4M3*>(data)[i] = DoubleToFp8E4M3(v);
      break;
  }
}

}  // namespace

const char* MetricName(Metric metric) {
  switch (metric) {
    case Metric::kBytesPerSecond:
      return "bytes_per_second";
    case Metric::kOperationsPerSecond:
      return "operations_per_second";
    case Metric::kSecondsPerOperation:
      return "seconds_per_operation";
  }
  return "unknown";
}

void GenerateUniform(const GenerateContext& c, std::span<std::byte> out) {
  const int64_t n = static_cast<int64_t>(out.size()) / DTypeSize(c.dtype);
  void* data = out.data();
  const auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      StoreUniform(c.dtype, data, i, UniformValue(c.seed, c.stream, i));
    }
  };
  if (c.pool != nullptr) {
    c.pool->For(n, 1 << 16, fill);
  } else {
    fill(0, n);
  }
}

void GenerateUniformAt(const GenerateContext& c, std::span<const int64_t> indices,
                       std::span<std::byte> out) {
  const size_t count = std::min(indices.size(), out.size() / DTypeSize(c.dtype));
  for (size_t j = 0; j < count; ++j) {
    StoreUniform(c.dtype, out.data(), static_cast<int64_t>(j),
                 UniformValue(c.seed, c.stream, indices[j]));
  }
}

absl::StatusOr<RunShape> ResolveShape(const KernelFamily& family, int64_t elements,
                                      const RunShape& requested) {
  if (family.resolve_shape != nullptr) return family.resolve_shape(elements, requested);
  if (requested.m != 0 || requested.n != 0 || requested.k != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", family.name, " family takes an element count only; omit shape (m, n, k)"));
  }
  return RunShape{.elements = elements};
}

RunShape ShapeOfElements(const KernelFamily& family, int64_t elements) {
  absl::StatusOr<RunShape> shape = ResolveShape(family, elements, RunShape{});
  return shape.ok() ? *shape : RunShape{.elements = elements};
}

}  // namespace gpubench
