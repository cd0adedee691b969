#include "server/service/client_limits.h"

#include <grpcpp/security/auth_context.h>

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gpubench {

ClientSlot& ClientSlot::operator=(ClientSlot&& other) noexcept {
  if (this != &other) {
    Release();
    limiter_ = other.limiter_;
    client_ = std::move(other.client_);
    other.limiter_ = nullptr;
  }
  return *this;
}

void ClientSlot::Release() {
  if (limiter_ != nullptr) limiter_->Release(client_);
  limiter_ = nullptr;
}

absl::StatusOr<ClientSlot> ClientLimiter::Admit(const std::string& client) {
  const absl::Time now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  Client& c = clients_[client];
  while (!c.recent.empty() && now - c.recent.front() >= absl::Minutes(1)) c.recent.pop_front();
  absl::Status refused;
  if (limits_.runs_in_flight > 0 && c.in_flight >= limits_.runs_in_flight) {
    refused = absl::ResourceExhaustedError(
        absl::StrCat("client ", client, " has ", c.in_flight,
                     " user-kernel runs queued or running, the most "
                     "this server allows per client (--user_kernel_runs_per_client=",
                     limits_.runs_in_flight, "); retry when one finishes"));
  } else if (limits_.submissions_per_minute > 0 &&
             static_cast<int>(c.recent.size()) >= limits_.submissions_per_minute) {
    const double wait = std::ceil(absl::ToDoubleSeconds(c.recent.front() + absl::Minutes(1) - now));
    refused = absl::ResourceExhaustedError(
        absl::StrCat("client ", client, " submitted ", c.recent.size(),
                     " user kernels in the last minute, the most this server allows per client "
                     "(--user_kernel_submissions_per_minute=",
                     limits_.submissions_per_minute, "); retry in ", wait, " s"));
  }
  if (!refused.ok()) {
    if (c.in_flight == 0 && c.recent.empty()) clients_.erase(client);
    return refused;
  }
  ++c.in_flight;
  c.recent.push_back(now);
  return ClientSlot(this, client);
}

void ClientLimiter::Release(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(client);
  if (it == clients_.end()) return;
  if (it->second.in_flight > 0) --it->second.in_flight;
  // Forget a client with nothing in flight once its last admission is a minute old.
  const absl::Time now = now_();
  std::deque<absl::Time>& recent = it->second.recent;
  while (!recent.empty() && now - recent.front() >= absl::Minutes(1)) recent.pop_front();
  if (it->second.in_flight == 0 && recent.empty()) clients_.erase(it);
}

int ClientLimiter::InFlight(const std::string& client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(client);
  return it == clients_.end() ? 0 : it->second.in_flight;
}

std::string PeerWithoutPort(const std::string& peer) {
  if (absl::StartsWith(peer, "ipv4:")) {
    const size_t colon = peer.rfind(':');
    return colon > 4 ? peer.substr(0, colon) : peer;
  }
  if (absl::StartsWith(peer, "ipv6:")) {
    // The address is bracketed, the brackets possibly percent-encoded ("%5B::1%5D:5000").
    for (const std::string close : {"]", "%5D"}) {
      const size_t at = peer.rfind(close);
      const size_t end = at == std::string::npos ? at : at + close.size();
      if (end != std::string::npos && end < peer.size() && peer[end] == ':') {
        return peer.substr(0, end);
      }
    }
  }
  return peer;
}

std::string ClientIdentity(const grpc::CallbackServerContext& context,
                           const TokenAuthenticator* auth) {
  if (auth != nullptr && auth->enabled()) {
    const auto& metadata = context.client_metadata();
    auto it = metadata.find("authorization");
    const std::string header =
        it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
    if (std::optional<int> index = auth->TokenIndex(header)) {
      return absl::StrCat("token #", *index + 1);
    }
  }
  if (std::shared_ptr<const grpc::AuthContext> a = context.auth_context();
      a != nullptr && a->IsPeerAuthenticated()) {
    std::vector<grpc::string_ref> identity = a->GetPeerIdentity();
    if (!identity.empty()) {
      return absl::StrCat("tls:", std::string(identity.front().data(), identity.front().size()));
    }
  }
  return PeerWithoutPort(context.peer());
}

}  // namespace gpubench
