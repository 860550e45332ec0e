#include "transport/gate.hpp"

#include "transport/handshake.hpp"
#include "transport/sealed_records.hpp"
#include "transport/tls_stream.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>

namespace deepcee::transport {

namespace detail {

/// What a gate or tunnel shares with its connections' threads, which may outlive a
/// connection's caller until the destructor has shut every socket down and waited.
struct shared {
  gate_settings settings;
  std::string peer_name; ///< a tunnel's peer
  endpoint peer;         ///< a tunnel's peer; a gate's inside port (host 127.0.0.1)
  int listen_fd = -1;
  std::atomic<bool> stopping{false};
  std::atomic<int> handshaking{0};
  std::atomic<uint64_t> refused{0};
  std::mutex mutex;
  std::condition_variable idle;
  int live = 0;        ///< connection threads running
  std::set<int> open;  ///< connection sockets, shut down when stopping
  std::string refusal; ///< a tunnel's last refusal by its peer

  void log(const std::string& line) {
    if (settings.log)
      settings.log(line);
  }
  int adopt(int fd) {
    std::lock_guard lock(mutex);
    if (stopping) {
      ::close(fd);
      return -1;
    }
    open.insert(fd);
    return fd;
  }
  void release(int fd) {
    if (fd < 0)
      return;
    {
      std::lock_guard lock(mutex);
      open.erase(fd);
    }
    ::close(fd);
  }
};

} // namespace detail

namespace {

using clock = std::chrono::steady_clock;
using shared_ptr = std::shared_ptr<detail::shared>;

/// Runs `work` on a thread of its own that the owner's destructor waits for.
template <class Work>
void launch(const shared_ptr& sh, Work work) {
  {
    std::lock_guard lock(sh->mutex);
    ++sh->live;
  }
  std::thread([sh, work = std::move(work)]() mutable {
    // OpenSSL writes to the socket without MSG_NOSIGNAL: a peer gone mid-write must give
    // this thread EPIPE, not end the process.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    try {
      work();
    } catch (const std::exception& e) {
      sh->log(std::string("connection ended: ") + e.what());
    }
    std::lock_guard lock(sh->mutex);
    --sh->live;
    sh->idle.notify_all();
  }).detach();
}

/// Stops the accept loop, shuts every connection down and waits for their threads.
void stop(const shared_ptr& sh, std::thread& acceptor) {
  {
    std::lock_guard lock(sh->mutex);
    sh->stopping = true;
    for (int fd : sh->open)
      ::shutdown(fd, SHUT_RDWR);
  }
  ::shutdown(sh->listen_fd, SHUT_RDWR); // wakes accept()
  if (acceptor.joinable())
    acceptor.join();
  ::close(sh->listen_fd);
  std::unique_lock lock(sh->mutex);
  sh->idle.wait(lock, [&] { return sh->live == 0; });
}

/// Reads exactly `n` bytes, or fails at end of stream, on an error, or past `deadline`.
bool read_exact(int fd, uint8_t* p, size_t n, std::optional<clock::time_point> deadline) {
  while (n > 0) {
    if (deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - clock::now()).count();
      pollfd pfd{fd, POLLIN, 0};
      if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0)
        return false;
    }
    const auto got = ::recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const auto put = ::send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

bool write_all(int fd, const bytes& b) {
  return write_all(fd, b.data(), b.size());
}

std::string peer_text(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    port = ntohs(v6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

/// A connected socket to `to`, or -1 when nothing answers within `timeout`.
int dial(const endpoint& to, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(to.host.c_str(), std::to_string(to.port).c_str(), &hints, &found) != 0)
    return -1;
  int fd = -1;
  for (auto* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc < 0 && errno == EINPROGRESS) {
      pollfd pfd{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      rc = ::poll(&pfd, 1, static_cast<int>(timeout.count())) == 1 &&
                   ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0
               ? 0
               : -1;
    }
    if (rc < 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) { // back to blocking: each connection has its own threads
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int fl = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  }
  return fd;
}

/// Carries `plain` (CAF's side) over `sealed` (the peer's side) until either ends.
void splice(int plain, int sealed, const key& send_key, const key& receive_key) {
  std::thread outgoing([plain, sealed, send_key] {
    record_sealer sealer(send_key);
    std::vector<uint8_t> buf(max_record_plain);
    while (true) {
      const auto got = ::recv(plain, buf.data(), buf.size(), 0);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0 || !write_all(sealed, sealer.seal({buf.data(), static_cast<size_t>(got)})))
        break;
    }
    ::shutdown(plain, SHUT_RDWR);
    ::shutdown(sealed, SHUT_RDWR);
  });
  record_opener opener(receive_key);
  std::array<uint8_t, record_header_bytes> header{};
  std::vector<uint8_t> body;
  while (read_exact(sealed, header.data(), header.size(), std::nullopt)) {
    const auto want = record_opener::body_bytes(header);
    if (!want)
      break;
    body.resize(*want);
    if (!read_exact(sealed, body.data(), body.size(), std::nullopt))
      break;
    const auto plain_bytes = opener.open(header, body);
    if (!plain_bytes || !write_all(plain, *plain_bytes))
      break;
  }
  ::shutdown(plain, SHUT_RDWR);
  ::shutdown(sealed, SHUT_RDWR);
  outgoing.join();
}

/// The server's side of the token handshake over `read`/`write`: why the peer is refused, or ""
/// with `hs` done.
template <class Read, class Write>
std::string serve_token(server_handshake& hs, Read read, Write write) {
  std::array<uint8_t, hello_bytes> buf{};
  while (hs.wanted() > 0) {
    const size_t n = hs.wanted();
    if (!read(buf.data(), n))
      return "it closed the connection or stalled before it authenticated";
    auto step = hs.feed({buf.data(), n});
    if (step.failed())
      return step.refusal;
    if (!step.send.empty() && !write(step.send))
      return "it closed the connection during the handshake";
  }
  return {};
}

/// The client's side of the token handshake.
template <class Read, class Write>
std::string dial_token(client_handshake& hs, Read read, Write write) {
  std::array<uint8_t, challenge_bytes> challenge{};
  if (!write(hs.hello()) || !read(challenge.data(), challenge.size()))
    return "it closed the connection or stalled in the handshake";
  auto answer = hs.answer(challenge);
  if (!answer.failed() && !write(answer.send))
    return "it closed the connection during the handshake";
  return answer.refusal;
}

void refuse(const shared_ptr& sh, const std::string& from, const std::string& why) {
  ++sh->refused;
  sh->log("refused a connection from " + from + ": " + why);
}

/// Closes our side of a refused TLS connection but reads (and drops) what the peer still
/// sends until it closes or `until`: closing at once would answer the peer's next bytes with
/// a reset, which may discard the alert that tells it why before it reads it.
void linger_close(int fd, clock::time_point until) {
  ::shutdown(fd, SHUT_WR);
  std::array<uint8_t, 4096> sink{};
  while (read_exact(fd, sink.data(), 1, until))
    if (::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT) == 0)
      break;
}

/// A gate's connection with TLS: the TLS handshake and the peer's certificate, then the
/// token inside TLS, all within the handshake's time limit; then CAF over TLS records.
void serve_incoming_tls(const shared_ptr& sh, int fd, const std::string& from) {
  const auto deadline = clock::now() + sh->settings.handshake_timeout;
  tls_stream tls(*sh->settings.tls, fd, true);
  auto refusal = tls.handshake(deadline, {}, sh->settings.peers);
  server_handshake hs(sh->settings.token, random_nonce());
  if (refusal.empty())
    refusal = serve_token(
        hs, [&](uint8_t* p, size_t n) { return tls.read_exact(p, n, deadline); },
        [&](const bytes& b) { return tls.write_all(b.data(), b.size(), deadline); });
  if (!refusal.empty()) {
    refuse(sh, from, refusal);
    linger_close(fd, std::min(deadline, clock::now() + std::chrono::milliseconds(1000)));
    --sh->handshaking;
    sh->release(fd);
    return;
  }
  --sh->handshaking;
  const int inside = sh->adopt(dial(sh->peer, std::chrono::milliseconds(2000)));
  if (inside >= 0)
    tls.splice(inside);
  sh->release(inside);
  sh->release(fd);
}

/// One connection accepted by a gate: the handshake within its time limit, then CAF.
void serve_incoming(const shared_ptr& sh, int fd, const std::string& from) {
  if (sh->settings.tls)
    return serve_incoming_tls(sh, fd, from);
  server_handshake hs(sh->settings.token, random_nonce());
  const auto deadline = clock::now() + sh->settings.handshake_timeout;
  const auto refusal = serve_token(
      hs, [&](uint8_t* p, size_t n) { return read_exact(fd, p, n, deadline); },
      [&](const bytes& b) { return write_all(fd, b); });
  --sh->handshaking;
  if (!refusal.empty()) {
    refuse(sh, from, refusal);
    sh->release(fd);
    return;
  }
  const int inside = sh->adopt(dial(sh->peer, std::chrono::milliseconds(2000)));
  if (inside >= 0) {
    const auto keys = hs.keys();
    splice(inside, fd, keys.server_to_client, keys.client_to_server);
  }
  sh->release(inside);
  sh->release(fd);
}

/// A tunnel's connection with TLS: the peer's certificate must name the node dialled. When the
/// peer refuses ours, TLS 1.3 tells it only after our side of the handshake is done: its alert
/// ends the token handshake, and names the reason.
std::string dial_tls(const shared_ptr& sh, int local, int remote) {
  const auto deadline = clock::now() + sh->settings.handshake_timeout;
  tls_stream tls(*sh->settings.tls, remote, false);
  if (auto refusal = tls.handshake(deadline, sh->peer_name, {}); !refusal.empty())
    return refusal;
  client_handshake hs(sh->settings.token, random_nonce());
  if (auto refusal = dial_token(
          hs, [&](uint8_t* p, size_t n) { return tls.read_exact(p, n, deadline); },
          [&](const bytes& b) { return tls.write_all(b.data(), b.size(), deadline); });
      !refusal.empty()) {
    const auto why = tls.failure("");
    return why.find("alert") == std::string::npos
               ? refusal
               : "it refused this node's certificate (" + why + ")";
  }
  tls.splice(local);
  return {};
}

/// One connection of CAF to a tunnel: dials the peer's gate and authenticates.
void serve_outgoing(const shared_ptr& sh, int local) {
  const int remote = sh->adopt(dial(sh->peer, std::chrono::milliseconds(2000)));
  if (remote < 0) {
    sh->release(local);
    return;
  }
  std::string refusal;
  if (sh->settings.tls) {
    refusal = dial_tls(sh, local, remote);
  } else {
    client_handshake hs(sh->settings.token, random_nonce());
    const auto deadline = clock::now() + sh->settings.handshake_timeout;
    refusal = dial_token(
        hs, [&](uint8_t* p, size_t n) { return read_exact(remote, p, n, deadline); },
        [&](const bytes& b) { return write_all(remote, b); });
    if (refusal.empty()) {
      const auto keys = hs.keys();
      splice(local, remote, keys.client_to_server, keys.server_to_client);
    }
  }
  if (!refusal.empty()) {
    const auto line =
        "cannot authenticate node " + sh->peer_name + " at " + sh->peer.text() + ": " + refusal;
    {
      std::lock_guard lock(sh->mutex);
      sh->refusal = line;
    }
    sh->log(line);
  }
  sh->release(remote);
  sh->release(local);
}

/// Accepts until stopped, handing each connection to `serve` on its own thread.
template <class Serve>
void accept_loop(const shared_ptr& sh, Serve serve) {
  while (!sh->stopping) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    const int fd = ::accept4(sh->listen_fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (sh->stopping)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50)); // out of descriptors
      continue;
    }
    if (sh->adopt(fd) < 0)
      break;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    serve(fd, peer_text(from));
  }
}

} // namespace

int listen_socket(const endpoint& at, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc =
          ::getaddrinfo(at.host.c_str(), std::to_string(at.port).c_str(), &hints, &found);
      rc != 0) {
    error = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  error = "no address";
  for (auto* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) < 0 || ::listen(fd, 64) < 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

gate::gate(gate_settings settings, const endpoint& outside, uint16_t inside)
    : shared_(std::make_shared<detail::shared>()) {
  shared_->settings = std::move(settings);
  shared_->peer = {"127.0.0.1", inside};
  std::string error;
  shared_->listen_fd = listen_socket(outside, error);
  if (shared_->listen_fd < 0)
    throw std::runtime_error("port " + std::to_string(outside.port) + " on " + outside.host +
                             " is in use or unusable (" + error + ")");
  acceptor_ = std::thread([sh = shared_] {
    accept_loop(sh, [&](int fd, std::string from) {
      if (sh->handshaking >= sh->settings.max_handshaking) {
        ++sh->refused;
        sh->log("refused a connection from " + from + ": " +
                std::to_string(sh->settings.max_handshaking) +
                " connections are in the handshake already");
        sh->release(fd);
        return;
      }
      ++sh->handshaking;
      launch(sh, [sh, fd, from] { serve_incoming(sh, fd, from); });
    });
  });
}

gate::~gate() {
  stop(shared_, acceptor_);
}

uint64_t gate::refused() const {
  return shared_->refused;
}

tunnel::tunnel(gate_settings settings, std::string peer_name, endpoint peer)
    : shared_(std::make_shared<detail::shared>()) {
  shared_->settings = std::move(settings);
  shared_->peer_name = std::move(peer_name);
  shared_->peer = std::move(peer);
  std::string error;
  shared_->listen_fd = listen_socket({"127.0.0.1", 0}, error);
  if (shared_->listen_fd < 0)
    throw std::runtime_error("no local port for the tunnel to node " + shared_->peer_name + " (" +
                             error + ")");
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  ::getsockname(shared_->listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  local_port_ = ntohs(bound.sin_port);
  acceptor_ = std::thread([sh = shared_] {
    accept_loop(
        sh, [&](int fd, const std::string&) { launch(sh, [sh, fd] { serve_outgoing(sh, fd); }); });
  });
}

tunnel::~tunnel() {
  stop(shared_, acceptor_);
}

std::string tunnel::refusal() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->refusal;
}

} // namespace deepcee::transport
