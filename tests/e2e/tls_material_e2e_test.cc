// Bad TLS material refuses to start with a message that says what is
// wrong (exit 2, docs/security.md), and a client that mutual TLS refuses gets
// the CLI's "not authenticated" exit 4, not "unreachable" 3 (docs/cli.md, exit codes), and
// says why: with TLS 1.3 gRPC sees only "Socket closed", so the CLI asks the server
// (client/tls_probe.h).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "e2e/pki.h"
#include "e2e/server_process.h"

namespace gpubench {
namespace {

// A server that must refuse to start: its exit code and log.
std::pair<int, std::string> StartupFailure(const std::vector<std::string>& flags) {
  ServerProcess server(flags, /*wait_for_port=*/false);
  const int code = server.SignalAndWait(0, std::chrono::seconds(15));
  return {code, server.Log()};
}

TEST(TlsMaterial, UnusablePemStopsStartupSayingWhich) {
  Pki pki;
  if (!pki.ok()) GTEST_SKIP() << "openssl could not create test certificates";
  const std::string cert = pki.path("server.pem");
  const std::string key = pki.path("server.key");
  const std::string garbage = pki.Write("garbage.pem", "this is not PEM\n");
  const std::string empty = pki.Write("empty.pem", "");
  // A key in PEM but encrypted: the server has no passphrase to give.
  ASSERT_EQ(std::system(("openssl rsa -aes256 -passout pass:secret -in " + key + " -out " +
                         pki.path("encrypted.key") + " >/dev/null 2>&1")
                            .c_str()),
            0);
  const struct {
    std::vector<std::string> flags;
    std::string message;
  } cases[] = {
      {{"--tls_cert=" + pki.path("missing.pem"), "--tls_key=" + key},
       "--tls_cert and --tls_key must both name readable PEM files"},
      {{"--tls_cert=" + cert, "--tls_key=" + empty},
       "--tls_cert and --tls_key must both name readable PEM files"},
      {{"--tls_cert=" + garbage, "--tls_key=" + key}, "--tls_cert holds no PEM certificate"},
      {{"--tls_cert=" + key, "--tls_key=" + key}, "--tls_cert holds no PEM certificate"},
      {{"--tls_cert=" + cert, "--tls_key=" + garbage},
       "--tls_key holds no unencrypted PEM private key"},
      {{"--tls_cert=" + cert, "--tls_key=" + pki.path("encrypted.key")},
       "--tls_key holds no unencrypted PEM private key"},
      // The client's key with the server's certificate.
      {{"--tls_cert=" + cert, "--tls_key=" + pki.path("client.key")},
       "--tls_key does not belong to the certificate in --tls_cert (mismatched key)"},
      {{"--tls_cert=" + cert, "--tls_key=" + key, "--tls_client_ca=" + garbage},
       "--tls_client_ca holds no PEM certificate"},
      {{"--tls_cert=" + cert, "--tls_key=" + key, "--tls_client_ca=" + pki.path("none.pem")},
       "cannot read --tls_client_ca"},
  };
  for (const auto& c : cases) {
    auto [code, log] = StartupFailure(c.flags);
    EXPECT_EQ(code, 2) << c.flags[1] << "\n" << log;
    EXPECT_NE(log.find(c.message), std::string::npos) << c.message << "\n" << log;
    EXPECT_EQ(log.find("could not listen"), std::string::npos)
        << "the generic message instead of the reason:\n" << log;
  }
}

TEST(TlsMaterial, ClientsRefusedByTlsExitFourWithTheReason) {
  Pki pki;
  if (!pki.ok()) GTEST_SKIP() << "openssl could not create test certificates";
  ServerProcess mtls({"--tls_cert=" + pki.path("server.pem"), "--tls_key=" + pki.path("server.key"),
                      "--tls_client_ca=" + pki.path("ca.pem")});
  const std::string target = "kernels --rpc_timeout_seconds=10 --target=" + mtls.target();
  const std::string trusting = " --ca_cert=" + pki.path("ca.pem");
  // No client certificate: mTLS refuses the handshake.
  CliResult no_cert = RunCli(target + trusting, /*with_stderr=*/true);
  EXPECT_EQ(no_cert.exit_code, 4) << no_cert.out;
  EXPECT_NE(no_cert.out.find("the TLS handshake failed"), std::string::npos) << no_cert.out;
  EXPECT_NE(no_cert.out.find("requires a client certificate (mutual TLS) and none was given"),
            std::string::npos)
      << no_cert.out;
  // A certificate the server's client CA did not sign.
  CliResult stranger = RunCli(target + trusting + " --client_cert=" + pki.path("stranger.pem") +
                                  " --client_key=" + pki.path("stranger.key"),
                              /*with_stderr=*/true);
  EXPECT_EQ(stranger.exit_code, 4) << stranger.out;
  EXPECT_NE(stranger.out.find("did not accept the one given"), std::string::npos) << stranger.out;
  // The client does not trust the server's certificate (another CA).
  CliResult untrusted = RunCli(target + " --ca_cert=" + pki.path("other_ca.pem") +
                                   " --client_cert=" + pki.path("client.pem") +
                                   " --client_key=" + pki.path("client.key"),
                               /*with_stderr=*/true);
  EXPECT_EQ(untrusted.exit_code, 4) << untrusted.out;
  // The right certificate works; a server that is not there is still "unreachable" (3).
  EXPECT_EQ(RunCli(target + trusting + " --client_cert=" + pki.path("client.pem") +
                   " --client_key=" + pki.path("client.key"))
                .exit_code,
            0);
  EXPECT_EQ(RunCli("kernels --rpc_timeout_seconds=5 --target=127.0.0.1:1" + trusting).exit_code,
            3);
}

}  // namespace
}  // namespace gpubench
