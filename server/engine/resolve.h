// Validation: a RunRequest checked against the catalog, the device and the server's limits, and
// resolved into a RunSpec.
#ifndef GPUBENCH_SERVER_ENGINE_RESOLVE_H_
#define GPUBENCH_SERVER_ENGINE_RESOLVE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "server/engine/run_spec.h"
#include "server/engine/tuned_defaults.h"

namespace gpubench {

// Index of the device of `backend` whose UUID is `uuid`, or -1 when none is. Thread-safe.
int DeviceIndexOfUuid(const Backend& backend, absl::string_view uuid);

// OK when one block of `kernel` at `block_size` x `items_per_thread` gets the dynamic shared
// memory it needs on `device` (the opt-in maximum where the device reports one); otherwise
// INVALID_ARGUMENT saying how much it needs and how much the device allows. Thread-safe.
absl::Status CheckSharedMemoryFits(const KernelVariant& kernel, int block_size,
                                   int items_per_thread, const DeviceInfo& device);

// Validates `request` against the catalog, the device and the limits, and resolves defaults.
// NOT_FOUND for an unknown kernel, INVALID_ARGUMENT for bad fields, RESOURCE_EXHAUSTED when the
// buffers cannot fit in the device's free memory (checked before anything is allocated).
// Thread-safe.
absl::StatusOr<RunSpec> ResolveRunRequest(const RunRequest& request, const Backend& backend,
                                          const ServerLimits& limits,
                                          const TunedDefaults* tuned = nullptr);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_RESOLVE_H_
