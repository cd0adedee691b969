#include "server/service/auth.h"


#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/tokens.h"

namespace gpubench {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  // Compare over the longer length so a prefix does not finish early.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::FromFile(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> tokens = ReadTokenFile(path);
  if (!tokens.ok()) return tokens.status();
  return TokenAuthenticator(*std::move(tokens));
}

absl::Status TokenAuthenticator::CheckHeader(const std::string& authorization) const {
  if (!enabled()) return absl::OkStatus();
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "missing 'authorization: Bearer <token>' metadata (gpubench --token_file, grpcurl -H)");
  }
  constexpr absl::string_view kPrefix = "Bearer ";
  if (!absl::StartsWithIgnoreCase(authorization, kPrefix)) {
    return absl::UnauthenticatedError("the authorization metadata must be 'Bearer <token>'");
  }
  const std::string presented = authorization.substr(kPrefix.size());
  bool match = false;
  for (const std::string& token : tokens_) match |= ConstantTimeEquals(presented, token);
  if (!match) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

std::optional<int> TokenAuthenticator::TokenIndex(const std::string& authorization) const {
  constexpr absl::string_view kPrefix = "Bearer ";
  if (!absl::StartsWithIgnoreCase(authorization, kPrefix)) return std::nullopt;
  const std::string presented = authorization.substr(kPrefix.size());
  std::optional<int> index;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (ConstantTimeEquals(presented, tokens_[i]) && !index.has_value()) {
      index = static_cast<int>(i);
    }
  }
  return index;
}

absl::Status TokenAuthenticator::Check(const grpc::CallbackServerContext& context) const {
  if (!enabled()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  return CheckHeader(it == metadata.end() ? std::string()
                                          : std::string(it->second.data(), it->second.size()));
}

}  // namespace gpubench
