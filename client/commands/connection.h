// The connection every command but help makes (connection.cc): the channel from the
// connection flags (--target, TLS, --token_file, --rpc_timeout_seconds), deadlines, errors.
#ifndef GPUBENCH_CLIENT_COMMANDS_CONNECTION_H_
#define GPUBENCH_CLIENT_COMMANDS_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace gpubench::client {

// Prints "failed: CODE: message" for `what` (with the server's reason when a TLS handshake was
// refused) and returns the exit code for the status.
int ReportRpcError(const std::string& what, const grpc::Status& status);

// Ctrl-C: SIGINT and SIGTERM are blocked in every thread and taken by one watcher thread. While
// a sweep streams, the first signal cancels its call (the sweep then prints what finished and
// exits 130); otherwise, or on a second signal, the process exits 130 at once.
class Interrupts {
 public:
  static Interrupts& Get();
  // Call before any other thread exists (gRPC's included): they inherit the blocked mask.
  void Start();
  void SetCall(grpc::ClientContext* context);
  bool interrupted() const { return interrupted_.load(); }

 private:
  void Watch();
  sigset_t signals_;
  std::mutex mu_;
  grpc::ClientContext* call_ = nullptr;
  std::atomic<bool> interrupted_{false};
};

// The bearer token LoadToken read; empty when there is none.
std::string& Token();
// --rpc_timeout_seconds and the token on one call.
void SetDeadline(grpc::ClientContext* context);
// Reads the bearer token as the server reads its token file (common/tokens.h: the first token;
// whitespace, CR, blank lines and comments dropped). kExitOk, or the exit code after a message:
// kExitUsage for an unreadable file, kExitAuth for an unusable token.
int LoadToken();
// A channel to `target` with the TLS flags; nullptr (after a message) when a PEM file cannot be
// read.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_COMMANDS_CONNECTION_H_
