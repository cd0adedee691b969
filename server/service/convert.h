// Conversions between the engine's plain structs and gpubench.v1 messages. The edge only.
#ifndef GPUBENCH_SERVER_SERVICE_CONVERT_H_
#define GPUBENCH_SERVER_SERVICE_CONVERT_H_

#include "gpubench/v1/benchmark.pb.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/user_kernel.h"
#include "server/engine/autotune.h"
#include "server/engine/run_result.h"
#include "server/engine/run_spec.h"
#include "server/engine/sweep.h"
#include "server/health/health_monitor.h"

namespace gpubench {

RunRequest FromProto(const v1::RunBenchmarkRequest& request);
UserKernelRequest FromProto(const v1::UserKernel& kernel);
void ToProto(const UserKernelContract& contract, absl::string_view entry,
             v1::GetKernelContractResponse* out);
void ToProto(const KernelVariant& kernel, bool available, v1::KernelInfo* out);
void ToProto(const DeviceInfo& device, v1::DeviceInfo* out);
void ToProto(const RunResult& result, v1::RunResult* out);

SweepPlan FromProto(const v1::RunSweepRequest& request);
AutotuneRequest FromProto(const v1::AutotuneRequest& request);
void ToProto(const AutotuneReport& report, v1::AutotuneResponse* out);

// The health monitor's verdicts as GetHealth answers them (docs/health.md).
v1::HealthVerdict ToProto(health::Verdict verdict);
void ToProto(const health::GpuHealth& gpu, v1::GpuHealth* out);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_CONVERT_H_
