#include "client/rpc_status.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpubench::client {

std::string StatusCodeName(grpc::StatusCode code) {
  // gRPC's codes are google.rpc.Code, as absl::StatusCode's are.
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "UNKNOWN_CODE" : name;
}

bool IsTlsHandshakeFailure(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string& m = status.error_message();
  for (const char* marker : {"andshake", "SSL_ERROR", "CERTIFICATE", "certificate", "tlsv1 alert",
                             "TLSV1_ALERT"}) {
    if (m.find(marker) != std::string::npos) return true;
  }
  return false;
}

int ExitCodeFor(const grpc::Status& status) {
  if (IsTlsHandshakeFailure(status)) return kExitAuth;
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitUnreachable;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return kExitAuth;
    default:
      return kExitRunFailed;
  }
}

std::string RpcErrorMessage(const std::string& what, const grpc::Status& status) {
  std::string text = absl::StrCat("gpubench: ", what, " failed: ", StatusCodeName(status.error_code()),
                                  ": ", status.error_message(), "\n");
  if (IsTlsHandshakeFailure(status)) {
    absl::StrAppend(&text,
                    "gpubench: the TLS handshake failed: the server refused the client certificate "
                    "(--client_cert/--client_key) or the server's certificate is not trusted "
                    "(--ca_cert, --tls_server_name)\n");
  }
  return text;
}

}  // namespace gpubench::client
