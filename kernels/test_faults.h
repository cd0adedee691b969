// Test-only kernel variants that break the process they run in, on purpose: a device trap, an
// out-of-bounds store, a kernel that never returns, an abrupt exit and an allocation without
// bound. They exist to prove that a fault ends one device's worker and never the server
// (docs/workers.md). Never in the production catalog: registered only by
// `--test_fault_kernels`, which the server passes on to its workers.
#ifndef GPUBENCH_KERNELS_TEST_FAULTS_H_
#define GPUBENCH_KERNELS_TEST_FAULTS_H_

#include <span>

#include "absl/status/status.h"
#include "kernels/catalog.h"

namespace gpubench {

// Adds test_fault_{trap,oob,hang,exit,alloc}, and the wrong-result variants
// test_corrupt_one_add_f32 (one element, its index from the seed, kernels/test_corrupt.h, off
// by one) and test_write_nothing_add_f32 (elementwise-add family, f32) to the catalog. Call
// once, before the catalog is read concurrently (RegisterVariants' rules).
absl::Status RegisterTestFaultVariants();

// The two wrong-result variants alone (registered by RegisterTestFaultVariants too), for tests
// that register them without the variants that crash (RegisterVariants).
std::span<const KernelVariant> TestWrongResultVariants();

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_TEST_FAULTS_H_
