#include "kernels/latency_chase.h"

#include <cstring>
#include <utility>

#include "common/splitmix64.h"

namespace gpubench {

std::vector<uint32_t> RandomCycle(int64_t nodes, uint64_t seed) {
  std::vector<uint32_t> next(static_cast<size_t>(nodes));
  for (int64_t i = 0; i < nodes; ++i) next[i] = static_cast<uint32_t>(i);
  // Sattolo (1986): like Fisher-Yates, but j < i strictly, which yields exactly the cyclic
  // permutations, each with equal probability; next[i] is the successor of node i.
  SplitMix64 random(seed);
  for (int64_t i = nodes - 1; i > 0; --i) {
    const uint64_t j = random.Below(static_cast<uint64_t>(i));
    std::swap(next[i], next[j]);
  }
  return next;
}

bool IsSingleCycle(std::span<const uint32_t> next) {
  const size_t n = next.size();
  if (n == 0) return false;
  std::vector<bool> seen(n, false);
  uint32_t node = 0;
  for (size_t step = 0; step < n; ++step) {
    if (node >= n || seen[node]) return false;  // out of range, or back early: a shorter cycle
    seen[node] = true;
    node = next[node];
  }
  return node == 0;  // n distinct nodes visited and back at the start: one cycle through all
}

uint32_t WalkCycle(std::span<const uint32_t> next, uint32_t start, int64_t loads) {
  uint32_t node = start;
  for (int64_t i = 0; i < loads; ++i) node = next[node];
  return node;
}

void LayOutChase(std::span<const uint32_t> next, uint64_t base_address, std::byte* base) {
  for (size_t i = 0; i < next.size(); ++i) {
    const uint64_t target = base_address + uint64_t{next[i]} * kChaseStrideBytes;
    std::memcpy(base + i * kChaseStrideBytes, &target, sizeof(target));
  }
}

void RebaseChase(std::byte* base, int64_t nodes, uint64_t base_address) {
  for (int64_t i = 0; i < nodes; ++i) {
    uint64_t value;
    std::memcpy(&value, base + i * kChaseStrideBytes, sizeof(value));
    value += base_address;
    std::memcpy(base + i * kChaseStrideBytes, &value, sizeof(value));
  }
}

const void* CpuChase(const void* position, int64_t loads) {
  // Each address comes from the previous load; the volatile read keeps the compiler from
  // reasoning about the loop (it cannot know the buffer's contents anyway).
  const void* p = position;
  for (int64_t i = 0; i < loads; ++i) p = *static_cast<const void* const volatile*>(p);
  return p;
}

}  // namespace gpubench
