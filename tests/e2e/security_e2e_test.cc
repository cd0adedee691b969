// TLS (server-only and mutual) and bearer tokens through real channels to the real server.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "grpc/health/v1/health.grpc.pb.h"
#include "e2e/pki.h"
#include "e2e/server_process.h"
#include "gpubench/v1/benchmark.grpc.pb.h"

namespace gpubench {
namespace {

grpc::Status ListKernels(std::shared_ptr<grpc::Channel> channel, const std::string& token = "") {
  auto stub = v1::Benchmark::NewStub(channel);
  grpc::ClientContext c;
  c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (!token.empty()) c.AddMetadata("authorization", token);
  v1::ListKernelsResponse r;
  return stub->ListKernels(&c, {}, &r);
}

TEST(Security, BearerTokens) {
  const std::string tokens = ::testing::TempDir() + "/gpubench_tokens_" + std::to_string(getpid());
  std::ofstream(tokens) << "# ops team\nsecret-one\n\nsecret-two\n";
  ServerProcess server({"--token_file=" + tokens});
  auto channel = server.Channel();
  EXPECT_EQ(ListKernels(channel).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListKernels(channel, "Bearer nope").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListKernels(channel, "Basic secret-one").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListKernels(channel, "Bearer secret-one-and-more").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(ListKernels(channel, "Bearer secret-one").ok());
  EXPECT_TRUE(ListKernels(channel, "Bearer secret-two").ok());

  // Runs and sweeps are guarded too.
  {
    auto stub = v1::Benchmark::NewStub(channel);
    grpc::ClientContext c;
    v1::RunSweepRequest req;
    req.add_kernels("add_f32");
    req.add_sizes(10);
    auto reader = stub->RunSweep(&c, req);
    v1::RunSweepResponse e;
    while (reader->Read(&e)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Health stays open for probes.
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext hc;
  grpc::health::v1::HealthCheckResponse hr;
  ASSERT_TRUE(health->Check(&hc, {}, &hr).ok());
  EXPECT_EQ(hr.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  // The CLI: token from a file or the environment; exit code 4 without one.
  const std::string token_file = tokens + ".client";
  std::ofstream(token_file) << "secret-two\n";
  const std::string t = "--target=" + server.target();
  EXPECT_EQ(RunCli("kernels " + t + " --token_file=" + token_file).exit_code, 0);
  EXPECT_EQ(RunCli("kernels " + t).exit_code, 4);
  EXPECT_EQ(RunCli("run add_f32 --size=1Ki " + t + " --token_file=" + token_file).exit_code, 0);
}

TEST(Security, TlsAndMutualTls) {
  Pki pki;
  if (!pki.ok()) GTEST_SKIP() << "openssl could not create test certificates";
  ServerProcess tls({"--tls_cert=" + pki.path("server.pem"), "--tls_key=" + pki.path("server.key")});
  // A plaintext client cannot talk to a TLS server.
  EXPECT_EQ(ListKernels(tls.Channel()).error_code(), grpc::StatusCode::UNAVAILABLE);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Slurp(pki.path("ca.pem"));
  EXPECT_TRUE(ListKernels(grpc::CreateChannel(tls.target(), grpc::SslCredentials(ssl))).ok());
  // A client that does not trust the CA is refused.
  grpc::SslCredentialsOptions wrong_ca;
  wrong_ca.pem_root_certs = Slurp(pki.path("client.pem"));
  EXPECT_FALSE(ListKernels(grpc::CreateChannel(tls.target(), grpc::SslCredentials(wrong_ca))).ok());
  EXPECT_EQ(RunCli("kernels --target=" + tls.target() + " --ca_cert=" + pki.path("ca.pem")).exit_code, 0);

  ServerProcess mtls({"--tls_cert=" + pki.path("server.pem"), "--tls_key=" + pki.path("server.key"),
                      "--tls_client_ca=" + pki.path("ca.pem")});
  EXPECT_FALSE(ListKernels(grpc::CreateChannel(mtls.target(), grpc::SslCredentials(ssl))).ok())
      << "mTLS server accepted a client without a certificate";
  grpc::SslCredentialsOptions with_cert = ssl;
  with_cert.pem_cert_chain = Slurp(pki.path("client.pem"));
  with_cert.pem_private_key = Slurp(pki.path("client.key"));
  EXPECT_TRUE(ListKernels(grpc::CreateChannel(mtls.target(), grpc::SslCredentials(with_cert))).ok());
  EXPECT_EQ(RunCli("kernels --target=" + mtls.target() + " --ca_cert=" + pki.path("ca.pem") +
                   " --client_cert=" + pki.path("client.pem") + " --client_key=" +
                   pki.path("client.key"))
                .exit_code,
            0);
}

TEST(Security, BadSecurityFlagsStopStartup) {
  ServerProcess bad({"--tls_cert=/nonexistent.pem", "--tls_key=/nonexistent.key"},
                    /*wait_for_port=*/false);
  EXPECT_EQ(bad.SignalAndWait(0, std::chrono::seconds(10)), 2) << bad.Log();
  ServerProcess no_tokens({"--token_file=/nonexistent"}, /*wait_for_port=*/false);
  EXPECT_EQ(no_tokens.SignalAndWait(0, std::chrono::seconds(10)), 2) << no_tokens.Log();
}

}  // namespace
}  // namespace gpubench
