#include "kernels/timed_check.h"

namespace gpubench {

TimedSampleChooser::TimedSampleChooser(uint64_t run_seed)
    : rng_(run_seed ^ 0x7469'6d65'6443'6b21ull), run_seed_(run_seed) {}

// SplitMix64 (common/splitmix64.h): a stream independent of the inputs' generator.
uint64_t TimedSampleChooser::NextWord() { return rng_.Next(); }

bool TimedSampleChooser::Next() {
  ++taken_;
  // Uniform in [0, taken_) by rejection of the biased top of the 64-bit range.
  const uint64_t n = static_cast<uint64_t>(taken_);
  const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % n);
  uint64_t word = NextWord();
  while (word >= limit) word = NextWord();
  return word % n == 0;
}

uint64_t TimedSampleChooser::InputSeed() {
  uint64_t seed = NextWord();
  while (seed == run_seed_) seed = NextWord();
  return seed;
}

WindowAuditChooser::WindowAuditChooser(uint64_t run_seed)
    : rng_(run_seed ^ 0x6175'6469'7457'696eull) {}

bool WindowAuditChooser::Next() {
  const uint64_t mask = ++taken_ <= 8 ? 1 : 7;
  return (rng_.Next() & mask) == 0;
}

}  // namespace gpubench
