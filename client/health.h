// `gpubench health`: the server's health verdicts (GetHealth) for schedulers and node checks
// (node-problem-detector, Slurm NHC; docs/health.md). One summary line, then the evidence.
#ifndef GPUBENCH_CLIENT_HEALTH_H_
#define GPUBENCH_CLIENT_HEALTH_H_

#include <string>

#include "gpubench/v1/benchmark.pb.h"

namespace gpubench::client {

// Exit codes of `gpubench health` (stable, for node checks): PASS 0, DEGRADED or FAIL 1,
// UNKNOWN 2. (An unreachable server or a refused token keep the CLI's 3 and 4.)
inline constexpr int kHealthPass = 0;
inline constexpr int kHealthBad = 1;
inline constexpr int kHealthUnknown = 2;
int HealthExitCode(v1::HealthVerdict verdict);

// The table: "<VERDICT> <node>: <n> GPU(s) ..." then one line per GPU and per evidence item.
std::string RenderHealth(const v1::GetHealthResponse& response);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_HEALTH_H_
