// Start-up diagnostics of gpubench_server: say precisely why an address or TLS material cannot be
// used, instead of gRPC's or civetweb's generic failure.
#ifndef GPUBENCH_SERVER_STARTUP_H_
#define GPUBENCH_SERVER_STARTUP_H_

#include <string>

#include "absl/status/status.h"

namespace gpubench {

// Binds a TCP socket to `host_port` ("127.0.0.1:50051", "[::]:50051", "localhost:9464") the
// way a server would (no SO_REUSEPORT) and releases it. OK when that works; otherwise an error
// naming the address and the reason (FAILED_PRECONDITION "address ... is already in use", ...).
absl::Status CheckAddressBindable(const std::string& host_port);

// Parses the PEM certificate chain and private key and checks that the key belongs to the
// certificate; `client_ca_pem`, when not empty, must hold at least one certificate.
// INVALID_ARGUMENT naming what is wrong.
absl::Status CheckTlsMaterial(const std::string& cert_chain_pem, const std::string& private_key_pem,
                              const std::string& client_ca_pem);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_STARTUP_H_
