// Why a TLS server refused this client, asked directly. With TLS 1.3 a server that requires a
// client certificate (mTLS) checks it only after the handshake has completed on the client's
// side, so gRPC reports the refusal as a closed socket (UNAVAILABLE "Socket closed"), which reads
// like an unreachable server. The probe repeats the handshake with OpenSSL, waits for the
// server's first bytes, and says why they did not come: an alert, or a closed connection after
// the server asked for a client certificate.
#ifndef GPUBENCH_CLIENT_TLS_PROBE_H_
#define GPUBENCH_CLIENT_TLS_PROBE_H_

#include <string>

namespace gpubench::client {

// Connects to `target` ("host:port", "[::1]:port"), completes a TLS handshake offering
// `client_cert_pem` / `client_key_pem` when not empty (the server's certificate is not checked:
// gRPC reports an untrusted server as a handshake failure already), and reads once. Returns why
// the server refused the client: OpenSSL's reason for an alert that ended the handshake (e.g.
// "tlsv1 alert unknown ca"), or, when the server asked for a client certificate and then sent an
// alert or closed the connection, "it requires a client certificate (mutual TLS) and none was
// given ..." / "... did not accept the one given ...". "" when the server accepted the client,
// the address could not be reached, or nothing came within `timeout_seconds`.
std::string ProbeTlsRefusal(const std::string& target, const std::string& client_cert_pem,
                            const std::string& client_key_pem, double timeout_seconds = 5);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_TLS_PROBE_H_
