// How the CLI maps a failed RPC to its exit code and message (client/rpc_status.h), as
// docs/cli.md's exit-code table promises.
#include "client/rpc_status.h"

#include <gtest/gtest.h>

namespace gpubench::client {
namespace {

TEST(RpcStatus, CodeNamesAreGrpcs) {
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::NOT_FOUND), "NOT_FOUND");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(StatusCodeName(static_cast<grpc::StatusCode>(42)), "UNKNOWN_CODE");
}

TEST(RpcStatus, ExitCodesFollowTheReadme) {
  EXPECT_EQ(ExitCodeFor(grpc::Status::OK), kExitOk);
  for (grpc::StatusCode code :
       {grpc::StatusCode::NOT_FOUND, grpc::StatusCode::INVALID_ARGUMENT,
        grpc::StatusCode::INTERNAL, grpc::StatusCode::RESOURCE_EXHAUSTED,
        grpc::StatusCode::FAILED_PRECONDITION, grpc::StatusCode::CANCELLED}) {
    EXPECT_EQ(ExitCodeFor(grpc::Status(code, "x")), kExitRunFailed) << StatusCodeName(code);
  }
  EXPECT_EQ(ExitCodeFor(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                     "failed to connect to all addresses")),
            kExitUnreachable);
  EXPECT_EQ(ExitCodeFor(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded")),
            kExitUnreachable);
  EXPECT_EQ(ExitCodeFor(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no token")), kExitAuth);
  EXPECT_EQ(ExitCodeFor(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no")), kExitAuth);
}

TEST(RpcStatus, TlsHandshakeFailuresAreAuthenticationNotReachability) {
  // What gRPC 1.51 reports when the server refuses the client's certificate, and when the
  // client does not trust the server's.
  for (const char* message :
       {"failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:5: Ssl handshake "
        "failed: SSL_ERROR_SSL: error:1000045c:SSL routines:OPENSSL_internal:TLSV1_ALERT_CERTIFICATE_REQUIRED",
        "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:5: Handshake "
        "failed",
        "error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED"}) {
    const grpc::Status status(grpc::StatusCode::UNAVAILABLE, message);
    EXPECT_TRUE(IsTlsHandshakeFailure(status)) << message;
    EXPECT_EQ(ExitCodeFor(status), kExitAuth) << message;
    EXPECT_NE(RpcErrorMessage("ListKernels", status).find("the TLS handshake failed"),
              std::string::npos);
  }
  // The same words under another code are not a handshake failure.
  EXPECT_FALSE(IsTlsHandshakeFailure(grpc::Status(grpc::StatusCode::INTERNAL, "certificate")));
  EXPECT_FALSE(IsTlsHandshakeFailure(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses")));
}

TEST(RpcStatus, MessagesNameTheCallAndTheCode) {
  EXPECT_EQ(RpcErrorMessage("RunBenchmark",
                            grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown kernel 'add_f33'")),
            "gpubench: RunBenchmark failed: NOT_FOUND: unknown kernel 'add_f33'\n");
}

}  // namespace
}  // namespace gpubench::client
