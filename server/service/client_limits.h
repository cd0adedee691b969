// Per-client limits on user-kernel submissions (docs/user-kernels.md, "Security"): how many of a
// client's user-kernel runs may be queued or running at once (each starts with a compile in its
// device's worker, so this bounds the client's concurrent compiles), and how many it may submit
// per minute. A client is the caller as the service knows it: its bearer token (by position in
// --token_file), else its client certificate's identity (mutual TLS), else its peer address
// without the port. Thread-safe.
#ifndef GPUBENCH_SERVER_SERVICE_CLIENT_LIMITS_H_
#define GPUBENCH_SERVER_SERVICE_CLIENT_LIMITS_H_

#include <grpcpp/server_context.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/service/auth.h"

namespace gpubench {

struct UserKernelClientLimits {
  int runs_in_flight = 4;           // --user_kernel_runs_per_client; 0: no limit
  int submissions_per_minute = 60;  // --user_kernel_submissions_per_minute; 0: no limit
};

class ClientLimiter;

// One admitted submission's place among its client's runs in flight; given back when destroyed
// (or Release()d), which the service does when the run's result or error is known.
class ClientSlot {
 public:
  ClientSlot() = default;
  ClientSlot(ClientLimiter* limiter, std::string client)
      : limiter_(limiter), client_(std::move(client)) {}
  ClientSlot(ClientSlot&& other) noexcept { *this = std::move(other); }
  ClientSlot& operator=(ClientSlot&& other) noexcept;
  ClientSlot(const ClientSlot&) = delete;
  ClientSlot& operator=(const ClientSlot&) = delete;
  ~ClientSlot() { Release(); }
  void Release();

 private:
  ClientLimiter* limiter_ = nullptr;
  std::string client_;
};

class ClientLimiter {
 public:
  explicit ClientLimiter(
      UserKernelClientLimits limits, std::function<absl::Time()> now = [] { return absl::Now(); })
      : limits_(limits), now_(std::move(now)) {}

  // Admits one user-kernel submission of `client`, or RESOURCE_EXHAUSTED naming the limit (the
  // flag), the client and, for the rate, when the next one is allowed. A refusal counts nothing.
  absl::StatusOr<ClientSlot> Admit(const std::string& client);

  // Runs of `client` in flight now (tests).
  int InFlight(const std::string& client) const;

 private:
  friend class ClientSlot;
  struct Client {
    int in_flight = 0;
    std::deque<absl::Time> recent;  // admissions in the last minute, oldest first
  };
  void Release(const std::string& client);

  const UserKernelClientLimits limits_;
  const std::function<absl::Time()> now_;
  mutable std::mutex mu_;
  std::map<std::string, Client> clients_;  // only clients with runs in flight or recent ones
};

// The caller of `context` as ClientLimiter counts it: "token #2" (the second token of
// --token_file) where `auth` checks tokens, else "tls:<identity>" for an authenticated client
// certificate, else the peer address without its port ("ipv4:127.0.0.1").
std::string ClientIdentity(const grpc::CallbackServerContext& context,
                           const TokenAuthenticator* auth);

// "ipv4:127.0.0.1:5000" -> "ipv4:127.0.0.1", "ipv6:[::1]:5000" -> "ipv6:[::1]"; others unchanged.
std::string PeerWithoutPort(const std::string& peer);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_CLIENT_LIMITS_H_
