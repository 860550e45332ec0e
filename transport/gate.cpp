#include "transport/gate.hpp"

#include "transport/local_guard.hpp"
#include "transport/log_budget.hpp"
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
#include <list>
#include <map>
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
  std::shared_ptr<const tls_context> tls; ///< settings.tls, or the token's PSK context
  key32 proof_key{};                      ///< with certificates: the token's proof key
  std::string peer_name;                  ///< a tunnel's peer
  endpoint peer; ///< a tunnel's peer; a gate's inside port (host 127.0.0.1)
  int listen_fd = -1;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> admitted{0};
  std::mutex mutex;
  std::condition_variable idle;
  int live = 0;        ///< connection threads running
  std::set<int> open;  ///< connection sockets, shut down when stopping
  std::string refusal; ///< a tunnel's last refusal by its peer
  /// A gate's connections in the handshake, oldest first, with their addresses.
  std::list<std::pair<int, std::string>> waiting;
  std::map<std::string, int> waiting_from;
  std::set<int> evicted; ///< closed to make room, not yet done
  std::unique_ptr<log_budget> budget;
  std::unique_ptr<listener_guard> inside; ///< a gate's: CAF's port, reached only through it

  explicit shared(gate_settings s) : settings(std::move(s)) {
    tls = settings.tls ? settings.tls : std::make_shared<const tls_context>(settings.token);
    if (!tls->psk())
      proof_key = derive_token_keys(settings.token).proof;
    budget = std::make_unique<log_budget>(settings.log_burst, settings.log_interval);
  }
  void log(const std::string& line) {
    if (!settings.log)
      return;
    std::optional<std::string> admitted_line;
    {
      std::lock_guard lock(mutex);
      admitted_line = budget->admit(line, std::chrono::steady_clock::now());
    }
    if (admitted_line)
      settings.log(*admitted_line);
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
  /// Counts `fd` among the open sockets; false (and `fd` left open) when stopping.
  bool track(int fd) {
    std::lock_guard lock(mutex);
    if (stopping)
      return false;
    open.insert(fd);
    return true;
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
  /// Counts `fd` as waiting in the handshake; past a cap, shuts the oldest waiting one (of
  /// `address` when that address is at its cap) down. Returns what it closed, or "".
  std::string wait_in_handshake(int fd, const std::string& address) {
    std::lock_guard lock(mutex);
    std::string closed;
    const bool address_full = waiting_from[address] >= settings.max_handshaking_per_address;
    if (address_full || static_cast<int>(waiting.size()) >= settings.max_handshaking) {
      for (auto it = waiting.begin(); it != waiting.end(); ++it)
        if (!evicted.count(it->first) && (!address_full || it->second == address)) {
          ::shutdown(it->first, SHUT_RDWR);
          evicted.insert(it->first);
          closed = it->second;
          break;
        }
    }
    waiting.emplace_back(fd, address);
    ++waiting_from[address];
    return closed;
  }
  /// `fd` is out of the handshake; whether it had been closed to make room.
  bool done_waiting(int fd) {
    std::lock_guard lock(mutex);
    for (auto it = waiting.begin(); it != waiting.end(); ++it)
      if (it->first == fd) {
        if (--waiting_from[it->second] == 0)
          waiting_from.erase(it->second);
        waiting.erase(it);
        break;
      }
    return evicted.erase(fd) > 0;
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
bool read_exact(int fd, uint8_t* p, size_t n, clock::time_point deadline) {
  while (n > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    pollfd pfd{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0)
      return false;
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

/// The peer's address without and with its port.
std::pair<std::string, std::string> peer_text(const sockaddr_storage& a) {
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
  return {host, std::string(host) + ":" + std::to_string(port)};
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

std::string seconds(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(t.count()) / 1e3);
  return buf;
}

/// Passes how a TLS stream ended on to CAF's side: a stream cut or forged without the
/// peer's close_notify resets CAF's connection (an error to CAF), where an authenticated
/// end closes it.
void end_plain(int plain, tls_ending how) {
  if (plain < 0 || how == tls_ending::closed)
    return;
  const linger reset{1, 0};
  ::setsockopt(plain, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
}

/// Whether the peer sends anything by `deadline` (a stranger who only holds the connection
/// open does not, and is closed early).
bool first_bytes(int fd, clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
  pollfd pfd{fd, POLLIN, 0};
  return left > 0 && ::poll(&pfd, 1, static_cast<int>(left)) > 0 && (pfd.revents & POLLIN);
}

/// Authenticates a gate's connection within the handshake's time limit: its first bytes, the
/// TLS handshake (the PSK, or the certificate and then the token's proof). Why the peer is
/// refused, or "".
std::string authenticate_incoming(const shared_ptr& sh, tls_stream& tls, int fd) {
  const auto& s = sh->settings;
  const auto start = clock::now();
  const auto deadline = start + s.handshake_timeout;
  if (!first_bytes(fd, std::min(deadline, start + s.first_bytes_timeout)))
    return "it sent nothing within " +
           seconds(std::min(s.handshake_timeout, s.first_bytes_timeout));
  auto refusal = tls.handshake(deadline, {}, s.peers);
  if (refusal.empty() && !sh->tls->psk())
    refusal = tls.prove_token(sh->proof_key, true, deadline);
  return refusal;
}

/// An admitted connection carried to CAF's port through the guard, whose filter stops
/// letting its source port through before its socket closes.
void carry_inside(const shared_ptr& sh, tls_stream& tls) {
  const auto inside = sh->inside->dial(std::chrono::milliseconds(2000));
  if (inside.fd < 0)
    return;
  const bool tracked = sh->track(inside.fd);
  if (tracked)
    end_plain(inside.fd, tls.splice(inside.fd, sh->settings.key_update_bytes));
  sh->inside->forget(inside.port);
  if (tracked)
    sh->release(inside.fd);
  else
    ::close(inside.fd);
}

/// One connection accepted by a gate: authenticated within the time limit, then CAF over TLS.
void serve_incoming(const shared_ptr& sh, int fd, const std::string& from) {
  const auto start = clock::now();
  tls_stream tls(*sh->tls, fd, true);
  auto refusal = authenticate_incoming(sh, tls, fd);
  if (sh->done_waiting(fd)) // shut down to make room, whatever it had done by then
    refusal = "closed to make room: too many connections from its address or in all were in "
              "the handshake";
  if (!refusal.empty()) {
    refuse(sh, from, refusal);
    linger_close(fd, std::min(start + sh->settings.handshake_timeout,
                              clock::now() + std::chrono::milliseconds(1000)));
    sh->release(fd);
    return;
  }
  ++sh->admitted;
  carry_inside(sh, tls);
  sh->release(fd);
}

/// A tunnel's connection: the peer's PSK, or its certificate naming the node dialled and then
/// the token's proof. Why the peer refused us or we it, or "" (then the connection was carried
/// until its end). A peer that closes before its answer refused nothing: "" too.
std::string dial_tls(const shared_ptr& sh, int local, int remote) {
  const auto deadline = clock::now() + sh->settings.handshake_timeout;
  tls_stream tls(*sh->tls, remote, false);
  auto refusal = tls.handshake(deadline, sh->peer_name, {});
  if (refusal.empty() && !sh->tls->psk())
    refusal = tls.prove_token(sh->proof_key, false, deadline);
  if (refusal.empty()) {
    end_plain(local, tls.splice(local, sh->settings.key_update_bytes));
    return {};
  }
  // A gate that closed before it answered (busy, or closing strangers): CAF's next try
  // comes through a new connection, within its own deadline.
  return tls.ending() == tls_ending::cut ? "" : refusal;
}

/// One connection of CAF to a tunnel: dials the peer's gate and authenticates.
void serve_outgoing(const shared_ptr& sh, int local) {
  const int remote = sh->adopt(dial(sh->peer, std::chrono::milliseconds(2000)));
  if (remote < 0) {
    sh->release(local);
    return;
  }
  if (const auto refusal = dial_tls(sh, local, remote); !refusal.empty()) {
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
    const auto [host, text] = peer_text(from);
    serve(fd, host, text);
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
    : shared_(std::make_shared<detail::shared>(std::move(settings))) {
  shared_->peer = {"127.0.0.1", inside};
  shared_->inside = std::make_unique<listener_guard>(inside);
  std::string error;
  shared_->listen_fd = listen_socket(outside, error);
  if (shared_->listen_fd < 0)
    throw std::runtime_error("port " + std::to_string(outside.port) + " on " + outside.host +
                             " is in use or unusable (" + error + ")");
  acceptor_ = std::thread([sh = shared_] {
    accept_loop(sh, [&](int fd, const std::string& host, const std::string& from) {
      if (const auto closed = sh->wait_in_handshake(fd, host); !closed.empty())
        sh->log("closing the oldest connection from " + closed +
                " still in the handshake: too many are");
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

uint64_t gate::admitted() const {
  return shared_->admitted;
}

tunnel::tunnel(gate_settings settings, std::string peer_name, endpoint peer)
    : shared_(std::make_shared<detail::shared>(std::move(settings))) {
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
    accept_loop(sh, [&](int fd, const std::string&, const std::string& from) {
      // Only this process's CAF: a local stranger would ride on the node's authentication.
      if (!from_this_process(fd)) {
        refuse(sh, from, "it is not this node's process (the tunnel's port is local only)");
        sh->release(fd);
        return;
      }
      launch(sh, [sh, fd] { serve_outgoing(sh, fd); });
    });
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
