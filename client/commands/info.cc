// `gpubench info`: the server's version, backend, security and limits (GetServerInfo).
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/commands/commands.h"
#include "client/commands/connection.h"
#include "client/output.h"
#include "client/rpc_status.h"
#include "common/sizes.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench::client {

int Info(const Invocation& invocation) {
  v1::Benchmark::Stub& stub = *invocation.stub;
  const Format format = invocation.format;
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetServerInfoResponse r;
  grpc::Status status = stub.GetServerInfo(&context, v1::GetServerInfoRequest(), &r);
  if (!status.ok()) return ReportRpcError("GetServerInfo", status);
  if (format != Format::kTable) {
    std::cout << ToJson(r);
    return kExitOk;
  }
  const v1::ServerLimitsInfo& l = r.limits();
  std::cout << "gpubench_server " << r.version() << " (git " << r.git_revision() << ")\n"
            << "backend         " << r.backend() << ", " << r.device_count() << " device(s)\n"
            << "started         "
            << absl::FormatTime(absl::FromUnixSeconds(r.start_time().seconds()),
                                absl::UTCTimeZone())
            << "\n"
            << "security        " << (r.tls() ? "TLS" : "plaintext")
            << (r.authentication_required() ? ", bearer token required" : ", no token") << "\n"
            << "limits          max_elements " << l.max_elements() << " ("
            << FormatElementCount(l.max_elements()) << "), queue_capacity " << l.queue_capacity()
            << ", max_sweep_items " << l.max_sweep_items() << ",\n"
            << "                max_timeout_seconds " << l.max_timeout_seconds()
            << ", max_warmup_launches " << l.max_warmup_launches() << " / "
            << l.max_warmup_seconds() << " s, max_message_bytes " << l.max_message_bytes()
            << ", max_concurrent_streams " << l.max_concurrent_streams()
            << (l.allow_profiling() ? ", profiling allowed" : ", profiling off") << "\n";
  if (l.allow_user_kernels()) {
    std::cout << "user kernels    allowed, at most " << l.max_user_kernel_bytes()
              << " bytes; each device's user-kernel worker stops after "
              << l.user_kernel_worker_idle_seconds() << " s idle"
              << (l.user_kernel_sweeps() ? "; sweeps take them" : "") << "\n";
  } else {
    std::cout << "user kernels    off (--allow_user_kernels)\n";
  }
  return kExitOk;
}

}  // namespace gpubench::client
