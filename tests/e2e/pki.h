// Test helper: a throw-away PKI made with openssl — a CA, a server certificate for
// localhost/127.0.0.1 and a client certificate it signed, and a second CA with a client
// certificate of its own (a stranger the first CA never signed).
#ifndef GPUBENCH_TESTS_E2E_PKI_H_
#define GPUBENCH_TESTS_E2E_PKI_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace gpubench {

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class Pki {
 public:
  Pki() {
    static int counter = 0;
    dir_ = ::testing::TempDir() + "/gpubench_pki_" + std::to_string(getpid()) + "_" +
           std::to_string(counter++);
    std::filesystem::create_directories(dir_);
    const std::string script = absl::StrCat(
        "set -e; cd ", dir_, ";",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=gpubench-test-ca "
        "-keyout ca.key -out ca.pem;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key -out server.csr;",
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext;",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.ext -out server.pem;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=gpubench-client -keyout client.key "
        "-out client.csr;",
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-out client.pem;",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca "
        "-keyout other_ca.key -out other_ca.pem;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=stranger -keyout stranger.key "
        "-out stranger.csr;",
        "openssl x509 -req -in stranger.csr -CA other_ca.pem -CAkey other_ca.key "
        "-CAcreateserial -days 2 -out stranger.pem");
    ok_ = std::system(("bash -c '" + script + "' >/dev/null 2>&1").c_str()) == 0;
  }
  bool ok() const { return ok_; }
  std::string path(const char* name) const { return dir_ + "/" + name; }
  // Writes `text` to a file of this PKI's folder and returns its path.
  std::string Write(const char* name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

 private:
  std::string dir_;
  bool ok_ = false;
};

}  // namespace gpubench

#endif  // GPUBENCH_TESTS_E2E_PKI_H_
