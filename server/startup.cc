#include "server/startup.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpubench {
namespace {

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no detail";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof(buffer));
  return buffer;
}

}  // namespace

absl::Status CheckAddressBindable(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("address '", host_port, "' is not host:port"));
  }
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  int port_number = 0;
  if (!absl::SimpleAtoi(port, &port_number) || port_number < 0 || port_number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", host_port, "': port '", port, "' is not a number in 0..65535"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // "[::]" -> "::"
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", host_port, "': cannot resolve host: ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  int last_errno = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as gRPC and civetweb do
    const int rc = bind(fd, a->ai_addr, a->ai_addrlen);
    const int bind_errno = errno;
    close(fd);
    if (rc == 0) return absl::OkStatus();
    last_errno = bind_errno;
  }
  if (last_errno == EADDRINUSE) {
    return absl::FailedPreconditionError(absl::StrCat(
        "address ", host_port, " is already in use (another gpubench_server or another program "
        "listens there; pick another port or stop it)"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("cannot bind ", host_port, ": ", std::strerror(last_errno)));
}

absl::Status CheckTlsMaterial(const std::string& cert_chain_pem, const std::string& private_key_pem,
                              const std::string& client_ca_pem) {
  ERR_clear_error();
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(cert_chain_pem.data(), static_cast<int>(cert_chain_pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), X509_free);
  if (!cert) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert holds no PEM certificate (", OpenSslError(), ")"));
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  if (!key) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key holds no unencrypted PEM private key (", OpenSslError(), ")"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "--tls_key does not belong to the certificate in --tls_cert (mismatched key)");
  }
  if (!client_ca_pem.empty()) {
    std::unique_ptr<BIO, decltype(&BIO_free)> ca_bio(
        BIO_new_mem_buf(client_ca_pem.data(), static_cast<int>(client_ca_pem.size())), BIO_free);
    std::unique_ptr<X509, decltype(&X509_free)> ca(
        PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr), X509_free);
    if (!ca) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls_client_ca holds no PEM certificate (", OpenSslError(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gpubench
