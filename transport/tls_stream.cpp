#include "transport/tls_stream.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <stdexcept>
#include <vector>

namespace deepcee::transport {

namespace {

void set_non_blocking(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/// A TLS record's worth: what one SSL_read can give, and what one SSL_write takes.
constexpr size_t chunk_bytes = 16 * 1024;

} // namespace

tls_stream::tls_stream(const tls_context& ctx, int fd, bool server) : fd_(fd) {
  ERR_clear_error();
  ssl_ = SSL_new(ctx.native());
  if (!ssl_)
    throw std::runtime_error("OpenSSL cannot make a TLS connection: " + tls_error_text("?"));
  set_non_blocking(fd);
  SSL_set_fd(ssl_, fd);
  if (server)
    SSL_set_accept_state(ssl_);
  else
    SSL_set_connect_state(ssl_);
}

tls_stream::~tls_stream() {
  SSL_free(ssl_);
}

tls_stream::outcome tls_stream::classify(int r, short& events) {
  if (r > 0)
    return outcome::done;
  switch (SSL_get_error(ssl_, r)) {
  case SSL_ERROR_WANT_READ:
    events = POLLIN;
    return outcome::again;
  case SSL_ERROR_WANT_WRITE:
    events = POLLOUT;
    return outcome::again;
  case SSL_ERROR_ZERO_RETURN:
    failure_ = "it closed the connection";
    return outcome::ended;
  case SSL_ERROR_SYSCALL:
    failure_ = ERR_peek_error() ? tls_error_text("?") : "it closed the connection";
    return outcome::ended;
  default:
    failure_ = tls_error_text("a TLS error");
    return outcome::ended;
  }
}

bool tls_stream::wait(short events, clock::time_point deadline) const {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
  pollfd pfd{fd_, events, 0};
  return left > 0 && ::poll(&pfd, 1, static_cast<int>(left)) > 0;
}

std::string tls_stream::handshake(clock::time_point deadline, const std::string& expected,
                                  const std::vector<std::string>& allowed) {
  ERR_clear_error();
  while (true) {
    short events = 0;
    switch (classify(SSL_do_handshake(ssl_), events)) {
    case outcome::done:
      return check_peer(ssl_, expected, allowed);
    case outcome::again:
      if (!wait(events, deadline))
        return "it stalled in the TLS handshake";
      break;
    case outcome::ended:
      if (const long v = SSL_get_verify_result(ssl_); v != X509_V_OK)
        return std::string("its certificate does not chain to the job's CA (") +
               X509_verify_cert_error_string(v) + ")";
      return "the TLS handshake failed (" + failure_ + ")";
    }
  }
}

template <class Io>
bool tls_stream::move_all(Io io, size_t n, clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    short events = 0;
    const int r = io(done, n - done);
    switch (classify(r, events)) {
    case outcome::done:
      done += static_cast<size_t>(r);
      break;
    case outcome::again:
      if (!wait(events, deadline)) {
        failure_ = "it stalled";
        return false;
      }
      break;
    case outcome::ended:
      return false;
    }
  }
  return true;
}

bool tls_stream::read_exact(uint8_t* p, size_t n, clock::time_point deadline) {
  return move_all(
      [&](size_t at, size_t count) { return SSL_read(ssl_, p + at, static_cast<int>(count)); }, n,
      deadline);
}

bool tls_stream::write_all(const uint8_t* p, size_t n, clock::time_point deadline) {
  return move_all(
      [&](size_t at, size_t count) { return SSL_write(ssl_, p + at, static_cast<int>(count)); }, n,
      deadline);
}

std::string tls_stream::failure(const std::string& otherwise) const {
  return failure_.empty() ? otherwise : failure_;
}

void tls_stream::splice(int plain) {
  splice_until_end(plain);
  SSL_shutdown(ssl_); // one try at a close_notify; the socket closes either way
}

void tls_stream::splice_until_end(int plain) {
  set_non_blocking(plain);
  // `out` holds what CAF gave until SSL_write takes all of it (a retried SSL_write must get
  // the same bytes); `in` what SSL_read gave until CAF's socket took it.
  std::vector<uint8_t> out(chunk_bytes), in(chunk_bytes);
  size_t out_size = 0, in_size = 0, in_sent = 0;
  short write_wants = 0, read_wants = 0;
  bool hung_up = false;
  while (true) {
    bool progress = false;
    if (out_size == 0) {
      const auto got = ::recv(plain, out.data(), out.size(), 0);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
        return;
      if (got > 0) {
        out_size = static_cast<size_t>(got);
        progress = true;
      }
    }
    write_wants = 0;
    if (out_size > 0) {
      const int r = SSL_write(ssl_, out.data(), static_cast<int>(out_size));
      const auto o = classify(r, write_wants);
      if (o == outcome::ended)
        return;
      if (o == outcome::done) {
        out_size = 0; // without partial writes, SSL_write takes all or nothing
        progress = true;
      }
    }
    read_wants = 0;
    if (in_size == in_sent) {
      const int r = SSL_read(ssl_, in.data(), static_cast<int>(in.size()));
      const auto o = classify(r, read_wants);
      if (o == outcome::ended)
        return;
      if (o == outcome::done) {
        in_size = static_cast<size_t>(r);
        in_sent = 0;
        progress = true;
      }
    }
    if (in_sent < in_size) {
      const auto put = ::send(plain, in.data() + in_sent, in_size - in_sent, MSG_NOSIGNAL);
      if (put < 0 && errno != EAGAIN && errno != EINTR)
        return;
      if (put > 0) {
        in_sent += static_cast<size_t>(put);
        progress = true;
      }
    }
    if (progress) {
      hung_up = false;
      continue;
    }
    if (hung_up) // an error or hang-up reported, and nothing moved since: the end
      return;
    std::array<pollfd, 2> fds{
        pollfd{plain,
               static_cast<short>((out_size == 0 ? POLLIN : 0) | (in_sent < in_size ? POLLOUT : 0)),
               0},
        pollfd{fd_, static_cast<short>(write_wants | read_wants), 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      return;
    for (const auto& f : fds)
      if (f.revents & (POLLERR | POLLHUP | POLLNVAL))
        hung_up = true;
  }
}

} // namespace deepcee::transport
