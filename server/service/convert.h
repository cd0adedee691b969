// Conversions between the engine's plain structs and gpubench.v1 messages. The edge only.
#ifndef GPUBENCH_SERVER_SERVICE_CONVERT_H_
#define GPUBENCH_SERVER_SERVICE_CONVERT_H_

#include <initializer_list>

#include "gpubench/v1/benchmark.pb.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "server/engine/engine.h"
#include "server/engine/run_spec.h"

namespace gpubench {

RunRequest FromProto(const v1::RunBenchmarkRequest& request);
void ToProto(const KernelVariant& kernel, bool available, v1::KernelInfo* out);
void ToProto(const DeviceInfo& device, v1::DeviceInfo* out);
void ToProto(const RunResult& result, v1::RunResult* out);

// A repeated int32 field as a vector (element by element: GCC 12's -Wfree-nonheap-object
// misfires on the iterator-range constructor here).
std::vector<int32_t> ToVector(const google::protobuf::RepeatedField<int32_t>& field);

// The product of `factors`, or limit + 1 as soon as it would exceed `limit` (never overflows);
// 0 when a factor is 0 or negative. Requests that multiply lists check this before building.
int64_t CountCombinations(std::initializer_list<int64_t> factors, int64_t limit);

// Expands a sweep (kernels x sizes x block sizes) into validated RunSpecs, failing as a whole on
// the first invalid item (its status names the item) or when it has more than `max_items` items.
// Plan files use this same message, so scheduled plans and RPC sweeps share one format.
absl::StatusOr<std::vector<RunSpec>> ExpandSweep(const v1::RunSweepRequest& request,
                                                 const Engine& engine, int max_items);

// A run whose verification failed is an error, never a result: FAILED verification becomes
// INTERNAL with the first mismatch in the message; otherwise OK.
absl::Status VerificationStatus(const RunResult& result);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_CONVERT_H_
