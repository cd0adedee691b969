// The CLI's user-kernel flags (`gpubench run --source=... --entry=... --family=... --dtype=...`,
// docs/user-kernels.md), shared by `run`, `sweep` and `contract` (client/commands/contract.cc).
#ifndef GPUBENCH_CLIENT_COMMANDS_USER_KERNEL_H_
#define GPUBENCH_CLIENT_COMMANDS_USER_KERNEL_H_

#include "gpubench/v1/benchmark.pb.h"

namespace gpubench::client {

// Whether --source, --ptx or --cubin names a file (then `run` takes no KERNEL).
bool UserKernelRequested();
// Whether --compare was given (it applies to a user kernel only).
bool CompareRequested();
// Fills `kernel` from the flags (--compare included) with the launch `block_size` (0: 256) and
// `items_per_thread`; false (the message printed) for an unreadable file or a missing --entry,
// --family or --dtype.
bool FillUserKernel(int block_size, int items_per_thread, v1::UserKernel* kernel);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_COMMANDS_USER_KERNEL_H_
