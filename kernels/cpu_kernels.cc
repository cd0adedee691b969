// Host emulations of every elementwise and SAXPY/copy device kernel: each function runs
// "threads" [begin, end) of a launch with the device kernel's own indexing, vector widths and tail
// handling. Cache hints change no result, so the one-pass kernels (add_*_tuned, add_*_stream and
// add_*_l2keep) share the AddF32OnePass / AddF16OnePass / AddBF16OnePass emulations. Bound to
// their variants in kernels/families/*.cc (GPUBENCH_CPU_KERNEL declarations there).
#include <algorithm>
#include <cstring>

#include "kernels/launch.h"
#include "kernels/numeric.h"
#include "kernels/saxpy_math.h"

namespace gpubench::cpu {
namespace {

// Elements [first, first + width) of thread `t` clipped to n: the device kernels' tail rule.
struct Span {
  int64_t first;
  int64_t count;
};
inline Span ThreadSpan(int64_t t, int width, int64_t n) {
  const int64_t first = t * width;
  return {first, std::clamp<int64_t>(n - first, 0, width)};
}

template <typename T, typename AddFn>
void AddVector(const KernelBuffers& b, int width, int64_t begin, int64_t end, AddFn add) {
  const T* a = b.at<const T>(0);
  const T* c_in = b.at<const T>(1);
  T* c = b.at<T>(2);
  for (int64_t t = begin; t < end; ++t) {
    const Span s = ThreadSpan(t, width, b.n);
    if (s.count == width) {
      // Full vector: one wide load of each operand into registers, as LDG.128 / half2 loads do.
      T ra[8], rb[8], rc[8];
      std::memcpy(ra, a + s.first, sizeof(T) * width);
      std::memcpy(rb, c_in + s.first, sizeof(T) * width);
      for (int k = 0; k < width; ++k) rc[k] = add(ra[k], rb[k]);
      std::memcpy(c + s.first, rc, sizeof(T) * width);
    } else {
      for (int64_t k = 0; k < s.count; ++k) c[s.first + k] = add(a[s.first + k], c_in[s.first + k]);
    }
  }
}

inline float AddFloat(float x, float y) { return x + y; }

// Adds 16-byte packet v (16 / sizeof(T) elements) through registers, as one LDG.128 per operand.
template <typename T, typename AddFn>
void AddPacket(const T* a, const T* b, T* c, int64_t v, AddFn add) {
  constexpr int kWidth = 16 / sizeof(T);
  T ra[kWidth], rb[kWidth], rc[kWidth];
  std::memcpy(ra, a + v * kWidth, sizeof(ra));
  std::memcpy(rb, b + v * kWidth, sizeof(rb));
  for (int k = 0; k < kWidth; ++k) rc[k] = add(ra[k], rb[k]);
  std::memcpy(c + v * kWidth, rc, sizeof(rc));
}

// The grid-stride kernel's indexing: a grid-stride loop over 16-byte vectors, then the last
// n mod width elements one per global thread.
template <typename T, typename AddFn>
void AddGridStride(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin, int64_t end,
                   AddFn add) {
  constexpr int kWidth = 16 / sizeof(T);
  const T* a = b.at<const T>(0);
  const T* c_in = b.at<const T>(1);
  T* c = b.at<T>(2);
  const int64_t nvec = b.n / kWidth;
  const int64_t stride = g.grid_size * g.block_size;
  for (int64_t t = begin; t < end; ++t) {
    for (int64_t v = t; v < nvec; v += stride) AddPacket<T>(a, c_in, c, v, add);
    const int64_t tail = nvec * kWidth + t;
    if (tail < b.n) c[tail] = add(a[tail], c_in[tail]);
  }
}

// The one-pass tuned kernels' indexing: block k owns vectors [k*B*U, (k+1)*B*U), lane-interleaved
// (vector k*B*U + u*B + lane for u < U); the last n mod width elements one per global thread.
template <typename T, typename AddFn>
void AddBlockVectors(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin, int64_t end,
                     AddFn add) {
  constexpr int kWidth = 16 / sizeof(T);
  const int unroll = g.items_per_thread / kWidth;
  const T* a = b.at<const T>(0);
  const T* c_in = b.at<const T>(1);
  T* c = b.at<T>(2);
  const int64_t nvec = b.n / kWidth;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t block = t / g.block_size, lane = t % g.block_size;
    for (int u = 0; u < unroll; ++u) {
      const int64_t v = block * g.block_size * unroll + int64_t{u} * g.block_size + lane;
      if (v < nvec) AddPacket<T>(a, c_in, c, v, add);
    }
    const int64_t tail = nvec * kWidth + t;
    if (tail < b.n) c[tail] = add(a[tail], c_in[tail]);
  }
}

// The bulk-copy kernels' indexing: block k owns the tile of elements [k*B*I, (k+1)*B*I); lane l
// adds the tile's 16-byte packets l, l + B, ... (out of shared memory on the device), then
// element packets*width + l of the tile's remainder, if any.
template <typename T, typename AddFn>
void AddBulkTiles(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin, int64_t end,
                  AddFn add) {
  constexpr int kWidth = 16 / sizeof(T);
  const T* a = b.at<const T>(0);
  const T* c_in = b.at<const T>(1);
  T* c = b.at<T>(2);
  const int64_t tile = int64_t{g.block_size} * g.items_per_thread;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t block = t / g.block_size, lane = t % g.block_size;
    const int64_t offset = block * tile;
    const int64_t count = std::clamp<int64_t>(b.n - offset, 0, tile);
    const int64_t packets = count / kWidth;
    for (int64_t v = lane; v < packets; v += g.block_size) {
      AddPacket<T>(a, c_in, c, offset / kWidth + v, add);
    }
    const int64_t tail = offset + packets * kWidth + lane;
    if (tail < offset + count) c[tail] = add(a[tail], c_in[tail]);
  }
}

}  // namespace

void AddF32(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<float>(b, 1, begin, end, AddFloat);
}
void AddF32x4(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<float>(b, 4, begin, end, AddFloat);
}
void AddF16(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<Half>(b, 1, begin, end, AddHalf);
}
void AddF16x2(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<Half>(b, 2, begin, end, AddHalf);
}
void AddF16x8(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<Half>(b, 8, begin, end, AddHalf);
}
void AddF16x8Pack(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<Half>(b, 8, begin, end, AddHalf);
}
void AddBF16(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<BFloat16>(b, 1, begin, end, AddBFloat16);
}

void AddBF16x2(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  AddVector<BFloat16>(b, 2, begin, end, AddBFloat16);
}
void AddBF16x8Pack(const KernelBuffers& b, const LaunchGeometry&, int64_t begin,
                   int64_t end) {
  AddVector<BFloat16>(b, 8, begin, end, AddBFloat16);
}
void AddF32OnePass(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin,
                   int64_t end) {
  AddBlockVectors<float>(b, g, begin, end, AddFloat);
}
void AddF16OnePass(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin,
                   int64_t end) {
  AddBlockVectors<Half>(b, g, begin, end, AddHalf);
}
void AddBF16OnePass(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin,
                    int64_t end) {
  AddBlockVectors<BFloat16>(b, g, begin, end, AddBFloat16);
}
void AddF32Bulk(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin, int64_t end) {
  AddBulkTiles<float>(b, g, begin, end, AddFloat);
}
void AddF16Bulk(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin, int64_t end) {
  AddBulkTiles<Half>(b, g, begin, end, AddHalf);
}
void AddBF16Bulk(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin, int64_t end) {
  AddBulkTiles<BFloat16>(b, g, begin, end, AddBFloat16);
}
void AddF32GridStride(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin,
                      int64_t end) {
  AddGridStride<float>(b, g, begin, end, AddFloat);
}
void AddF16GridStride(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin,
                      int64_t end) {
  AddGridStride<Half>(b, g, begin, end, AddHalf);
}
void AddBF16GridStride(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin,
                       int64_t end) {
  AddGridStride<BFloat16>(b, g, begin, end, AddBFloat16);
}

void SaxpyMinimal(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  const float* x = b.at<const float>(0);
  float* y = b.at<float>(1);
  const int64_t last = std::min(end, b.n);
  for (int64_t i = begin; i < last; ++i) y[i] = saxpy::Minimal(b.alpha, x[i], y[i]);
}

void SaxpySophisticated(const KernelBuffers& b, const LaunchGeometry&, int64_t begin,
                        int64_t end) {
  const float* x = b.at<const float>(0);
  float* y = b.at<float>(1);
  const int64_t last = std::min(end, b.n);
  for (int64_t i = begin; i < last; ++i) {
    y[i] = saxpy::SophisticatedFinish(saxpy::SophisticatedPrepare(b.alpha, x[i], y[i]));
  }
}

void SaxpyBalanced(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  const float* x = b.at<const float>(0);
  float* y = b.at<float>(1);
  const int64_t last = std::min(end, b.n);
  for (int64_t i = begin; i < last; ++i) {
    y[i] = saxpy::BalancedFinish(saxpy::BalancedPrepare(b.alpha, x[i], y[i]));
  }
}

void CopyF32(const KernelBuffers& b, const LaunchGeometry& g, int64_t begin, int64_t end) {
  const int64_t first = std::min(begin * g.items_per_thread, b.n);
  const int64_t last = std::min(end * g.items_per_thread, b.n);
  std::memcpy(b.at<float>(1) + first, b.at<const float>(0) + first,
              sizeof(float) * (last - first));
}

}  // namespace gpubench::cpu
