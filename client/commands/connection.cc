// The connection every command but help makes: channel (plaintext or TLS), bearer token,
// deadlines, RPC error reporting, Ctrl-C.
#include "client/commands/connection.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/commands/flags.h"
#include "client/rpc_status.h"
#include "client/tls_probe.h"
#include "common/files.h"
#include "common/tokens.h"

namespace gpubench::client {
namespace {

bool UsesTls() {
  return absl::GetFlag(FLAGS_tls) || !absl::GetFlag(FLAGS_ca_cert).empty() ||
         !absl::GetFlag(FLAGS_client_cert).empty();
}

// A TLS 1.3 server that refuses our client certificate closes the connection after the
// handshake, which gRPC reports as UNAVAILABLE "Socket closed": ask the server why
// (client/tls_probe.h), so the refusal reads, and exits, as one.
grpc::Status WithTlsRefusal(const grpc::Status& status) {
  if (!UsesTls() || status.error_code() != grpc::StatusCode::UNAVAILABLE ||
      IsTlsHandshakeFailure(status)) {
    return status;
  }
  std::string cert, key;
  if (const std::string f = absl::GetFlag(FLAGS_client_cert); !f.empty())
    ReadFileToString(f, &cert);
  if (const std::string f = absl::GetFlag(FLAGS_client_key); !f.empty()) ReadFileToString(f, &key);
  const std::string refusal = ProbeTlsRefusal(absl::GetFlag(FLAGS_target), cert, key);
  if (refusal.empty()) return status;
  return grpc::Status(
      status.error_code(),
      absl::StrCat(status.error_message(),
                   "; the server refused this client in the TLS handshake: ", refusal));
}

}  // namespace

int ReportRpcError(const std::string& what, const grpc::Status& status) {
  const grpc::Status reported = WithTlsRefusal(status);
  std::cerr << RpcErrorMessage(what, reported);
  return ExitCodeFor(reported);
}

Interrupts& Interrupts::Get() {
  static Interrupts* interrupts = new Interrupts();
  return *interrupts;
}

void Interrupts::Start() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  std::thread([this] { Watch(); }).detach();
}

void Interrupts::SetCall(grpc::ClientContext* context) {
  std::lock_guard<std::mutex> lock(mu_);
  call_ = context;
}

void Interrupts::Watch() {
  while (true) {
    int signal_number = 0;
    if (sigwait(&signals_, &signal_number) != 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (call_ == nullptr || interrupted_.exchange(true)) std::_Exit(kExitInterrupted);
    call_->TryCancel();
  }
}

std::string& Token() {
  static std::string token;
  return token;
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(
                            static_cast<int64_t>(1000 * absl::GetFlag(FLAGS_rpc_timeout_seconds))));
  if (!Token().empty()) context->AddMetadata("authorization", "Bearer " + Token());
}

int LoadToken() {
  std::string text, source;
  if (const std::string f = absl::GetFlag(FLAGS_token_file); !f.empty()) {
    if (!ReadFileToString(f, &text)) {
      std::cerr << "gpubench: cannot read --token_file " << f << "\n";
      return kExitUsage;
    }
    source = "--token_file " + f;
  } else if (const char* env = std::getenv("GPUBENCH_TOKEN"); env != nullptr) {
    text = env;
    source = "GPUBENCH_TOKEN";
  } else {
    return kExitOk;
  }
  const std::vector<std::string> tokens = ParseTokenLines(text);
  if (tokens.empty()) {
    std::cerr << "gpubench: " << source << " holds no token\n";
    return kExitAuth;
  }
  if (absl::Status usable = CheckTokenUsable(tokens[0]); !usable.ok()) {
    std::cerr << "gpubench: " << source << ": " << usable.message() << "\n";
    return kExitAuth;
  }
  Token() = tokens[0];
  return kExitOk;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target) {
  if (!UsesTls()) {
    return grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  }
  grpc::SslCredentialsOptions ssl;
  for (auto [flag, field] : {std::pair{absl::GetFlag(FLAGS_ca_cert), &ssl.pem_root_certs},
                             std::pair{absl::GetFlag(FLAGS_client_cert), &ssl.pem_cert_chain},
                             std::pair{absl::GetFlag(FLAGS_client_key), &ssl.pem_private_key}}) {
    if (!flag.empty() && !ReadFileToString(flag, field)) {
      std::cerr << "gpubench: cannot read " << flag << "\n";
      return nullptr;
    }
  }
  grpc::ChannelArguments args;
  if (const std::string name = absl::GetFlag(FLAGS_tls_server_name); !name.empty()) {
    args.SetSslTargetNameOverride(name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

}  // namespace gpubench::client
