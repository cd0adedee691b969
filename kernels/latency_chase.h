// The memory-latency family's host side: the random single cycle a pointer chase walks, the host
// walk that verifies a chase, and the CPU backend's real pointer chase. Host-only (no CUDA);
// kernels/latency_layout.h describes the layout.
#ifndef GPUBENCH_KERNELS_LATENCY_CHASE_H_
#define GPUBENCH_KERNELS_LATENCY_CHASE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/latency_layout.h"

namespace gpubench {

// The successor of every node in one uniformly random cycle through all `nodes` nodes (Sattolo's
// algorithm; a fixed 64-bit generator, so the same seed gives the same cycle on every platform).
// next[i] != i for nodes >= 2, and following next from any node visits every node once before
// returning. nodes must be in [2, 2^32].
std::vector<uint32_t> RandomCycle(int64_t nodes, uint64_t seed);

// True when `next` is a permutation made of exactly one cycle through every index.
bool IsSingleCycle(std::span<const uint32_t> next);

// The node reached after `loads` steps from `start`: what a chase of `loads` dependent loads
// starting at node `start` must end on (the verification's host walk).
uint32_t WalkCycle(std::span<const uint32_t> next, uint32_t start, int64_t loads);

// Writes the chase layout into `base` (nodes x kChaseStrideBytes bytes, 8-byte aligned): node i's
// first 8 bytes hold base_address + next[i] x kChaseStrideBytes. base_address 0 writes offsets
// (the generated input); the address of `base` writes host pointers, ready to chase.
void LayOutChase(std::span<const uint32_t> next, uint64_t base_address, std::byte* base);

// Adds `base_address` to the first 8 bytes of each of `nodes` nodes at `base`: offsets become
// addresses (what a session does once to the generated input, outside timing).
void RebaseChase(std::byte* base, int64_t nodes, uint64_t base_address);

// The CPU backend's chase: `loads` dependent loads from the node at `position` (an address in a
// buffer holding addresses); returns the address it ends on. Real host loads: its time per load
// is the host's latency at this footprint.
const void* CpuChase(const void* position, int64_t loads);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_LATENCY_CHASE_H_
