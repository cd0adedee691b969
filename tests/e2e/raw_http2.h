// Test helpers that speak to the server below gRPC: a raw HTTP/2 client that opens streams and
// resets them at once (the "rapid reset" attack, CVE-2023-44487), and raw TCP connections that
// stay idle (for the /metrics exposer).
#ifndef GPUBENCH_TESTS_E2E_RAW_HTTP2_H_
#define GPUBENCH_TESTS_E2E_RAW_HTTP2_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

namespace gpubench {

// A TCP connection to 127.0.0.1:port, or -1.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, const std::string& bytes);

// GET `path` from the HTTP/1.0 server on loopback `port` with `extra_headers` (each ending in
// CRLF); the whole response, headers included, or "" when the connection fails. Waits at most
// `timeout_seconds` for each read.
inline std::string HttpGet(int port, const std::string& path,
                           const std::string& extra_headers = "", int timeout_seconds = 15) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  timeval timeout{timeout_seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  SendAll(fd, "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n" + extra_headers + "\r\n");
  std::string body;
  char buffer[65536];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) body.append(buffer, n);
  close(fd);
  return body;
}

inline bool SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Discards whatever the peer sent so far (without blocking); false when the peer closed.
inline bool DrainInput(int fd) {
  char buffer[65536];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// An HTTP/2 frame: 9-byte header and payload.
inline std::string Http2Frame(uint8_t type, uint8_t flags, uint32_t stream,
                              const std::string& payload) {
  std::string f;
  const uint32_t length = static_cast<uint32_t>(payload.size());
  f.push_back(static_cast<char>((length >> 16) & 0xff));
  f.push_back(static_cast<char>((length >> 8) & 0xff));
  f.push_back(static_cast<char>(length & 0xff));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  f.push_back(static_cast<char>((stream >> 24) & 0x7f));
  f.push_back(static_cast<char>((stream >> 16) & 0xff));
  f.push_back(static_cast<char>((stream >> 8) & 0xff));
  f.push_back(static_cast<char>(stream & 0xff));
  return f + payload;
}

// HPACK "literal header field without indexing, new name" (RFC 7541 6.2.2), short strings only.
inline std::string HpackLiteral(const std::string& name, const std::string& value) {
  std::string out;
  out.push_back(0x00);
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out.push_back(static_cast<char>(value.size()));
  out += value;
  return out;
}

// Reads and discards until the peer closes, for at most `timeout_ms`.
inline void DrainUntilClosed(int fd, int timeout_ms) {
  char buffer[65536];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, timeout_ms) > 0) {
    if (recv(fd, buffer, sizeof(buffer), 0) <= 0) return;
  }
}

// Opens `streams` gRPC calls to `path` on one connection, each reset (RST_STREAM CANCEL) right
// after its HEADERS, as fast as the socket takes them, then half-closes and waits (up to 10 s)
// for the server to close: every stream sent has reached the server (closing with unread input
// would send a TCP reset, and the server's kernel would drop what it had not read yet). Returns
// the number of streams sent before the server closed the connection (== streams when it never
// did).
inline int RapidReset(int port, int streams, const std::string& path) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return 0;
  std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  preface += Http2Frame(0x4, 0, 0, "");    // SETTINGS (empty)
  preface += Http2Frame(0x4, 0x1, 0, "");  // SETTINGS ACK of the server's (sent blindly)
  if (!SendAll(fd, preface)) {
    close(fd);
    return 0;
  }
  const std::string headers = HpackLiteral(":method", "POST") + HpackLiteral(":scheme", "http") +
                              HpackLiteral(":path", path) +
                              HpackLiteral(":authority", "localhost") +
                              HpackLiteral("content-type", "application/grpc") +
                              HpackLiteral("te", "trailers");
  const std::string cancel = std::string("\x00\x00\x00\x08", 4);  // error code CANCEL
  int sent = 0;
  std::string batch;
  for (int i = 0; i < streams; ++i) {
    const uint32_t id = 1 + 2 * static_cast<uint32_t>(i);
    batch += Http2Frame(0x1, 0x4, id, headers);  // HEADERS, END_HEADERS
    batch += Http2Frame(0x3, 0, id, cancel);     // RST_STREAM
    if (batch.size() > 32768 || i + 1 == streams) {
      if (!SendAll(fd, batch) || !DrainInput(fd)) break;
      batch.clear();
      sent = i + 1;
    }
  }
  shutdown(fd, SHUT_WR);
  DrainUntilClosed(fd, 10000);
  close(fd);
  return sent;
}

}  // namespace gpubench

#endif  // GPUBENCH_TESTS_E2E_RAW_HTTP2_H_
