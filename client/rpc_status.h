// The gpubench CLI's exit codes and how a failed RPC maps to them and is reported.
#ifndef GPUBENCH_CLIENT_RPC_STATUS_H_
#define GPUBENCH_CLIENT_RPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

namespace gpubench::client {

// Exit codes (stable, for scripts; README "Using it").
inline constexpr int kExitOk = 0;
inline constexpr int kExitRunFailed = 1;     // a run failed on the server
inline constexpr int kExitUsage = 2;         // bad command, flag or size
inline constexpr int kExitUnreachable = 3;   // server unreachable or deadline exceeded
inline constexpr int kExitAuth = 4;          // token or TLS handshake refused
inline constexpr int kExitRegression = 5;    // fleet: a regression against --baseline
inline constexpr int kExitInterrupted = 130; // 128 + SIGINT, as shells report it

// "NOT_FOUND", "DEADLINE_EXCEEDED", ... ("UNKNOWN_CODE" for a number gRPC does not define).
std::string StatusCodeName(grpc::StatusCode code);

// A connection that failed in the TLS handshake (the server refused our certificate, or we do
// not trust the server's): an authentication failure, not an unreachable server.
bool IsTlsHandshakeFailure(const grpc::Status& status);

// The exit code for a call that ended with `status`.
int ExitCodeFor(const grpc::Status& status);

// What the CLI prints on stderr when the RPC `what` failed: "gpubench: WHAT failed: CODE: message",
// plus a hint line for a TLS handshake failure. Ends with a newline.
std::string RpcErrorMessage(const std::string& what, const grpc::Status& status);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_RPC_STATUS_H_
