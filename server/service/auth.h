// Bearer-token authentication for gpubench.v1.Benchmark. Tokens come from a file (one per line,
// '#' comments); each call's "authorization: Bearer <token>" header is compared in constant time
// with every configured token. The health and reflection services stay open (probes, grpcurl).
#ifndef GPUBENCH_SERVER_SERVICE_AUTH_H_
#define GPUBENCH_SERVER_SERVICE_AUTH_H_

#include <grpcpp/server_context.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpubench {

class TokenAuthenticator {
 public:
  // No tokens: authentication disabled (every call allowed).
  explicit TokenAuthenticator(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {}

  // Reads a token file. INVALID_ARGUMENT for an unreadable file or one without tokens.
  static absl::StatusOr<TokenAuthenticator> FromFile(const std::string& path);

  bool enabled() const { return !tokens_.empty(); }

  // OK, or UNAUTHENTICATED saying what is missing or wrong (never echoing the token). Thread-safe.
  absl::Status Check(const grpc::CallbackServerContext& context) const;
  absl::Status CheckHeader(const std::string& authorization) const;
  // The position in the file of the token `authorization` presents, or nullopt where it presents
  // none that matches. Compares with every token, in constant time per token.
  std::optional<int> TokenIndex(const std::string& authorization) const;

 private:
  std::vector<std::string> tokens_;
};

// Constant-time equality: the time depends on the lengths, not on where the strings differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_AUTH_H_
