#include "tools/bounded_http.hpp"

#include "transport/gate.hpp"
#include "transport/log_budget.hpp"
#include "transport/tls_stream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace deepcee::tools {

bool http_routes::serve(httplib::Stream& s) {
  bool closed = false;
  return process_request(s, true, closed, nullptr);
}

void http_routes::set_open(bool open, int fd) {
  svr_sock_ = open ? fd : INVALID_SOCKET;
}

namespace {

using clock = std::chrono::steady_clock;

struct peer {
  std::string host;
  int port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

peer peer_of(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  peer p;
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    p.port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    p.port = ntohs(v6->sin6_port);
  }
  p.host = host;
  return p;
}

int millis_until(clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r = 0;
  while ((r = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
}

/// A connection's bytes: on the socket as they are, or through TLS (server side).
class wire {
public:
  wire(int fd, const transport::tls_context* tls) : fd_(fd) {
    if (tls)
      tls_.emplace(*tls, fd, true);
  }
  /// With TLS, the handshake by `deadline`: why it failed, or "".
  std::string open(clock::time_point deadline) {
    return tls_ ? tls_->handshake(deadline, "", {}) : "";
  }
  /// What has arrived, `n` bytes at most, by `deadline`; 0 at the end, an error or the time.
  size_t read_some(char* p, size_t n, clock::time_point deadline) {
    if (tls_)
      return tls_->read_some(reinterpret_cast<uint8_t*>(p), n, deadline);
    while (wait_for(fd_, POLLIN, millis_until(deadline))) {
      const auto got = ::recv(fd_, p, n, MSG_DONTWAIT);
      if (got > 0)
        return static_cast<size_t>(got);
      if (got == 0 || (errno != EINTR && errno != EAGAIN))
        return 0;
    }
    return 0;
  }
  bool write_all(const char* p, size_t n, clock::time_point deadline) {
    if (tls_)
      return tls_->write_all(reinterpret_cast<const uint8_t*>(p), n, deadline);
    while (n > 0) {
      if (!wait_for(fd_, POLLOUT, millis_until(deadline)))
        return false;
      const auto sent = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent < 0 && errno != EINTR && errno != EAGAIN)
        return false;
      if (sent > 0) {
        p += sent;
        n -= static_cast<size_t>(sent);
      }
    }
    return true;
  }
  /// Ends our side (with TLS's close_notify).
  void close() {
    if (tls_)
      tls_->close_notify();
    ::shutdown(fd_, SHUT_WR);
  }
  int fd() const { return fd_; }

private:
  int fd_;
  std::optional<transport::tls_stream> tls_;
};

/// The connection seen by cpp-httplib: the head bounded_http read, then nothing more (no
/// body is read); each write of the answer waits `write_timeout` at most for the client to
/// take it.
class head_then_wire final : public httplib::Stream {
public:
  head_then_wire(wire& w, std::string head, peer from, std::chrono::milliseconds write_timeout)
      : wire_(w), head_(std::move(head)), from_(std::move(from)), write_timeout_(write_timeout) {}

  bool is_readable() const override { return read_ < head_.size(); }
  bool is_writable() const override {
    return wait_for(wire_.fd(), POLLOUT, static_cast<int>(write_timeout_.count()));
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, head_.size() - read_);
    head_.copy(ptr, n, read_);
    read_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    return wire_.write_all(ptr, size, clock::now() + write_timeout_) ? static_cast<ssize_t>(size)
                                                                     : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = from_.host;
    port = from_.port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ::getsockname(wire_.fd(), reinterpret_cast<sockaddr*>(&a), &len);
    const auto p = peer_of(a);
    ip = p.host;
    port = p.port;
  }
  socket_t socket() const override { return wire_.fd(); }

private:
  wire& wire_;
  std::string head_;
  size_t read_ = 0;
  peer from_;
  std::chrono::milliseconds write_timeout_;
};

} // namespace

struct bounded_http::state {
  struct connection {
    int fd;
    std::string address;
    bool in_head = true; ///< still sending its head
    bool evicted = false;
  };

  http_routes& routes;
  const bounded_http_settings settings;
  int listen_fd = -1;
  std::mutex mutex;
  std::condition_variable idle;
  std::list<connection> open; ///< oldest first
  bool stopping = false;
  std::atomic<uint64_t> refused{0};
  transport::log_budget budget;

  state(http_routes& r, bounded_http_settings s)
      : routes(r), settings(std::move(s)), budget(settings.log_burst, std::chrono::seconds(1)) {}

  void log(const std::string& line) {
    if (!settings.log)
      return;
    std::optional<std::string> admitted;
    {
      std::lock_guard lock(mutex);
      admitted = budget.admit(line, clock::now());
    }
    if (admitted)
      settings.log(*admitted);
  }
  void refuse(const peer& from, const std::string& why) {
    ++refused;
    log("refused " + from.text() + ": " + why);
  }

  /// Counts a new connection from `address`; past a cap, shuts the oldest one still in its
  /// head down (of `address` when that address is at its cap). Returns the entry, or none
  /// when every connection counted is being answered.
  std::list<connection>::iterator admit(int fd, const std::string& address, std::string& why);
  void release(std::list<connection>::iterator c) {
    ::close(c->fd);
    std::lock_guard lock(mutex);
    open.erase(c);
    idle.notify_all();
  }
};

std::list<bounded_http::state::connection>::iterator
bounded_http::state::admit(int fd, const std::string& address, std::string& why) {
  std::lock_guard lock(mutex);
  int from = 0;
  int total = 0;
  for (const auto& c : open)
    if (!c.evicted) {
      ++total;
      from += c.address == address;
    }
  const bool address_full = from >= settings.max_per_address;
  if (stopping)
    return open.end();
  if (address_full || total >= settings.max_connections) {
    auto oldest = open.begin();
    while (oldest != open.end() &&
           (oldest->evicted || !oldest->in_head || (address_full && oldest->address != address)))
      ++oldest;
    if (oldest == open.end()) {
      why = address_full ? std::to_string(from) + " connections from " + address + " are open"
                         : std::to_string(total) + " connections are open";
      return open.end();
    }
    ::shutdown(oldest->fd, SHUT_RDWR);
    oldest->evicted = true;
  }
  return open.insert(open.end(), connection{fd, address});
}

namespace {

enum class head_ending { complete, refused, late, gone };

/// Reads a request's head by `deadline` within `limits`: the head (and what followed it)
/// in `got`, or why not.
head_ending read_head(wire& w, clock::time_point deadline, const http_head_limits& limits,
                      std::string& got, http_head_scan& scan) {
  char chunk[4096];
  while (true) {
    const size_t room = limits.bytes + 1 - got.size();
    const auto n = w.read_some(chunk, std::min(room, sizeof chunk), deadline);
    if (n == 0)
      return clock::now() >= deadline ? head_ending::late : head_ending::gone;
    got.append(chunk, n);
    scan = scan_http_head(got, limits);
    if (scan.verdict == http_head_verdict::complete)
      return head_ending::complete;
    if (scan.verdict != http_head_verdict::incomplete)
      return head_ending::refused;
  }
}

std::string refusal_text(http_head_verdict v, const http_head_limits& l) {
  switch (v) {
  case http_head_verdict::line_too_long:
    return "request line over " + std::to_string(l.request_line) + " bytes";
  case http_head_verdict::too_many_headers:
    return "more than " + std::to_string(l.header_lines) + " header lines";
  default:
    return "request head over " + std::to_string(l.bytes) + " bytes";
  }
}

/// Answers a refused head, then reads and drops what the client still sends (64 kB and a
/// quarter second at most): closing with unread bytes would reset the connection, which may
/// discard the answer before the client reads it.
void answer_refusal(wire& w, http_head_verdict v) {
  const auto line = "HTTP/1.1 " + std::string(http_head_refusal(v)) +
                    "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  const auto until = clock::now() + std::chrono::milliseconds(250);
  w.write_all(line.data(), line.size(), until);
  w.close();
  char sink[4096];
  for (size_t dropped = 0, n = 0; dropped < 65536 && (n = w.read_some(sink, sizeof sink, until));)
    dropped += n;
}

} // namespace

namespace {

/// The connection's TLS handshake (when it has TLS) and its head, by the head's deadline:
/// refused, answered, or served.
void serve_connection(const std::shared_ptr<bounded_http::state>& st,
                      std::list<bounded_http::state::connection>::iterator c, const peer& from) {
  const auto& s = st->settings;
  const auto deadline = clock::now() + s.head_timeout;
  wire w(c->fd, s.tls.get());
  std::string head;
  http_head_scan scan;
  const auto handshake_failure = w.open(deadline);
  const auto ending =
      handshake_failure.empty() ? read_head(w, deadline, s.head, head, scan) : head_ending::gone;
  bool evicted = false;
  {
    std::lock_guard lock(st->mutex);
    c->in_head = false;
    evicted = c->evicted;
  }
  if (evicted)
    st->refuse(from, "closed to make room: too many connections were open");
  else if (!handshake_failure.empty())
    st->refuse(from, handshake_failure);
  else if (ending == head_ending::refused) {
    answer_refusal(w, scan.verdict);
    st->refuse(from, refusal_text(scan.verdict, s.head));
  } else if (ending == head_ending::late)
    st->refuse(from,
               "no whole request head within " + std::to_string(s.head_timeout.count()) + " ms");
  else if (ending == head_ending::complete) {
    head.resize(scan.length);
    head_then_wire stream(w, std::move(head), from, s.write_timeout);
    st->routes.serve(stream);
    w.close();
  }
}

void accept_loop(const std::shared_ptr<bounded_http::state>& st) {
  while (true) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    const int fd = ::accept4(st->listen_fd, reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno == EMFILE || errno == ENFILE) { // out of descriptors: a moment for some to close
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      return; // the listening socket was shut down
    }
    const auto from = peer_of(a);
    std::string why;
    const auto c = st->admit(fd, from.host, why);
    if (c == st->open.end()) {
      ::close(fd);
      if (!why.empty())
        st->refuse(from, why);
      continue;
    }
    std::thread([st, c, from] {
      // OpenSSL writes without MSG_NOSIGNAL: a client gone mid-write must give this
      // thread EPIPE, not end the process.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      try {
        serve_connection(st, c, from);
      } catch (const std::exception& e) {
        st->log("connection from " + from.text() + " ended: " + e.what());
      }
      st->release(c);
    }).detach();
  }
}

} // namespace

bounded_http::bounded_http(http_routes& routes, bounded_http_settings settings)
    : state_(std::make_shared<state>(routes, std::move(settings))) {}

bounded_http::~bounded_http() {
  stop();
}

uint16_t bounded_http::start(const std::string& host, uint16_t port) {
  std::string error;
  state_->listen_fd = transport::listen_socket({host, port}, error);
  if (state_->listen_fd < 0)
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + " (" +
                             error + ")");
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ::getsockname(state_->listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
  state_->routes.set_open(true, state_->listen_fd);
  acceptor_ = std::thread([st = state_] { accept_loop(st); });
  return static_cast<uint16_t>(peer_of(a).port);
}

void bounded_http::stop() {
  if (!acceptor_.joinable())
    return;
  state_->routes.set_open(false, -1);
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    for (const auto& c : state_->open)
      ::shutdown(c.fd, SHUT_RDWR);
  }
  ::shutdown(state_->listen_fd, SHUT_RDWR); // wakes accept()
  acceptor_.join();
  ::close(state_->listen_fd);
  std::unique_lock lock(state_->mutex);
  state_->idle.wait(lock, [&] { return state_->open.empty(); });
}

uint64_t bounded_http::refused() const {
  return state_->refused.load();
}

void bounded_http::refuse_request(const std::string& peer, const std::string& why) {
  ++state_->refused;
  state_->log("refused " + peer + ": " + why);
}

} // namespace deepcee::tools
