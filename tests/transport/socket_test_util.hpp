#pragma once

#include "transport/gate.hpp"

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

/// Sockets for the gate's tests: an echo server in CAF's place, a client, a free port and
/// the gate's log lines.
namespace deepcee::test {

using deepcee::transport::listen_socket;

/// A server on 127.0.0.1 that echoes what one connection sends (CAF's place).
struct echo_server {
  int fd = -1;
  uint16_t port = 0;
  std::thread loop;
  std::atomic<int> accepted{0};
  echo_server() {
    std::string error;
    fd = listen_socket({"127.0.0.1", 0}, error);
    BOOST_REQUIRE(fd >= 0);
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    loop = std::thread([this] {
      const int c = ::accept(fd, nullptr, nullptr);
      if (c < 0)
        return;
      ++accepted;
      char buf[4096];
      for (ssize_t n; (n = ::recv(c, buf, sizeof buf, 0)) > 0;)
        ::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~echo_server() {
    ::shutdown(fd, SHUT_RDWR);
    loop.join();
    ::close(fd);
  }
};

inline int connect_local(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

/// What comes back within a second (at most `n` bytes).
inline std::string receive(int fd, size_t n) {
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  while (out.size() < n) {
    const auto got = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (got <= 0)
      break;
    out.append(buf, static_cast<size_t>(got));
  }
  return out;
}

inline uint16_t free_port() {
  std::string error;
  const int fd = listen_socket({"127.0.0.1", 0}, error);
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct log_lines {
  std::mutex m;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& l) {
      std::lock_guard lock(m);
      lines.push_back(l);
    };
  }
  std::string all() {
    std::lock_guard lock(m);
    std::string s;
    for (auto& l : lines)
      s += l + "\n";
    return s;
  }
};

} // namespace deepcee::test
