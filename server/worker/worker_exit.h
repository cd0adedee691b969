// gpubench_worker's exit codes, which the server's supervisor reads (docs/workers.md).
#ifndef GPUBENCH_SERVER_WORKER_WORKER_EXIT_H_
#define GPUBENCH_SERVER_WORKER_WORKER_EXIT_H_

namespace gpubench {

inline constexpr int kWorkerExitStopped = 0;       // the server closed the channel
inline constexpr int kWorkerExitBadStartup = 2;    // a flag, the backend or the device unusable
inline constexpr int kWorkerExitDeviceLost = 3;    // a sticky device error: the context is gone
inline constexpr int kWorkerExitChannelLost = 4;   // the server died or the channel broke

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_WORKER_WORKER_EXIT_H_
