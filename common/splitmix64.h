// SplitMix64 (Steele, Lea, Flood 2014; Vigna's splitmix64.c): the fixed, portable 64-bit
// generator behind every seeded input of gpubench (kernels/family.cc's uniform data, the latency
// family's random cycle). The standard library's distributions differ between implementations, so
// data drawn through them would too; these functions give the same bits everywhere.
#ifndef GPUBENCH_COMMON_SPLITMIX64_H_
#define GPUBENCH_COMMON_SPLITMIX64_H_

#include <cstdint>

namespace gpubench {

// The generator's increment (2^64 / golden ratio, odd); also a good multiplier to spread a small
// stream number over all 64 bits before mixing it into a seed.
inline constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ULL;

// The output function: a bijective mix of all 64 bits (Stafford's variant 13).
constexpr uint64_t SplitMix64Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The first output of a generator seeded with `x`: a stateless hash of a counter (value i of a
// stream is SplitMix64Hash(f(seed, stream, i)), so any element can be computed on its own).
constexpr uint64_t SplitMix64Hash(uint64_t x) { return SplitMix64Mix(x + kSplitMix64Gamma); }

class SplitMix64 {
 public:
  explicit constexpr SplitMix64(uint64_t seed) : state_(seed) {}

  constexpr uint64_t Next() { return SplitMix64Mix(state_ += kSplitMix64Gamma); }

  // Uniform in [0, bound), bound >= 1: Lemire's multiply-shift with rejection (unbiased).
  uint64_t Below(uint64_t bound) {
    while (true) {
      const unsigned __int128 m = static_cast<unsigned __int128>(Next()) * bound;
      const uint64_t low = static_cast<uint64_t>(m);
      if (low >= bound || low >= (-bound) % bound) return static_cast<uint64_t>(m >> 64);
    }
  }

 private:
  uint64_t state_;
};

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_SPLITMIX64_H_
