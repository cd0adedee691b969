#include "client/tls_probe.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>

namespace gpubench::client {
namespace {

// A connected TCP socket to host:port with send/receive timeouts, or -1.
int Connect(const std::string& target, double timeout_seconds) {
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos) return -1;
  std::string host = target.substr(0, colon);
  const std::string port = target.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  timeval timeout{};
  timeout.tv_sec = static_cast<time_t>(timeout_seconds);
  timeout.tv_usec = static_cast<suseconds_t>((timeout_seconds - timeout.tv_sec) * 1e6);
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
    close(fd);
  }
  return -1;
}

// OpenSSL's reason for the error at the head of its queue ("" when none); clears the queue.
std::string SslReason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "";
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "TLS error";
}

bool UseClientCertificate(SSL_CTX* ctx, const std::string& cert_pem, const std::string& key_pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), X509_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  return cert && key && SSL_CTX_use_certificate(ctx, cert.get()) == 1 &&
         SSL_CTX_use_PrivateKey(ctx, key.get()) == 1;
}

// Counts the server's requests for a client certificate (SSL_set_cert_cb runs on each).
int NoteCertificateRequest(SSL*, void* requested) {
  *static_cast<bool*>(requested) = true;
  return 1;
}

}  // namespace

std::string ProbeTlsRefusal(const std::string& target, const std::string& client_cert_pem,
                            const std::string& client_key_pem, double timeout_seconds) {
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                         SSL_CTX_free);
  if (!ctx) return "";
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (!client_cert_pem.empty() &&
      !UseClientCertificate(ctx.get(), client_cert_pem, client_key_pem)) {
    ERR_clear_error();
    return "";  // the channel would have refused these files first
  }
  const int fd = Connect(target, timeout_seconds);
  if (fd < 0) return "";
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  static const unsigned char kAlpnH2[] = {2, 'h', '2'};  // gRPC speaks HTTP/2
  SSL_set_alpn_protos(ssl.get(), kAlpnH2, sizeof(kAlpnH2));
  SSL_set_fd(ssl.get(), fd);
  bool certificate_requested = false;
  SSL_set_cert_cb(ssl.get(), NoteCertificateRequest, &certificate_requested);
  std::string reason;
  if (SSL_connect(ssl.get()) != 1) {
    reason = SslReason();  // TLS 1.2: the server's alert ends the handshake
  } else {
    // TLS 1.3: the server judges our certificate after the handshake; a refusal is an alert or
    // a closed connection instead of its first HTTP/2 frame.
    char byte = 0;
    if (SSL_read(ssl.get(), &byte, 1) <= 0 && certificate_requested) {
      reason = SslReason();
      const std::string why = client_cert_pem.empty()
                                  ? "none was given (--client_cert, --client_key)"
                                  : "it did not accept the one given (signed by another CA?)";
      reason = "it requires a client certificate (mutual TLS) and " + why +
               (reason.empty() || reason == "unexpected eof while reading" ? ""
                                                                            : " (" + reason + ")");
    }
  }
  ERR_clear_error();
  close(fd);
  return reason;
}

}  // namespace gpubench::client
